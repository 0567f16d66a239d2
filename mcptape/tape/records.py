"""The records a tape holds. Records are plain maps (what msgpack stores and JSON shows); this module is the one
place that says which kinds exist, and makes them; shapes.py says which fields each carries. docs/tape-format.md
mirrors both.

Every record has `kind` and `t` (seconds since the epoch, as the byte passed the recorder). A record's `seq` is its
position in the tape (0 = first record after the header); it is derived on reading, never stored.
"""


from __future__ import annotations

import functools
import math
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from ..wire import jsonrpc
from .codec import FORMAT, Record

if TYPE_CHECKING:  # (the fields of each kind: shapes.py, read at run time only by `problem`)
    from .shapes import (CaptureStart, CaptureStop, EditRecord, End, HeaderRecord, HttpRequest, HttpResponse, SseEvent,
                         StdioEof, StdioExit, StdioLine, StdioStderr)


# Final: the compiled core (docs/compiled.md) reads these as the strings they are, not as attributes looked up
# on this module at each use
HEADER: Final = "header"
CAPTURE_START: Final = "capture.start"  # a recording run began (a tape appended to has several)
CAPTURE_STOP: Final = "capture.stop"  # it ended cleanly
HTTP_REQUEST: Final = "http.request"  # request line, redacted headers, session, body
HTTP_RESPONSE: Final = "http.response"  # status, redacted headers, session; the body too unless it is an SSE stream
SSE_EVENT: Final = "sse.event"  # one SSE event of a streamed response, as it passed
END: Final = "end"  # how an exchange ended
STDIO_LINE: Final = "stdio.line"  # one line on the server's stdin (c2s) or stdout (s2c)
STDIO_STDERR: Final = "stdio.stderr"  # one line the server wrote to stderr (not protocol; kept as text)
STDIO_EXIT: Final = "stdio.exit"  # the server process ended: exit code or signal
# a stdio stream closed: the client closed the server's stdin (c2s), or the server its stdout
STDIO_EOF: Final = "stdio.eof"
EDIT: Final = "edit"  # an edit fired: what mcptape changed; the records it changed carry `injected`
KINDS = (HEADER, CAPTURE_START, CAPTURE_STOP, HTTP_REQUEST, HTTP_RESPONSE, SSE_EVENT, END, STDIO_LINE, STDIO_STDERR,
         STDIO_EXIT, STDIO_EOF, EDIT)

C2S: Final = "c2s"
S2C: Final = "s2c"


# A record's kind, asked of this module: an edge that holds a plain record the model did not read (one it has just
# made, a log it scans) tests it with these, and never reads the `kind` field itself.
def kind_of(record: Record) -> str | None:
    """The kind as written, for an edge that names it (a report's excerpt, a timeline's line)."""
    return record.get("kind")


def is_capture_start(record: Record) -> bool:
    return record.get("kind") == CAPTURE_START


def is_http_request(record: Record) -> bool:
    """An HTTP request: the record an exchange begins with."""
    return record.get("kind") == HTTP_REQUEST


def is_http_response(record: Record) -> bool:
    return record.get("kind") == HTTP_RESPONSE


def is_sse_event(record: Record) -> bool:
    return record.get("kind") == SSE_EVENT


def is_end(record: Record) -> bool:
    return record.get("kind") == END


def is_stdio_line(record: Record) -> bool:
    return record.get("kind") == STDIO_LINE

# How an exchange ended. "complete" is the only clean one; the others say who broke it off.
COMPLETE = "complete"
CLIENT_DISCONNECTED = "client-disconnected"
UPSTREAM_RESET = "upstream-reset"
UPSTREAM_UNREACHABLE = "upstream-unreachable"
PROXY_STOPPED = "proxy-stopped"
PROXY_ERROR = "proxy-error"
END_REASONS = (COMPLETE, CLIENT_DISCONNECTED, UPSTREAM_RESET, UPSTREAM_UNREACHABLE, PROXY_STOPPED, PROXY_ERROR)


DIRECTIONS = (C2S, S2C)
LAST_TIME = 32_503_680_000.0  # 3000-01-01: past it a time is not a time a recorder wrote (and gmtime overflows)
_PAIRS = ("query", "headers")


