"""Record a stdio MCP server by standing in for it: `mcptape record -o tape -- CMD ARGS`.

The client launches us instead of the server; we launch the server and relay its stdin, stdout and stderr
byte for byte, each chunk forwarded as soon as it is read (no added buffering: a partial line goes straight
through). Recording is off that path, in a process of its own (the tape writer, forked before the server starts):
a chunk is handed to it as it was read (with the time) and goes on; only there is it cut into lines, parsed,
redacted and written. A thread would share the interpreter's lock with the relay, and each message it parses would
then stand between a read and its write: the relay ran at half a direct pipe's speed so. The hand-over
(capture/handover.py) is framed in one pipe for all three streams, written before forwarding, so the tape stays
causal: the peer cannot answer a line before it is on its way to the tape; bulk data where no edit can fire goes
on by zero copy (tee and splice). We write nothing of our own to stdout, forward signals, and exit as the server
did (after the tape writer finished).

A line is gathered as a list of its parts (capture/bounded.py), so time stays linear in its length; one longer
than a reader takes whole is recorded cut (its first bytes, size and SHA-256), never held whole, and always
relayed whole.

Threads, not asyncio: three blocking pipes and a child process are what threads are simplest at, and this path
must start fast (it imports neither mitmproxy nor asyncio machinery).
"""

from __future__ import annotations

import functools
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from .. import TOOL
from ..redact.redactor import Redactor
from ..tape import json_form, records
from ..tape.file import Writer
from ..wire import jsonrpc
from .bounded import Bounded, body_limit
from .handover import Handover, widen, write_all

_STDERR = "stderr"  # the tape writer's name for the server's stderr, beside records.C2S and records.S2C
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_CHUNK = 65536
_PIPES = (records.C2S, records.S2C, _STDERR)  # what the tape writer is handed (capture/handover.py): a pipe's bytes,
_RECORD = len(_PIPES)  # or a record made here (pickled)
_NICE = 10  # the tape can wait; the relay cannot: on a busy machine the writer gets what the relay leaves
_BACKLOG = 32  # batches of the hand-over (about 1 MB each) the tape writer may hold while it writes


