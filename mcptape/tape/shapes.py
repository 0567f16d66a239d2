"""The fields of each record kind (records.py), defined once, as typed dicts: records stay plain dicts. Readers may
rely on the fields without NotRequired; the recorder writes most of the others too, and `import` checks every field
present against its type (`fields`, derived from these; records.problem). docs/tape-format.md's table mirrors them.

Imported by type checkers, and at run time only when a record's fields are checked: making the classes is a
millisecond of every command's start.
"""

from decimal import Decimal
from functools import cache
from types import UnionType
from typing import Any, NotRequired, TypedDict, Union, get_args, get_origin, get_type_hints

from .records import (CAPTURE_START, CAPTURE_STOP, EDIT, END, HEADER, HTTP_REQUEST, HTTP_RESPONSE, SSE_EVENT,
                      STDIO_EOF, STDIO_EXIT, STDIO_LINE, STDIO_STDERR)


class _Common(TypedDict):
    kind: str
    t: float
    injected: NotRequired[bool]  # an edit changed what the client got


class _Body(TypedDict, total=False):
    msg: Any  # the JSON body as sent: one JSON-RPC message or a batch
    raw: bytes  # a body that is not JSON, as it came; or the first bytes of one too large to keep (cut_body)
    problem: str  # what was wrong with it
    size: int  # a body too large to keep: its size in bytes, and the SHA-256 of all of it
    sha256: str


class HeaderRecord(TypedDict):
    kind: str
    format: int
    t: NotRequired[float]
    tool: NotRequired[str]
    redaction: NotRequired[dict]  # how the tape was redacted: rule names, never values (redact/redactor.py, Redactor.describe)


class CaptureStart(_Common):
    tool: NotRequired[str]
    source: NotRequired[dict]
    redaction: NotRequired[dict]


class CaptureStop(_Common):
    reason: NotRequired[str]


class HttpRequest(_Common, _Body):
    exchange: int
    method: str
    path: str
    conn: NotRequired[int | None]
    dir: NotRequired[str]
    query: NotRequired[list]  # [name, value] pairs
    headers: NotRequired[list]  # [name, value] pairs, redacted
    session: NotRequired[str | None]
    protocol_version: NotRequired[str | None]
    mcp: NotRequired[bool]


class HttpResponse(_Common, _Body):
    exchange: int
    status: int
    dir: NotRequired[str]
    reason: NotRequired[str]
    headers: NotRequired[list]
    session: NotRequired[str | None]


class SseEvent(_Common, _Body):
    exchange: int
    dir: NotRequired[str]
    id: NotRequired[str]
    event: NotRequired[str]
    retry: NotRequired[int]
    comments: NotRequired[list]
    data: NotRequired[str]
    session: NotRequired[str | None]  # a legacy endpoint's session
    rewritten_to: NotRequired[str]  # a legacy endpoint relocated to the proxy


class End(_Common):
    exchange: int
    reason: str
    detail: NotRequired[str]


class StdioLine(_Common, _Body):
    dir: str
    partial: NotRequired[bool]


class StdioStderr(_Common):
    text: NotRequired[str]
    raw: NotRequired[bytes]
    problem: NotRequired[str]
    size: NotRequired[int]  # a line too long to keep whole (cut_body)
    sha256: NotRequired[str]


class StdioExit(_Common):
    code: NotRequired[int | None]
    signal: NotRequired[str]
    error: NotRequired[str]


class StdioEof(_Common):
    dir: str


class EditRecord(_Common):
    edits: NotRequired[list]
    detail: NotRequired[str]
    exchange: NotRequired[int]
    request_id: NotRequired[Any]
    withheld: NotRequired[Any]


SHAPES: dict[str, type] = {
    HEADER: HeaderRecord, CAPTURE_START: CaptureStart, CAPTURE_STOP: CaptureStop, HTTP_REQUEST: HttpRequest,
    HTTP_RESPONSE: HttpResponse, SSE_EVENT: SseEvent, END: End, STDIO_LINE: StdioLine, STDIO_STDERR: StdioStderr,
    STDIO_EXIT: StdioExit, STDIO_EOF: StdioEof, EDIT: EditRecord,
}


def _types(annotation: Any) -> tuple:
    """The classes a field's annotation admits (`int | None` -> (int, NoneType)); () for Any."""
    if annotation is Any:
        return ()
    if get_origin(annotation) is NotRequired:
        return _types(get_args(annotation)[0])
    if get_args(annotation) and get_origin(annotation) in (UnionType, Union):
        return tuple(t for arg in get_args(annotation) for t in _types(arg))
    origin = get_origin(annotation) or annotation
    return (int, float, Decimal) if origin is float else (origin,)  # a time may be an int or an exact decimal


@cache
def fields() -> dict[str, tuple[frozenset, dict[str, tuple]]]:
    """kind -> (required fields, every field -> the classes it admits), for `import`'s checks."""
    return {kind: (shape.__required_keys__ - {"kind"}, {name: _types(hint) for name, hint in
                                                        get_type_hints(shape).items() if name != "kind"})
            for kind, shape in SHAPES.items()}
