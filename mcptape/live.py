"""The live view of `mcptape record` over HTTP: one line per call as it is answered (or refused), on stderr.

    07:24:01  #16  1a3084d6  → tools/call add               200  result                      3 ms
    07:24:02  #41  1a3084d6  → tools/call add               404  error -32600 Session not found  2 ms  [edit: …]

The recorder hands every record it has written to `LiveView.write`; the records go through the analysis model on
a thread of their own, so the proxy never waits for the view (it only puts a record on a queue), and the calls are
named, paired and timed exactly as `show` and `check` do.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .facts import Outcome, SessionTransition
from .model import OPENED, Call, Model, Observer, Seen
from .show import ERROR, INJECTED, WARNING, paint
from .tape import records
from .tape.records import Record
from .wire import jsonrpc

_DONE = object()


class LiveView(Observer):
    def __init__(self, echo: Callable[[str], None], colour: bool = False, first_seq: int = 0) -> None:
        """echo: prints one line; first_seq: the number of the first record this run writes (an appended tape
        already holds some)."""
        self.echo, self.colour, self.first_seq = echo, colour, first_seq
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._edits: dict[Any, list[str]] = {}  # exchange -> the edits that fired on it
        self._said: set[int] = set()  # exchanges whose refusal was printed when it came (no JSON-RPC answer)
        self._now = 0.0  # the time of the record the model read last
        self._thread = threading.Thread(target=self._run, name="mcptape-live-view", daemon=True)
        self._thread.start()

    # -- the recorder's side ------------------------------------------------------------------------------------

    def write(self, record: Record) -> None:
        self._queue.put(record)

    def close(self) -> None:
        """After the recording: the calls never answered are said, then the view ends."""
        self._queue.put(_DONE)
        self._thread.join(10)

    # -- the view's thread --------------------------------------------------------------------------------------

    def _records(self) -> Iterator[Record]:
        while (record := self._queue.get()) is not _DONE:
            yield record

    def _run(self) -> None:
        model = Model([self])
        for _ in model.feed_tape("live", self._records()):
            pass
        for _ in model.finish():
            pass

    # -- what the model settles ---------------------------------------------------------------------------------

    def record(self, seen: Seen, model: Model) -> None:
        r, ex = seen.record, seen.exchange
        self._now = seen.t
        if seen.kind == records.EDIT and ex is not None:
            self._edits.setdefault(ex.number, []).extend(r.get("edits") or [])
        elif seen.kind == records.HTTP_RESPONSE and ex is not None and (ex.status or 0) >= 400 and "msg" not in r:
            # refused without a JSON-RPC answer: its calls stay open in the model, but the client has its answer
            self._said.add(ex.number)
            edits = self._edits.pop(ex.number, []) or bool(r.get("injected"))
            for msg in jsonrpc.messages(ex.msg) if ex.msg is not None else ():
                if jsonrpc.kind(msg) == "request":
                    self._line(ex.t, ex.seq, seen.session.short if seen.session else "", records.C2S, msg,
                               f"{ex.status}", r.get("reason") or "refused", seen.t - ex.t, ERROR, edits)
        for fact in seen.notes:
            if isinstance(fact, SessionTransition) and fact.step.kind != OPENED:
                session, step = fact.session, fact.step
                status = f" ({step.status})" if step.status is not None else ""
                self.echo(paint(f"{_clock(seen.t)}  #{self.first_seq + seen.seq:<5} -- session {session.short} "
                                f"{step.kind}{status}{' by an edit' if step.injected else ''}",
                                INJECTED if step.injected else WARNING, self.colour))

    def call(self, call: Call, model: Model) -> None:
        ex = call.exchange
        ended = call.outcome
        if ex is not None and ex.number in self._said and not ended.answered:
            return
        status = str(ex.status) if ex is not None and ex.status is not None else ""
        if ended.answered:
            error = call.response.get("error")
            outcome = ("result" if ended is not Outcome.ERROR else
                       f"error {error.get('code')} {error.get('message')}" if isinstance(error, dict) else "error")
            # a call settles on the record that answered it: the one the view saw last
            took, tone = self._now - call.t, ERROR if ended is Outcome.ERROR else None
        else:
            outcome = "cancelled, no answer" if ended is Outcome.CANCELLED else "no answer when the recording stopped"
            took, tone = None, WARNING
        if call.progress:
            outcome += f"  ({len(call.progress)} progress)"
        edits = self._edits.pop(ex.number, []) if ex is not None else []
        self._line(call.t, call.seq, call.session.short, call.dir, call.request or {"method": call.method},
                   status, outcome, took, tone, edits or call.injected)

    def _line(self, t: float, seq: int, session: str, direction: str, request: dict, status: str, outcome: str,
              took: float | None, tone: str | None, edits: list[str] | bool) -> None:
        arrow = "→" if direction == records.C2S else "←"
        what = f"{request.get('method')}{jsonrpc.detail(request)}" if isinstance(request, dict) else "?"
        duration = f"{took * 1000:7.0f} ms" if took is not None else " " * 10
        injected = (f"  [edit: {'; '.join(edits)}]" if isinstance(edits, list) and edits else
                    "  [injected]" if edits else "")
        # paint makes the text from the peers safe (terminal.py); a line coloured whole is painted once, else only
        # its arrow is, so no text is painted twice
        head = f"{_clock(t)}  #{self.first_seq + seq:<5} {session:<8}  "
        tail = f" {what:<28}  {status:>3}  {outcome:<28}  {duration}"
        line = (paint(head + arrow + tail, tone, self.colour) if tone else
                paint(head, None, False) + paint(arrow, direction, self.colour) + paint(tail, None, False))
        self.echo(line + paint(injected, INJECTED, self.colour))


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t % 1 * 1000):03d}"
