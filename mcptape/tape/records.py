"""The records a tape holds. Records are plain maps (what msgpack stores and JSON shows); this module is the one
place that says which kinds exist and which fields each carries. The README's "Tape format" section mirrors it.

Every record has `kind` and `t` (seconds since the epoch, as the byte passed the recorder). A record's `seq` is its
position in the tape (0 = first record after the header); it is derived on reading, never stored.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..wire import jsonrpc
from .file import FORMAT

Record = dict[str, Any]

HEADER = "header"
CAPTURE_START = "capture.start"  # a recording run began (a tape appended to has several)
CAPTURE_STOP = "capture.stop"  # it ended cleanly
HTTP_REQUEST = "http.request"  # request line, redacted headers, session, body
HTTP_RESPONSE = "http.response"  # status, redacted headers, session; the body too unless it is an SSE stream
SSE_EVENT = "sse.event"  # one SSE event of a streamed response, as it passed
END = "end"  # how an exchange ended
STDIO_LINE = "stdio.line"  # one line on the server's stdin (c2s) or stdout (s2c)
STDIO_STDERR = "stdio.stderr"  # one line the server wrote to stderr (not protocol; kept as text)
STDIO_EXIT = "stdio.exit"  # the server process ended: exit code or signal
STDIO_EOF = "stdio.eof"  # a stdio stream closed: the client closed the server's stdin (c2s), or the server its stdout
EDIT = "edit"  # an edit fired: what mcptape changed; the records it changed carry `injected`
KINDS = (HEADER, CAPTURE_START, CAPTURE_STOP, HTTP_REQUEST, HTTP_RESPONSE, SSE_EVENT, END, STDIO_LINE, STDIO_STDERR,
         STDIO_EXIT, STDIO_EOF, EDIT)

C2S, S2C = "c2s", "s2c"

# How an exchange ended. "complete" is the only clean one; the others say who broke it off.
COMPLETE = "complete"
CLIENT_DISCONNECTED = "client-disconnected"
UPSTREAM_RESET = "upstream-reset"
UPSTREAM_UNREACHABLE = "upstream-unreachable"
PROXY_STOPPED = "proxy-stopped"
PROXY_ERROR = "proxy-error"
END_REASONS = (COMPLETE, CLIENT_DISCONNECTED, UPSTREAM_RESET, UPSTREAM_UNREACHABLE, PROXY_STOPPED, PROXY_ERROR)


# The fields each kind carries and their types, as the README's format table gives them: what `import` checks a
# record against before it becomes part of a tape (a tape mcptape wrote has them by construction). A field marked
# required is one every reader relies on; the others are checked when present.
_NUMBER = (int, float, Decimal)
_TEXT = (str,)
_MAYBE_TEXT = (str, type(None))
_INT = (int,)
_ANY = (object,)
_BODY = {"msg": _ANY, "raw": (bytes,), "problem": _TEXT}
_EXCHANGE = {"exchange": _INT}
FIELDS: dict[str, tuple[dict[str, tuple], dict[str, tuple]]] = {  # kind -> (required, optional)
    HEADER: ({"format": _INT}, {"tool": _TEXT}),
    CAPTURE_START: ({}, {"tool": _TEXT, "source": (dict,), "redaction": (dict,)}),
    CAPTURE_STOP: ({}, {"reason": _TEXT}),
    HTTP_REQUEST: ({**_EXCHANGE, "method": _TEXT, "path": _TEXT},
                   {"conn": (int, type(None)), "dir": _TEXT, "query": (list,), "headers": (list,),
                    "session": _MAYBE_TEXT, "protocol_version": _MAYBE_TEXT, "mcp": (bool,), **_BODY}),
    HTTP_RESPONSE: ({**_EXCHANGE, "status": _INT},
                    {"dir": _TEXT, "reason": _TEXT, "headers": (list,), "session": _MAYBE_TEXT, **_BODY}),
    SSE_EVENT: (_EXCHANGE, {"dir": _TEXT, "id": _TEXT, "event": _TEXT, "retry": _INT, "comments": (list,),
                            "data": _TEXT, "session": _MAYBE_TEXT, "rewritten_to": _TEXT, **_BODY}),
    END: ({**_EXCHANGE, "reason": _TEXT}, {"detail": _TEXT}),
    STDIO_LINE: ({"dir": _TEXT}, {"partial": (bool,), **_BODY}),
    STDIO_STDERR: ({}, {"text": _TEXT, "raw": (bytes,), "problem": _TEXT}),
    STDIO_EXIT: ({}, {"code": (int, type(None)), "signal": _TEXT, "error": _TEXT}),
    STDIO_EOF: ({"dir": _TEXT}, {}),
    EDIT: ({}, {"edits": (list,), "detail": _TEXT, "exchange": _INT, "request_id": _ANY, "withheld": _ANY}),
}
_COMMON = {"t": _NUMBER, "injected": (bool,)}
DIRECTIONS = (C2S, S2C)
_PAIRS = ("query", "headers")


def problem(record: Any) -> str | None:
    """Why a record does not fit its kind (unknown kind, a field missing or of the wrong type), or None."""
    if not isinstance(record, dict):
        return f"a record must be an object, not {jsonrpc.type_name(record)}"
    kind = record.get("kind")
    if kind not in FIELDS:
        return f"unknown kind {kind!r} (kinds: {', '.join(FIELDS)})"
    required, optional = FIELDS[kind]
    for name in required:
        if name not in record:
            return f"{kind} has no {name}"
    if "t" not in record and kind != HEADER:
        return f"{kind} has no t"
    for name, value in record.items():
        wanted = required.get(name) or optional.get(name) or _COMMON.get(name)
        if wanted is None or wanted is _ANY:
            continue
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
            names = " or ".join(_TYPE_NAMES.get(w, w.__name__) for w in wanted if w is not Decimal)
            return f"{kind} field {name} must be {names}, not {jsonrpc.type_name(value)} ({_short(value)})"
    if "dir" in record and record["dir"] not in DIRECTIONS:
        return f"{kind} field dir must be c2s or s2c, not {_short(record['dir'])}"
    for name in _PAIRS:
        pairs = record.get(name) or []
        if not all(isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(x, str) for x in p)
                   for p in pairs):
            return f"{kind} field {name} must be a list of [name, value] pairs of strings"
    return None


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "a boolean", list: "an array",
               dict: "an object", bytes: "bytes (raw_b64)", type(None): "null"}


def _short(value: Any) -> str:
    from .json_form import dumps

    try:
        text = dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def header(t: float, tool: str) -> Record:
    return {"kind": HEADER, "format": FORMAT, "t": t, "tool": tool}


def body(data: bytes, problem: str | None = None) -> Record:
    """The fields for a body or SSE data: `msg` when it is JSON (with `problem` when that JSON is not JSON-RPC),
    `raw` bytes when it is not JSON, nothing when it is empty. `problem` from the caller (say, an undecodable
    content-encoding) wins and keeps the bytes raw."""
    if problem:
        return {"raw": data, "problem": problem}
    parsed = jsonrpc.parse(data)
    if parsed.is_json:
        fields: Record = {"msg": parsed.msg}
        if parsed.problem:
            fields["problem"] = parsed.problem
        return fields
    if parsed.problem:
        return {"raw": data, "problem": parsed.problem}
    return {"raw": data} if data else {}


def capture_start(t: float, tool: str, source: Record, redaction: Record) -> Record:
    return {"kind": CAPTURE_START, "t": t, "tool": tool, "source": source, "redaction": redaction}


def capture_stop(t: float, reason: str) -> Record:
    return {"kind": CAPTURE_STOP, "t": t, "reason": reason}


def http_request(
    t: float, exchange: int, conn: int, method: str, path: str, query: list, headers: list,
    session: str | None, protocol_version: str | None, mcp: bool, fields: Record,
) -> Record:
    return {
        "kind": HTTP_REQUEST, "t": t, "exchange": exchange, "conn": conn, "dir": C2S, "method": method,
        "path": path, "query": query, "headers": headers, "session": session,
        "protocol_version": protocol_version, "mcp": mcp, **fields,
    }


def http_response(
    t: float, exchange: int, status: int, reason: str, headers: list, session: str | None, fields: Record
) -> Record:
    return {
        "kind": HTTP_RESPONSE, "t": t, "exchange": exchange, "dir": S2C, "status": status, "reason": reason,
        "headers": headers, "session": session, **fields,
    }


def sse_event(t: float, exchange: int, event: Any) -> Record:
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
    from .json_form import dumps

    data = dumps(record["msg"]) if "msg" in record else record.get("data")
    return sse.Event(id=record.get("id"), event=record.get("event"), data=data, retry=record.get("retry"),
                     comments=list(record.get("comments", [])))


def sse_raw(t: float, exchange: int, raw: bytes, problem: str) -> Record:
    """Stream bytes that could not be read as SSE (say, a broken content-encoding), kept as they passed."""
    return {"kind": SSE_EVENT, "t": t, "exchange": exchange, "dir": S2C, "raw": raw, "problem": problem}


def end(t: float, exchange: int, reason: str, detail: str | None = None) -> Record:
    record: Record = {"kind": END, "t": t, "exchange": exchange, "reason": reason}
    if detail:
        record["detail"] = detail
    return record


def stdio_line(t: float, direction: str, line: bytes, partial: bool = False) -> Record:
    """A line without its newline. `partial`: the stream ended before the newline came."""
    record: Record = {"kind": STDIO_LINE, "t": t, "dir": direction}
    record.update(body(line) if line.strip() else {"raw": line, "problem": "an empty line is not an MCP message"})
    if partial:
        record["partial"] = True
        record["problem"] = "; ".join(filter(None, [record.get("problem"), "the stream ended before this line's newline"]))
    return record


def edit(t: float, edits: list[str], detail: str, exchange: int | None = None, withheld: Any = None,
         request_id: Any = None) -> Record:
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


def stdio_stderr(t: float, line: bytes) -> Record:
    try:
        return {"kind": STDIO_STDERR, "t": t, "text": line.decode("utf-8")}
    except UnicodeDecodeError:
        return {"kind": STDIO_STDERR, "t": t, "raw": line, "problem": "not UTF-8"}


def stdio_eof(t: float, direction: str) -> Record:
    """A stdio stream reached its end: c2s, the client closed the server's stdin (it left); s2c, the server
    closed its stdout."""
    return {"kind": STDIO_EOF, "t": t, "dir": direction}


def stdio_exit(t: float, code: int | None, signal: str | None = None, error: str | None = None) -> Record:
    record: Record = {"kind": STDIO_EXIT, "t": t, "code": code}
    if signal:
        record["signal"] = signal
    if error:
        record["error"] = error
    return record
