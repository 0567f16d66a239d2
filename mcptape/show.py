"""`mcptape show`: a tape as a timeline, one line per message (record number, time, direction, session, exchange,
what), the records a selection picks, or one record whole.

Everything is read through the analysis model, one pass, so sessions are named the way check names them and a
tape that is still being written (`--follow`) reads the same as a finished one.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any


from . import terminal
from .facts import SessionTransition
from .model import OPENED, Model, Observer, Seen, Session
from .tape import json_form, records
from .tape.records import Record
from .wire import http, jsonrpc

ARROW = {records.C2S: "→", records.S2C: "←"}
HEADING = f"{'rec':>5}  {'time':>9}  {'':1}  {'session':<8}  {'ex':>4}  what"
_SSE_ID = 12  # an SSE id longer than this is shortened in the timeline (resumable servers use long ones)

# Tones a line is painted in on a terminal: what went wrong, what looks wrong, what mcptape made up, who spoke.
ERROR, WARNING, INJECTED = "error", "warning", "injected"
_TONES = {ERROR: {"fg": "red", "bold": True}, WARNING: {"fg": "yellow"}, INJECTED: {"fg": "magenta"},
          records.C2S: {"fg": "cyan"}, records.S2C: {"fg": "green"}, "dim": {"dim": True}}
_INJECTED = "  [injected]"
_FAILED_ENDS = (records.UPSTREAM_RESET, records.UPSTREAM_UNREACHABLE, records.PROXY_ERROR)


def paint(text: str, tone: str | None, colour: bool) -> str:
    """Text from a tape made safe for a terminal (terminal.py), coloured in its tone when asked."""
    return terminal.paint(text, _TONES.get(tone) if tone else None, colour)


# -- what a record is, as the model sees it -----------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    """A record with what the model knows of it and the methods it concerns (for --method)."""

    seen: Seen
    methods: frozenset[str]
    start: float | None  # the time of the tape's first record: the timeline's clock runs from it
    answered: bool = False  # an exchange's end, after the answer to the request it carried: a hang-up is normal

    @property
    def seq(self) -> int:
        return self.seen.seq

    @property
    def record(self) -> Record:
        return self.seen.record

    @property
    def session(self) -> Session | None:
        """Its session; for a request that opened one (initialize), known once the answer came."""
        ex = self.seen.exchange
        return self.seen.session or (ex.session if ex is not None else None)


class _Rows(Observer):
    def __init__(self, methods: bool) -> None:
        self.start: float | None = None
        self.methods = methods  # work out the methods each record concerns (only --method needs them)
        self._asked: dict[tuple, str] = {}  # requests not answered yet -> their method, to name their answers
        self._carried: dict[Any, str] = {}  # open HTTP exchange -> the method of the request it carried
        self._answered: set[int] = set()  # open HTTP exchanges whose request got its final response

    def record(self, seen: Seen, model: Model) -> list[Row]:
        record = seen.record
        t = record.get("t")
        if self.start is None and isinstance(t, (int, float)):
            self.start = t
        ex = seen.exchange
        if ex is not None and isinstance(ex.msg, dict) and "id" in ex.msg and isinstance(record.get("msg"), dict) \
                and record["msg"].get("id") == ex.msg["id"] and "method" not in record["msg"]:
            self._answered.add(ex.number)
        answered = ex is not None and record.get("kind") == records.END and ex.number in self._answered
        if answered:
            self._answered.discard(ex.number)
        return [Row(seen, self._methods(seen) if self.methods else frozenset(), self.start, answered)]

    def _methods(self, seen: Seen) -> frozenset[str]:
        record, ex, session = seen.record, seen.exchange, seen.session
        found: set[str] = set()
        if ex is not None:
            found.add(ex.method)  # GET, POST, DELETE
            # every record of an exchange concerns the request it carried (the model forgets it at the end)
            if isinstance(ex.msg, dict) and isinstance(ex.msg.get("method"), str):
                self._carried[ex.number] = ex.msg["method"]
            carried = (self._carried.pop if record.get("kind") == records.END else self._carried.get)(ex.number, None)
            if carried is not None:
                found.add(carried)
        if "msg" not in record:
            return frozenset(found)
        direction = record.get("dir") or (records.C2S if record.get("kind") == records.HTTP_REQUEST else records.S2C)
        for msg in jsonrpc.messages(record["msg"]):
            if not isinstance(msg, dict):
                continue
            method = msg.get("method")
            if isinstance(method, str):
                found.add(method)
                if "id" in msg:
                    self._asked[(id(session), direction, jsonrpc.id_key(msg["id"]))] = method
            elif "id" in msg:
                asked = records.C2S if direction == records.S2C else records.S2C
                method = self._asked.pop((id(session), asked, jsonrpc.id_key(msg.get("id"))), None)
                if method is not None:
                    found.add(method)
        return frozenset(found)


def rows(name: str, items: Iterable[Record], methods: bool = False) -> Iterator[Row]:
    """Every record of a tape with the model's view of it, in order; with the methods it concerns if asked."""
    yield from Model([_Rows(methods)]).feed_tape(name, items)