def problem(record: Any) -> str | None:
    """Why a record does not fit its kind (unknown kind, a field missing or of the wrong type), or None."""
    if not isinstance(record, dict):
        return f"a record must be an object, not {jsonrpc.type_name(record)}"
    from .shapes import fields

    kind, shapes = record.get("kind"), fields()
    if not isinstance(kind, str) or kind not in shapes:  # (a kind that is a map cannot be looked up)
        return f"unknown kind {_short(kind)} (kinds: {', '.join(shapes)})"
    required, admitted = shapes[kind]
    for name in sorted(required):
        if name not in record:
            return f"{kind} has no {name}"
    elsewhere = _fields_of_any_kind()
    for name, value in record.items():
        # a field this kind does not have, but another does, still holds what that field holds: readers take a
        # field by its name (a session, a status, a text) without asking the kind first
        wanted = admitted.get(name) if name in admitted else elsewhere.get(name)
        if not wanted:  # a field of another version, or one that may hold anything
            continue
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
            names = " or ".join(_TYPE_NAMES.get(w, w.__name__) for w in wanted if w is not Decimal)
            return f"{kind} field {name} must be {names}, not {jsonrpc.type_name(value)} ({_short(value)})"
    if "t" in record and not _a_time(record["t"]):
        return f"{kind} field t must be a time (seconds since 1970, before the year 3000), not {_short(record['t'])}"
    if "dir" in record and record["dir"] not in DIRECTIONS:
        return f"{kind} field dir must be c2s or s2c, not {_short(record['dir'])}"
    for name in _PAIRS:
        pairs = record.get(name) or []
        if not isinstance(pairs, (list, tuple)) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs):
            return f"{kind} field {name} must be a list of [name, value] pairs of strings"
    return None


@functools.cache
def _fields_of_any_kind() -> dict[str, tuple]:
    """field -> the classes any kind admits for it (a field admitted as anything by one kind left out, and the
    [name, value] pairs, which `problem` checks on every kind)."""
    from .shapes import fields

    union: dict[str, dict] = {}  # (a dict, not a set: the classes in the order the kinds name them, so the line
    anything: set[str] = set()   # that names them reads the same in every run)
    for _, admitted in fields().values():
        for name, wanted in admitted.items():
            (union.setdefault(name, {}).update(dict.fromkeys(wanted)) if wanted else anything.add(name))
    return {name: tuple(wanted) for name, wanted in union.items() if name not in anything and name not in _PAIRS}


def _a_time(t: Any) -> bool:
    """Whether a time (an int, float or Decimal, as the type check let through) is one a recorder could write: a
    float NaN fails both comparisons; a Decimal NaN, a 4,000-digit integer or 1e999999999 have no float to compare."""
    try:
        return 0 <= float(t) <= LAST_TIME
    except (OverflowError, ValueError):  # (ValueError: a signalling NaN)
        return False


def next_exchange(existing: list[Record]) -> int:
    """The exchange number a run appended to a tape starts at: past every one it holds, so two runs never share
    one."""
    return max((r["exchange"] for r in existing if isinstance(r.get("exchange"), int)), default=-1) + 1


def first_problem(paths: list[str]) -> str | None:
    """The first record of these tapes that does not fit its kind, as one line naming it; None when all fit.

    Commands do not check every record as they read (that would cost the hot loop a tenth of its speed); they rely
    on the fields' types, and when a stranger's tape breaks that trust (a TypeError where a string was promised),
    the command asks this to say which record is wrong instead of reporting an internal error."""
    from .file import Reader, TapeError

    for path in paths:
        try:
            reader = Reader(path)
            if (wrong := problem(reader.header) or _foreign(reader.header)) is not None:
                return f"{path}: its header does not fit the tape format: {wrong}"
            for seq, record in enumerate(reader):
                if (wrong := problem(record) or _foreign(record)) is not None:
                    return f"{path}#{seq}: the record does not fit the tape format: {wrong}"
        except TapeError:
            continue
    return None


def _foreign(record: Record) -> str | None:
    """What in a record's fields no JSON holds and no mcptape writes: a map key that is an array (the reader hands it
    out as a tuple: codec.py), a msgpack timestamp, a number JSON cannot write (NaN, infinity), bytes anywhere but
    in raw, and a raw that is not bytes. Walks the whole record: for first_problem only."""
    for name, field in record.items():
        if type(name) is tuple:
            return f"a field name that is an array ({_short(list(name))})"
        if name == "raw" or type(field) is bytes:  # raw holds bytes, and nothing else does: whatever the kind
            if name != "raw":
                return f"{record.get('kind')} field {name} holds bytes (JSON has none: only a raw field holds bytes)"
            if type(field) is not bytes:
                return f"{record.get('kind')} field raw must be bytes, not {jsonrpc.type_name(field)}"
        elif (wrong := _foreign_value(field)) is not None:
            return f"{record.get('kind')} field {name} holds {wrong}"
    return None