class StdioRecorder:
    def __init__(self, argv: list[str], writer: Writer, editor=None, redactor: Redactor | None = None) -> None:
        self.argv = argv
        self.writer = writer
        self.redactor = redactor or Redactor()
        # The hand-over to the tape writer (run() forks it): its lock is held only to read the time and write one
        # frame, so frames go in the order their times say.
        self._handover: Handover | None = None
        self._tape_lock = threading.Lock()
        self._tape_writer = 0
        # Live edits (edits.Editor): the plans for requests in flight, by id; the server's answers are then relayed
        # line by line (a line an edit may drop or change cannot go out half), under a lock (delayed lines are
        # written by timers).
        self.editor = editor
        self._plans: dict = {}
        self._out_lock = threading.Lock()
        self._timers: list[threading.Timer] = []
        self._proc: subprocess.Popen | None = None
        self.limit = body_limit()

    def record(self, make: Callable[[float], records.Record]) -> None:
        """Record now: `make` is called at once (it may read what its caller changes next)."""
        with self._tape_lock:
            t = time.time()
            try:
                made = pickle.dumps(make(t), pickle.HIGHEST_PROTOCOL)
            except Exception as e:
                write_all(2, f"mcptape: recording failed ({type(e).__name__}: {e}); the server keeps running\n"
                          .encode())
                return
            self._handover.send(_RECORD, t, made)

    def queue(self, pipe: str, chunk: bytes) -> None:
        """Record what was read from a pipe (b"": it ended), before it goes on."""
        with self._tape_lock:
            self._handover.send(_PIPES.index(pipe), time.time(), chunk)

    def _start_tape_writer(self) -> None:
        """Fork the process that writes the tape, before the server starts (so it holds none of the server's
        pipes). It lives until the hand-over ends (run's end, or ours), whatever signal the client sends us."""
        # Zero copy where no edit can change what goes on: the client's lines with no editor, the server's
        # without one (its stdout is read line by line for edits, _pump_edited).
        spliced = () if self.editor is not None else (_PIPES.index(records.C2S), _PIPES.index(records.S2C))
        self._handover = Handover(spliced)
        pid = os.fork()
        if pid:
            self._handover.sender()
            self._tape_writer = pid
            return
        code = 1
        try:
            self._handover.receiver()
            for sig in FORWARDED:
                signal.signal(sig, signal.SIG_IGN)
            os.nice(_NICE)
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)  # the client's stdout is the server's alone, and its end is not ours to hold
            _TapeWriter(self.writer, self.redactor, self.limit).run(self._handover)
            code = 0
        finally:
            os._exit(code)  # never the parent's exit path (it closes the tape)

    def _end_tape_writer(self) -> None:
        if self._tape_writer:
            with self._tape_lock:
                self._handover.close()
            os.waitpid(self._tape_writer, 0)
            self._tape_writer = 0

    def run(self) -> int:
        """Run the server to its end. Returns its exit code, or minus the signal that ended it."""
        self._start_tape_writer()
        try:
            return self._run()
        finally:
            self._end_tape_writer()

    def _run(self) -> int:
        self.record(lambda t: records.capture_start(t, TOOL, {"stdio": self.argv, "cwd": os.getcwd()},
                                                   self.redactor.describe()))
        try:
            proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    bufsize=0, process_group=0)
        except OSError as e:
            code = 127 if isinstance(e, FileNotFoundError) else 126
            message = f"cannot start {self.argv[0]}: {e.strerror}"
            self.record(lambda t: records.stdio_exit(t, code, error=message))
            self.record(lambda t: records.capture_stop(t, "server did not start"))
            raise StartError(message, code) from None

        self._proc = proc  # a live edit may end it (refuse-discover answer=exit)
        widen(proc.stdout.fileno())
        previous = {sig: signal.signal(sig, lambda s, _f: _forward(proc, s)) for sig in FORWARDED}
        answers = self._pump if self.editor is None else self._pump_edited
        pumps = [
            _start(self._pump, sys.stdin.buffer.fileno(), proc.stdin.fileno(), records.C2S, proc.stdin.close),
            _start(answers, proc.stdout.fileno(), sys.stdout.buffer.fileno(), records.S2C, None),
            _start(self._pump_stderr, proc.stderr.fileno()),
        ]
        try:
            returncode = proc.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        for pump in pumps[1:]:
            pump.join(timeout=5)  # a grandchild may hold the pipes open; do not wait for it forever
        for timer in self._timers:
            timer.join()  # a delayed answer still goes out
        if not pumps[1].is_alive():  # all the server said went on: the client sees its end now, not once it is taped
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
        name = signal.Signals(-returncode).name if returncode < 0 else None
        self.record(lambda t: records.stdio_exit(t, returncode if returncode >= 0 else None, name))
        self.record(lambda t: records.capture_stop(t, "server exited"))
        return returncode

    def _pump(self, src: int, dst: int, direction: str, at_eof: Callable[[], None] | None) -> None:
        """Hand each chunk to the tape writer, then forward it (see the module's doc). With live edits, each
        request is planned before it goes on, so its answer finds the plan. A dead reader does not stop the
        recording."""
        planned = Bounded(self.limit) if self.editor is not None and direction == records.C2S else None
        dst_alive = True
        # With live edits the client's lines go on whole, so one an edit answers in the server's place is kept back
        # (refuse-discover); a line too long to hold whole is relayed as it comes, unedited.
        passing = False
        while chunk := _read(src):
            self.queue(direction, chunk)
            out = chunk
            if planned is not None:
                out = b""
                for part, ended in _lines(chunk):
                    if passing or planned.size + len(part) > planned.limit:
                        out += part if passing else planned.whole() + part
                        passing = True
                    planned.add(part)
                    if ended:
                        if passing:
                            out += b"\n"
                        elif not self._answered_here(planned.whole()):
                            out += planned.whole() + b"\n"
                        planned.clear()
                        passing = False
            if dst_alive and out:
                dst_alive = write_all(dst, out)
            # A full read: bulk, which goes on by zero copy where it can until it thins out (capture/handover.py)
            if planned is None and len(chunk) == _CHUNK and self._handover.relay(src, dst, _PIPES.index(direction),
                                                                                  self._tape_lock):
                break
        if planned is not None and planned.size and not passing and dst_alive:
            write_all(dst, planned.whole())  # the last bytes, with no newline after them
        self.queue(direction, b"")
        self.record(lambda t: records.stdio_eof(t, direction))  # who left, and when: nothing sent after is theirs
        if at_eof is not None:
            try:
                at_eof()  # the client closed our stdin: close the server's, so it sees the end too
            except OSError:
                pass

    # -- live edits ----------------------------------------------------------------------------------------------

    def _answered_here(self, line: bytes) -> bool:
        """Plan the edits for a client line; True when the server must not see it: refuse-discover plays an older
        server, which never understood the probe (a 2026-aware server that saw it would stay in that era)."""
        from .. import edits

        msg = jsonrpc.parse(line).msg
        if not isinstance(msg, dict):
            return False
        plan = self.editor.plan(time.time(), msg)
        if any(e.action == "refuse-discover" for e in plan.fired) and jsonrpc.kind(msg) == "request":
            ours = edits.instead(plan)
            detail = ours.detail if ours is not None else "withheld the answer to the probe"
            self.record(lambda t: records.edit(t, plan.texts, detail, request_id=msg.get("id")))
            if isinstance(ours, edits.Exit):  # as some servers do on the probe: the process is gone
                _forward(self._proc, signal.SIGTERM)
            elif ours is not None:
                self._send(sys.stdout.buffer.fileno(), ours.body, _injected_line)
            return True
        if plan and jsonrpc.kind(msg) == "request":
            self._plans[jsonrpc.id_key(msg.get("id"))] = plan
        return False

    def _pump_edited(self, src: int, dst: int, direction: str, at_eof: None) -> None:
        """The server's stdout, line by line: a final response an edit selected goes out changed (or not at all,
        or later); everything else as it came."""
        from .. import edits

        held: list[bytes] = []  # the line so far, while it may still be held whole to be edited
        size = 0
        passing: Bounded | None = None  # a line too long to hold: relayed as it comes, unedited, recorded cut
        for part, ended in (item for chunk in iter(lambda: _read(src), b"") for item in _lines(chunk)):
            if passing is None:
                held.append(part)
                size += len(part)
                if not ended and size > self.limit:
                    passing = Bounded(self.limit)
                    part, held, size = b"".join(held), [], 0
            if passing is not None:
                passing.add(part)
                with self._out_lock:
                    write_all(dst, part + b"\n" if ended else part)
                if ended:
                    self.record(lambda t: _line(t, direction, passing))
                    passing = None
                continue
            if not ended:
                continue
            line, held, size = b"".join(held), [], 0
            msg = jsonrpc.parse(line).msg
            key = jsonrpc.id_key(msg.get("id")) if jsonrpc.kind(msg) in ("response", "error") else None
            plan = self._plans.pop(key, None) if key is not None else None
            if plan is None:
                self._send(dst, line, records.stdio_line)
                continue
            request_id = msg.get("id")
            change = edits.edit_events([{"msg": msg}], plan, request_id, "")
            self.record(lambda t: records.edit(t, plan.texts, change.detail, None, change.withheld or None,
                                               request_id))
            out = [json_form.dumps(e["msg"]).encode() if "msg" in e else e["data"].encode()
                   for e in change.events]
            if hold := edits.hold(plan):
                self.record(lambda t: records.edit(t, plan.texts, hold.detail, request_id=request_id))
                timer = threading.Timer(hold.seconds, self._send_all, (dst, out))
                timer.daemon = True
                timer.start()
                self._timers.append(timer)
            else:
                self._send_all(dst, out)
        if passing is not None:
            self.record(lambda t: _line(t, direction, passing, partial=True))
        elif held and (pending := b"".join(held)):
            self._send(dst, pending, functools.partial(records.stdio_line, partial=True), b"")
        self.record(lambda t: records.stdio_eof(t, direction))

    def _send_all(self, dst: int, lines: list[bytes]) -> None:
        for line in lines:
            self._send(dst, line, _injected_line)

    def _send(self, dst: int, line: bytes, make: Callable, end: bytes = b"\n") -> None:
        with self._out_lock:
            self.record(lambda t: make(t, records.S2C, line))
            write_all(dst, line + end)

    def _pump_stderr(self, src: int) -> None:
        while chunk := _read(src):
            self.queue(_STDERR, chunk)
            write_all(2, chunk)
        self.queue(_STDERR, b"")