# -- a selection: the filters of `show` -------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """Which records to show. Each filter given must match (AND); a filter given several times matches any of its
    values (OR)."""

    sessions: tuple[str, ...] = ()  # a session id, or its start as the timeline shows it
    methods: tuple[str, ...] = ()  # a JSON-RPC or HTTP method; shell wildcards (tools/*)
    exchanges: tuple[int, ...] = ()
    statuses: tuple[str, ...] = ()  # 404, 4xx
    grep: re.Pattern | None = None
    around: tuple[int, int] | None = None  # first and last record number

    def __bool__(self) -> bool:
        return bool(self.sessions or self.methods or self.exchanges or self.statuses or self.grep or self.around)

    def _waits(self, row: Row) -> bool:
        """An HTTP request is judged by what its exchange turns out to be (its status, the session its answer
        opened): it waits for the answer."""
        return row.record.get("kind") == records.HTTP_REQUEST and bool(
            self.statuses or (self.sessions and row.session is None))

    def matches(self, row: Row) -> bool:
        record = row.record
        if self.around and not self.around[0] <= row.seq <= self.around[1]:
            return False
        if self.exchanges and record.get("exchange") not in self.exchanges:
            return False
        if self.sessions:
            session = row.session
            names = (session.label, session.short) if session is not None else ()
            if not any(name.startswith(s) for name in names for s in self.sessions):
                return False
        if self.methods and not any(fnmatchcase(m, pattern) for m in row.methods for pattern in self.methods):
            return False
        if self.statuses:
            ex = row.seen.exchange
            status = str(ex.status) if ex is not None and ex.status is not None else ""
            if not any(_status_matches(status, pattern) for pattern in self.statuses):
                return False
        return self.grep is None or self.grep.search(grep_text(record)) is not None

    def select(self, items: Iterable[Row]) -> Iterator[Row]:
        """The rows that match, in tape order; a request that waits for its answer comes just before it."""
        held: dict[Any, list[Row]] = {}
        last = self.around[1] if self.around else None
        for row in items:
            if last is not None and row.seq > last and not held:
                return
            record = row.record
            if self._waits(row):
                held.setdefault(record.get("exchange"), []).append(row)
                continue
            if held and record.get("kind") in (records.HTTP_RESPONSE, records.END):
                yield from filter(self.matches, held.pop(record.get("exchange"), ()))
            if self.matches(row):
                yield row


def _status_matches(status: str, pattern: str) -> bool:
    return len(status) == len(pattern) and all(p in ("x", s) for p, s in zip(pattern, status))


def parse_status(value: str) -> str:
    """`404`, `4xx`, `40x`; raises ValueError with the reason."""
    pattern = value.lower()
    if not re.fullmatch(r"[1-5x][0-9x]{2}", pattern):
        raise ValueError(f"--status {value!r}: expected an HTTP status such as 404, or a class such as 4xx")
    return pattern


def parse_around(value: str) -> tuple[int, int]:
    """`RECORD[:N]`: N records either side (5 when N is not given); raises ValueError with the reason."""
    found = re.fullmatch(r"(\d+)(?::(\d+))?", value.strip())
    if not found:
        raise ValueError(f"--around {value!r}: expected RECORD or RECORD:N (N records either side), e.g. 26:3")
    center, n = int(found.group(1)), int(found.group(2) or 5)
    return max(0, center - n), center + n


def grep_text(record: Record) -> str:
    """What --grep searches: the record as one line of JSON (as `--format jsonl` prints it), a body that is not
    JSON as its text rather than base64."""
    raw = record.get("raw")
    if isinstance(raw, bytes):
        record = {**record, "raw": raw.decode("utf-8", "replace")}
    return json_form.dumps(record)


# -- the timeline -------------------------------------------------------------------------------------------------


def timeline(name: str, items: Iterable[Record], selection: Selection = Selection(), colour: bool = False,
             heading: bool = True) -> Iterator[str]:
    """Lines for a tape (the records a selection picks), read through the analysis model."""
    if heading:
        yield paint(HEADING, "dim", colour)
    for row in selection.select(rows(name, items, bool(selection.methods))):
        yield from lines(row, colour)


def lines(row: Row, colour: bool = False) -> list[str]:
    """The timeline's lines for one record."""
    seen, record = row.seen, row.record
    described = _describe(record)
    if row.answered and record.get("reason") == records.CLIENT_DISCONNECTED:
        described = [(described[0][0] + " (after its answer)", None)]  # the client hung up once it had it
    ex = seen.exchange
    if (record.get("kind") == records.HTTP_RESPONSE and ex is not None and isinstance(ex.msg, dict)
            and ex.msg.get("method") == "server/discover" and (ex.status or 0) >= 400):
        _append(described, "  (era probe refused: a 2026-07-28 client falls back to initialize)")
    for fact in seen.notes:
        if isinstance(fact, SessionTransition):  # a step of a session's life (lifecycle.py): opened, refused, …
            changed, step = fact.session, fact.step
            status = f" {step.status}" if step.status is not None and step.kind != OPENED else ""
            by = " by an edit" if step.injected else ""
            _append(described, f"  [session {changed.short} {step.kind}{status}{by}]")
    t = record.get("t")
    clock = f"{t - row.start:9.3f}" if isinstance(t, (int, float)) and row.start is not None else " " * 9
    direction = record.get("dir")
    arrow = paint(ARROW.get(direction, " "), direction if direction in ARROW else None, colour)
    exchange = "" if record.get("exchange") is None else terminal.safe(str(record.get("exchange")))
    session = terminal.safe(seen.session.short) if seen.session is not None else ""
    injected = record.get("injected") or record.get("kind") == records.EDIT
    return [f"{row.seq:>5}  {clock}  {arrow}  {session:<8}  {exchange:>4}  "
            f"{paint(what, INJECTED if injected else tone, colour)}" for what, tone in described]