def _foreign_value(value: Any) -> str | None:
    stack: list[Any] = [value]
    while stack:
        value = stack.pop()
        if type(value) is dict:
            for key, item in value.items():
                if type(key) is tuple:
                    return f"a map key that is an array ({_short(list(key))})"
                stack.append(item)
        elif type(value) is list:
            stack.extend(value)
        elif type(value) is bytes:
            return "bytes (JSON has none: only a raw field holds bytes)"
        elif (isinstance(value, float) and not math.isfinite(value)) or (isinstance(value, Decimal) and
                                                                          not value.is_finite()):
            return f"a number JSON cannot write ({value})"
        elif not isinstance(value, (str, int, float, Decimal, type(None))):
            return f"a value of type {type(value).__name__} ({_short(value)})"
    return None


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "a boolean", list: "an array",
               dict: "an object", bytes: "bytes (raw_b64)", type(None): "null"}


def _short(value: Any) -> str:
    try:
        text = jsonrpc.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def is_traffic(record: Record) -> bool:
    """Whether a record is something a peer sent (an HTTP request, a stdio line), not the recorder's own."""
    return record.get("kind") in (HTTP_REQUEST, STDIO_LINE)


def header(t: float, tool: str, redaction: Record | None = None) -> HeaderRecord:
    record: Record = {"kind": HEADER, "format": FORMAT, "t": t, "tool": tool}
    if redaction is not None:
        record["redaction"] = redaction
    return record


def body(data: bytes, problem: str | None = None, parsed: jsonrpc.Body | None = None) -> Record:
    """The fields for a body or SSE data: `msg` when it is JSON (with `problem` when that JSON is not JSON-RPC),
    `raw` bytes when it is not JSON, nothing when it is empty. `problem` from the caller (say, an undecodable
    content-encoding) wins and keeps the bytes raw. `parsed`: `data` as jsonrpc.parse read it, if the caller did."""
    if problem:
        return {"raw": data, "problem": problem}
    if parsed is None:
        parsed = jsonrpc.parse(data)
    if parsed.is_json:
        fields: Record = {"msg": parsed.msg}
        if parsed.problem:
            fields["problem"] = parsed.problem
        return fields
    if parsed.problem:
        return {"raw": data, "problem": parsed.problem}
    return {"raw": data} if data else {}


def capture_start(t: float, tool: str, source: Record, redaction: Record) -> CaptureStart:
    return {"kind": CAPTURE_START, "t": t, "tool": tool, "source": source, "redaction": redaction}


def capture_stop(t: float, reason: str) -> CaptureStop:
    return {"kind": CAPTURE_STOP, "t": t, "reason": reason}


def http_request(
    t: float, exchange: int, conn: int, method: str, path: str, query: list, headers: list,
    session: str | None, protocol_version: str | None, mcp: bool, fields: Record,
) -> HttpRequest:
    return {
        "kind": HTTP_REQUEST, "t": t, "exchange": exchange, "conn": conn, "dir": C2S, "method": method,
        "path": path, "query": query, "headers": headers, "session": session,
        "protocol_version": protocol_version, "mcp": mcp, **fields,
    }


def http_response(
    t: float, exchange: int, status: int, reason: str, headers: list, session: str | None, fields: Record
) -> HttpResponse:
    return {
        "kind": HTTP_RESPONSE, "t": t, "exchange": exchange, "dir": S2C, "status": status, "reason": reason,
        "headers": headers, "session": session, **fields,
    }


def sse_event(t: float, exchange: int, event: Any) -> SseEvent:
    """`event` is a wire.sse.Event. Its data goes under `msg` when it is JSON, else stays as `data` text."""
    record: Record = {"kind": SSE_EVENT, "t": t, "exchange": exchange, "dir": S2C}
    for name in ("id", "event", "retry"):
        value = getattr(event, name)
        if value is not None:
            record[name] = value
    if event.comments:
        record["comments"] = event.comments
    if event.data is not None:
        parsed = jsonrpc.parse(event.data)
        if parsed.is_json:
            record["msg"] = parsed.msg
        else:
            record["data"] = event.data
        # only message events carry JSON-RPC; an `endpoint` event's URI (legacy SSE) is no problem
        carries_jsonrpc = event.event in (None, "message")
        problems = [*event.problems, *([parsed.problem] if parsed.problem and carries_jsonrpc else [])]
    else:
        problems = list(event.problems)
    if event.incomplete:
        problems.append("stream ended before this event's blank line")
    if problems:
        record["problem"] = "; ".join(problems)
    return record


def wire_event(record: Record) -> Any:
    """An sse.event record back as a wire.sse.Event, to send it again (replayed, or edited on its way)."""
    from ..wire import sse

    data = message_text(record["msg"]) if "msg" in record else record.get("data")
    return sse.Event(id=record.get("id"), event=record.get("event"), data=data, retry=record.get("retry"),
                     comments=list(record.get("comments", [])))