class _TapeWriter:
    """The tape writer's side of the hand-over (in its own process): the frames as they come, each pipe's chunks cut
    into lines, every record redacted, and all that one read brought written at once."""

    def __init__(self, writer: Writer, redactor: Redactor, limit: int) -> None:
        self.writer, self.redactor, self.limit = writer, redactor, limit
        self._lines = [Bounded(limit) for _ in _PIPES]  # each pipe's line so far
        self.failure: str | None = None

    def run(self, handover: Handover) -> None:
        """Write what comes until the hand-over ends. A thread of its own reads it ahead (up to _BACKLOG batches),
        so the relay does not wait on a line being hashed or a slow disk until that much is behind."""
        batches: queue.Queue[list] = queue.Queue(_BACKLOG)
        threading.Thread(target=handover.read_ahead, args=(batches,), daemon=True).start()
        while batch := batches.get():
            made: list[records.Record] = []
            for what, t, item in batch:
                if self.failure is None:
                    try:
                        if what == _RECORD:
                            made.append(pickle.loads(item))
                        else:
                            self._cut(t, what, item, made)
                    except Exception as e:
                        self._stop(e)
            self._write(made)

    def _write(self, made: list[records.Record]) -> None:
        if self.failure is None and made:
            try:
                self.writer.write_many([self.redactor.record(record) for record in made])
            except Exception as e:
                self._stop(e)

    def _cut(self, t: float, what: int, chunk: bytes, made: list[records.Record]) -> None:
        """The records of the lines a chunk ends; at the pipe's end (b""), of a last line without its newline."""
        line, pipe = self._lines[what], _PIPES[what]
        if not chunk:
            if line.size:
                made.append(_line(t, pipe, line, partial=True))
                line.clear()
            return
        if not line.size and chunk.endswith(b"\n") and len(chunk) <= self.limit:  # whole lines, none to cut
            made.extend(_whole_line(t, pipe, data) for data in chunk[:-1].split(b"\n"))
            return
        for part, ended in _lines(chunk):
            line.add(part)
            if ended:
                made.append(_line(t, pipe, line))
                line.clear()

    def _stop(self, e: Exception) -> None:
        # A full disk must not break the client's server: say so once, keep relaying (the hand-over is still read).
        if self.failure is None:
            self.failure = f"{type(e).__name__}: {e}"
            write_all(2, f"mcptape: recording stopped ({self.failure}); the server keeps running\n".encode())