def describe(record: Record) -> list[str]:
    """What a record says, as the timeline's lines (the report quotes them)."""
    return [what for what, _ in _describe(record)]


def _append(described: list[tuple[str, str | None]], text: str) -> None:
    what, tone = described[-1]
    described[-1] = (what + text, tone)


def _describe(record: Record) -> list[tuple[str, str | None]]:
    """What a record says, as lines of the timeline, each with the tone it is painted in."""
    kind = record.get("kind")
    problem = f"  ! {record['problem']}" if record.get("problem") else ""
    if kind == records.HTTP_REQUEST:
        head = f"{record.get('method')} {record.get('path')}"
        if record.get("protocol_version"):
            head += f" [{record['protocol_version']}]"
        if last := http.get(record.get("headers") or [], http.LAST_EVENT_ID):
            head += f" Last-Event-ID: {_short(last, _SSE_ID)}"
        return _with_messages(head, record, problem)
    if kind == records.HTTP_RESPONSE:
        status = record.get("status")
        content_type = http.media_type(http.get(record.get("headers") or [], "content-type"))
        if content_type != http.SSE and "msg" not in record and "raw" not in record:
            content_type = "(no body)"
        head = f"{status} {content_type}"
        if "raw" in record and (status == 202 or not isinstance(status, int) or not 200 <= status < 300):
            # a body that need not be JSON-RPC (the legacy "Accepted", an error page): what it says, not a problem
            lines = [(f"{head}  {_short(_text(record['raw']))!r}{_INJECTED if record.get('injected') else ''}", None)]
        else:
            lines = _with_messages(head, record, problem)
        if isinstance(status, int) and status >= 400:
            lines = [(text, ERROR) for text, _ in lines]
        return lines
    if kind == records.SSE_EVENT:
        parts = ["sse"]
        if "id" in record:
            parts.append(f"id={_short(str(record['id']), _SSE_ID)}")
        if record.get("event") not in (None, "message"):
            parts.append(f"event={record['event']}")
        if "retry" in record:
            parts.append(f"retry={record['retry']}")
        if "msg" not in record:
            if record.get("data") == "":
                parts.append("(priming)")
            elif "data" in record:
                parts.append(f"data={_short(record['data'])}")
            elif "raw" in record:
                parts.append(f"{len(record['raw'])} raw bytes")
            for comment in record.get("comments", []):
                parts.append(f": {_short(comment)}")
        return _with_messages(" ".join(parts), record, problem)
    if kind == records.END:
        detail = f" ({record['detail']})" if record.get("detail") else ""
        reason = record.get("reason")
        return [(f"end {reason}{detail}", ERROR if reason in _FAILED_ENDS else
                 None if reason == records.COMPLETE else WARNING)]
    if kind == records.STDIO_LINE:
        return _with_messages("", record, problem)
    if kind == records.STDIO_STDERR:
        text = record["text"] if "text" in record else f"{len(record.get('raw', b''))} raw bytes"
        return [(f"stderr: {_short(text, 100)}{problem}", None)]
    if kind == records.STDIO_EOF:
        return [("stdin closed (the client left)" if record.get("dir") == records.C2S else
                 "stdout closed by the server", None)]
    if kind == records.STDIO_EXIT:
        if record.get("error"):
            return [(f"server did not start: {record['error']}", ERROR)]
        if record.get("signal"):
            return [(f"server killed by {record['signal']}", ERROR)]
        return [(f"server exited ({record.get('code')})", ERROR if record.get("code") else None)]
    if kind == records.CAPTURE_START:
        source = record.get("source") or {}
        if "stdio" in source:
            return [(f"-- recording started: {' '.join(source['stdio'])}", None)]
        if "imported" in source:
            return [(f"-- imported from {source['imported']} ({source.get('format')})", None)]
        if "replay" in source or "verify" in source:  # what a client did against a replay, what verify sent
            return [(f"-- replay of {source['replay']} started" if "replay" in source else
                     f"-- verify of {source['verify']} against {source.get('upstream')} started", None)]
        return [(f"-- recording started ({', '.join(source.get('modes', [])) or source.get('proxy', '')})", None)]
    if kind == records.EDIT:
        return [(f"edit {'; '.join(record.get('edits') or [])}: {record.get('detail')}", INJECTED)]
    if kind == records.CAPTURE_STOP:
        return [(f"-- recording stopped ({record.get('reason')})", None)]
    return [(f"{kind}{problem}", WARNING if problem else None)]