def message_text(msg: Any) -> str:
    """A recorded message as JSON text, to send it again. A stranger's tape may hold what JSON cannot write (a NaN,
    bytes): a JSON-RPC error with the message's id goes in its place, saying so, and the client gets an answer."""
    try:
        return jsonrpc.dumps(msg)
    except (TypeError, ValueError):
        id_ = msg.get("id") if isinstance(msg, dict) else None
        return jsonrpc.dumps({"jsonrpc": "2.0", "id": id_ if isinstance(id_, (str, int)) else None, "error": {
            "code": -32603, "message": "mcptape: the recorded answer cannot be written as JSON (it holds a NaN, an "
                                       "infinity or bytes)"}})


def sse_raw(t: float, exchange: int, raw: bytes, problem: str) -> SseEvent:
    """Stream bytes that could not be read as SSE (say, a broken content-encoding), kept as they passed."""
    return {"kind": SSE_EVENT, "t": t, "exchange": exchange, "dir": S2C, "raw": raw, "problem": problem}


def end(t: float, exchange: int, reason: str, detail: str | None = None) -> End:
    record: Record = {"kind": END, "t": t, "exchange": exchange, "reason": reason}
    if detail:
        record["detail"] = detail
    return record


CUT_KEEP = 64 << 10  # the first bytes kept of a body or line too large to keep whole
_BOUNDARIES = b' \t\n",:;=&{}[]<>'


def cut_body(first: bytes, size: int, sha256: str, limit: int) -> Record:
    """The fields for a body or line of `size` bytes, more than a reader takes whole (`limit`): its size, its
    SHA-256 and its first bytes. The first bytes end at a token boundary (a space, a quote, a comma…) so a secret
    cut in half, which redaction could no longer recognise, is dropped rather than kept; the record goes through
    the redactor like every other."""
    first = first[:CUT_KEEP]
    if len(first) < size:
        first = first[:max(first.rfind(bytes([b])) for b in _BOUNDARIES) + 1]
    return {"raw": first, "size": size, "sha256": sha256,
            "problem": f"{size:,} bytes, more than the {_megabytes(limit)} a reader takes whole: kept its first "
                       f"{len(first):,} bytes, its size and its SHA-256"}


def _megabytes(size: int) -> str:
    return f"{size / (1 << 20):g} MB"


def stdio_line(t: float, direction: str, line: bytes, partial: bool = False, cut: Record | None = None) -> StdioLine:
    """A line without its newline. `partial`: the stream ended before the newline came. `cut`: the fields of a line
    too long to keep whole (cut_body), instead of `line`."""
    record: Record = {"kind": STDIO_LINE, "t": t, "dir": direction}
    record.update(cut or (body(line) if line.strip() else
                          {"raw": line, "problem": "an empty line is not an MCP message"}))
    if partial:
        record["partial"] = True
        record["problem"] = "; ".join(filter(None, [record.get("problem"), "the stream ended before this line's newline"]))
    return record


def edit(t: float, edits: list[str], detail: str, exchange: int | None = None, withheld: Any = None,
         request_id: Any = None) -> EditRecord:
    """`edits` as the user wrote them; `detail` what was done; `withheld` a message the client never got. Where
    it fired: on an HTTP `exchange`, or on stdio on the request with `request_id` (so every finding about that
    request is known to rest on the edit)."""
    record: Record = {"kind": EDIT, "t": t, "edits": edits, "detail": detail, "injected": True}
    if exchange is not None:
        record["exchange"] = exchange
    if request_id is not None:
        record["request_id"] = request_id
    if withheld is not None:
        record["withheld"] = withheld
    return record


def stdio_stderr(t: float, line: bytes, cut: Record | None = None) -> StdioStderr:
    if cut is not None:
        return {"kind": STDIO_STDERR, "t": t, **cut}  # type: ignore[typeddict-item]
    try:
        return {"kind": STDIO_STDERR, "t": t, "text": line.decode("utf-8")}
    except UnicodeDecodeError:
        return {"kind": STDIO_STDERR, "t": t, "raw": line, "problem": "not UTF-8"}


def stdio_eof(t: float, direction: str) -> StdioEof:
    """A stdio stream reached its end: c2s, the client closed the server's stdin (it left); s2c, the server
    closed its stdout."""
    return {"kind": STDIO_EOF, "t": t, "dir": direction}


def stdio_exit(t: float, code: int | None, signal: str | None = None, error: str | None = None) -> StdioExit:
    record: Record = {"kind": STDIO_EXIT, "t": t, "code": code}
    if signal:
        record["signal"] = signal
    if error:
        record["error"] = error
    return record