class StartError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _lines(chunk: bytes):
    """(part, whether a newline ended it) for each line a chunk holds or goes on."""
    start = 0
    while (end := chunk.find(b"\n", start)) >= 0:
        yield chunk[start:end], True
        start = end + 1
    if start < len(chunk):
        yield chunk[start:], False


def _line(t: float, pipe: str, line: Bounded, partial: bool = False) -> records.Record:
    """The record of a line (of stderr: without `partial`, whose end says nothing of the protocol)."""
    if pipe == _STDERR and line.cut:
        return records.stdio_stderr(t, b"", line.fields())
    if line.cut:
        return records.stdio_line(t, pipe, b"", partial, line.fields())
    return _whole_line(t, pipe, line.whole(), partial)


def _whole_line(t: float, pipe: str, data: bytes, partial: bool = False) -> records.Record:
    return records.stdio_stderr(t, data) if pipe == _STDERR else records.stdio_line(t, pipe, data, partial)


def _injected_line(t: float, direction: str, line: bytes) -> records.Record:
    return {**records.stdio_line(t, direction, line), "injected": True}


def _start(target: Callable, *args: object) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def _read(fd: int, size: int = _CHUNK) -> bytes:
    try:
        return os.read(fd, size)
    except OSError:
        return b""


def _forward(proc: subprocess.Popen, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        pass