def _with_messages(head: str, record: Record, problem: str) -> list[tuple[str, str | None]]:
    sep = "  " if head else ""
    lines: list[tuple[str, str | None]]
    if "msg" in record and (msgs := jsonrpc.messages(record["msg"])):
        lines = [(f"{head if i == 0 else ' ' * len(head)}{sep}{jsonrpc.describe(m)}",
                  ERROR if jsonrpc.kind(m) == "error" else None) for i, m in enumerate(msgs)]
    elif "msg" in record:
        lines = [(f"{head}{sep}[] (an empty batch)", None)]
    elif "raw" in record and not head.startswith("sse"):
        lines = [(f"{head}{sep}{len(record['raw'])} bytes", None)]
    else:
        lines = [(head, None)]
    text, tone = lines[-1]
    if problem:
        text += problem
        tone = tone or (WARNING if problem.startswith("  !") else None)
    if record.get("injected"):
        text += _INJECTED
    lines[-1] = (text, tone)
    return lines


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").strip()


def _short(text: str, width: int = 60) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


# -- one record whole ---------------------------------------------------------------------------------------------

_DIRECTION = {records.C2S: "→ c2s (client to server)", records.S2C: "← s2c (server to client)"}


def whole(row: Row, colour: bool = False) -> list[str]:
    """One record in full: where it sits, every field, its headers, its message pretty-printed. Ids are not
    shortened here."""
    record = row.record
    out = [paint(f"record {row.seq}: {record.get('kind')}", ERROR if _describe(record)[-1][1] == ERROR else None,
                 colour)]

    def field(name: str, value: Any, tone: str | None = None) -> None:
        out.append(f"  {name:<16} {paint(str(value), tone, colour)}")

    t = record.get("t")
    if isinstance(t, (int, float)):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d} UTC"
        field("time", stamp + (f" (+{t - row.start:.3f}s)" if row.start is not None else ""))
    if record.get("dir") in _DIRECTION:
        field("direction", _DIRECTION[record["dir"]], record["dir"])
    if (session := row.session) is not None:
        field("session", f"{session.label} ({session.transport}{', ' + session.version if session.version else ''})")
    if record.get("exchange") is not None:
        field("exchange", record["exchange"])
    for name, value in record.items():
        if name in ("kind", "t", "dir", "session", "exchange", "headers", "msg", "raw") or value == []:
            continue
        text = value if isinstance(value, str) else json_form.dumps(value)
        field(name, text, INJECTED if name == "injected" else ERROR if name == "problem" else None)
    for fact in row.seen.notes:
        if isinstance(fact, SessionTransition):
            changed, step = fact.session, fact.step
            field("session", f"{changed.label} {step.kind}" + (f" {step.status}" if step.status is not None else "")
                  + (" by an edit" if step.injected else ""))
    if record.get("headers"):
        out.append("  headers:")
        out += [terminal.safe(f"    {name}: {value}") for name, value in record["headers"]]
    if "msg" in record:
        described = "; ".join(jsonrpc.describe(m) for m in jsonrpc.messages(record["msg"]))
        out.append(terminal.safe(f"  message: {described}"))
        out += map(terminal.safe_json, json_form.dumps(record["msg"], indent=2).splitlines())
    elif isinstance(record.get("raw"), bytes):
        out.append(f"  body ({len(record['raw'])} bytes, not JSON):")
        # split on newlines only (str.splitlines also splits at C1 and other breaks, which are shown escaped)
        out += map(terminal.safe, record["raw"].decode("utf-8", "backslashreplace").split("\n"))
    return out
