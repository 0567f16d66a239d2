"""JSON-RPC 2.0 messages as MCP puts them on the wire.

This is the only place that turns JSON text into values, and values back into text. It keeps every JSON number
exactly: integers of any size stay Python ints, a fraction becomes a float only when the float says the same
number, otherwise it stays a Decimal (so `1e400` or `0.10000000000000000001` survive a round trip through a tape).
The standard library writes the JSON; simplejson only when a value holds a Decimal (a number a double cannot
hold), because it can emit the exact literal it was read from and the standard library cannot.
"""

from __future__ import annotations

import json
import math
import sys
from decimal import Decimal, InvalidOperation
from typing import Any

JSON = Any


def _exact_float(literal: str) -> float | Decimal:
    try:
        exact = Decimal(literal)
    except InvalidOperation:  # an exponent past what any decimal holds (found by fuzzing): no number we can keep
        raise ValueError(f"number {literal if len(literal) <= 20 else literal[:20] + '…'} is out of range") from None
    value = float(literal)
    if math.isfinite(value) and Decimal(repr(value)) == exact:
        return value
    return exact


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; JSON does not.
    raise ValueError(f"{name} is not valid JSON")


def decoder(object_pairs_hook: Any = None) -> json.JSONDecoder:
    """A decoder that reads JSON as this module does: numbers exactly, no NaN or Infinity (json_spans reads JSON
    inside strings with one, refusing a key written twice)."""
    return json.JSONDecoder(parse_float=_exact_float, parse_constant=_reject_constant,
                            object_pairs_hook=object_pairs_hook)


_decoder = decoder()

# Deeper JSON is not taken as a message: a tape stores messages as msgpack, whose packer stops at 511 levels, and
# every reader walks messages recursively. Real MCP messages nest a few dozen levels at most.
MAX_DEPTH = 500


def _deeper_than(value: JSON, limit: int) -> bool:
    """Whether more than `limit` arrays/objects nest inside each other (breadth-first: no recursion to overflow)."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(limit):
        level = [v for c in level for v in (c.values() if isinstance(c, dict) else c) if isinstance(v, (dict, list))]
        if not level:
            return False
    return True


def too_deep(text: str | bytes, value: JSON) -> bool:
    """Whether `value`, read from `text`, nests deeper than MAX_DEPTH (counted only when the text could)."""
    opens = (b"[", b"{") if isinstance(text, bytes) else ("[", "{")
    return text.count(opens[0]) + text.count(opens[1]) > MAX_DEPTH and _deeper_than(value, MAX_DEPTH)


def loads(text: str | bytes) -> JSON:
    """Parse JSON text exactly; raises ValueError with a readable reason on anything that is not JSON."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return _decoder.decode(text)


def dumps(value: Any, indent: int | None = None) -> str:
    try:
        return _dumps(value, indent)
    except RecursionError:
        # Indented JSON is written by the standard library's Python encoder, a frame or two per level: a record
        # nested as deep as the reader admits (1,000 levels) needs more than Python 3.12's default limit.
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10_000))
        try:
            return _dumps(value, indent)
        finally:
            sys.setrecursionlimit(limit)


def _dumps(value: Any, indent: int | None) -> str:
    try:  # the standard library's C encoder, for the common case
        return json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)
    except TypeError:  # a Decimal somewhere: only simplejson writes it back as its exact literal
        import simplejson

        return simplejson.dumps(value, use_decimal=True, ensure_ascii=False, indent=indent, allow_nan=False)


class Body:
    """A body or SSE data field as read: the message(s) when it is JSON, the reason when it is not. Never changed
    once made. (A plain class: @dataclass compiles its methods' source at every start, conversation.py.)"""

    __slots__ = ("msg", "problem", "is_json")
    msg: JSON | None
    problem: str | None
    is_json: bool

    def __init__(self, msg: JSON | None = None, problem: str | None = None, is_json: bool = False) -> None:
        self.msg, self.problem, self.is_json = msg, problem, is_json

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Body) and (self.msg, self.problem, self.is_json) == (other.msg, other.problem,
                                                                                       other.is_json)

    def __repr__(self) -> str:
        return f"Body(msg={self.msg!r}, problem={self.problem!r}, is_json={self.is_json})"


def parse(data: bytes | str) -> Body:
    """Read one HTTP body / SSE data / stdio line. Empty input is no message and no problem."""
    if not data or (isinstance(data, (bytes, str)) and not data.strip()):
        return Body()
    try:
        value = loads(data)
    except UnicodeDecodeError as e:
        return Body(problem=f"not UTF-8 (byte {e.start})")
    except ValueError as e:
        return Body(problem=f"not JSON: {e}")
    except RecursionError:
        return Body(problem="not JSON: nested too deeply")
    if too_deep(data, value):
        return Body(problem=f"JSON nested deeper than {MAX_DEPTH} levels is not taken as a message")
    return Body(msg=value, problem=invalid_reason(value), is_json=True)


def kind(msg: JSON) -> str:
    """request | notification | response | error | invalid, by the shape of one message. A method that is not a
    string makes no request: nothing could answer it, and every reader keys calls by their method."""
    if not isinstance(msg, dict):
        return "invalid"
    if "method" in msg:
        if type(msg["method"]) is not str:
            return "invalid"
        return "request" if "id" in msg else "notification"
    if "result" in msg:
        return "response"
    if "error" in msg:
        return "error"
    return "invalid"


def _message_problem(msg: JSON) -> str | None:
    if not isinstance(msg, dict):
        return f"a JSON-RPC message must be an object, not {type_name(msg)}"
    if msg.get("jsonrpc") != "2.0":
        return 'missing "jsonrpc": "2.0"'
    if "method" in msg and not isinstance(msg["method"], str):
        return "method must be a string"
    k = kind(msg)
    if k == "invalid":
        return "neither a request, a notification nor a response"
    if "id" in msg and not _valid_id(msg["id"], allow_null=(k == "error")):
        return f"id must be a string or an integer, not {type_name(msg['id'])}"
    if k in ("response", "error") and "result" in msg and "error" in msg:
        return "a response carries both result and error"
    if k == "error":
        err = msg["error"]
        if not isinstance(err, dict) or not isinstance(err.get("code"), int) or "message" not in err:
            return "error must be an object with an integer code and a message"
    return None


def invalid_reason(value: JSON) -> str | None:
    """Why a parsed body is not JSON-RPC (a message or a batch of them), or None when it is."""
    if isinstance(value, list):
        if not value:
            return "an empty batch"
        for i, item in enumerate(value):
            problem = _message_problem(item)
            if problem:
                return f"batch item {i}: {problem}"
        return None
    return _message_problem(value)


def messages(value: JSON) -> list[JSON] | tuple[JSON]:
    """The messages a body carried: a batch's items, or the single message."""
    return value if isinstance(value, list) else (value,)


# What differs between two runs of the same conversation, whoever runs it: keys that point at other messages of
# the run (a progress token, the request a cancellation names, a related task) and tracing context. A replay
# matches requests without them; diff compares calls without them.
VOLATILE_KEYS = frozenset({"progressToken", "requestId", "io.modelcontextprotocol/related-task", "traceparent",
                           "tracestate", "baggage"})


def progress_token(request: JSON) -> Any:
    """The token a request asks its progress under (params._meta.progressToken), or None."""
    params = request.get("params") if isinstance(request, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("progressToken") if isinstance(meta, dict) else None


def progress_of(notification: JSON) -> Any:
    """The token a progress notification reports for (params.progressToken), or None."""
    params = notification.get("params") if isinstance(notification, dict) else None
    return params.get("progressToken") if isinstance(params, dict) else None


def id_key(value: JSON) -> Any:
    """A request id as a dict key that compares as JSON does: 1 and "1" are different ids (and different keys);
    anything else (a bool, a float, an object: not valid ids, but seen on the wire) is keyed by its type and text."""
    kind = type(value)
    return value if kind is str or kind is int else (kind.__name__, repr(value))


def _valid_id(value: JSON, allow_null: bool) -> bool:
    if value is None:
        return allow_null
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def type_name(value: JSON) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def detail(msg: dict) -> str:
    """The one parameter that says most about a request or notification."""
    params = msg.get("params")
    if not isinstance(params, dict):
        return ""
    for key in ("name", "uri", "requestId"):
        if isinstance(params.get(key), (str, int)):
            return f" {params[key]}"
    if "progress" in params:
        total = f"/{params['total']}" if params.get("total") is not None else ""
        return f" {params['progress']}{total}"
    if "level" in params:
        return f" {params['level']}"
    return ""


def describe(msg: JSON) -> str:
    """One short human line for a message: `tools/call #3 add`, `result #3`, `error #3 -32600 Session not found`."""
    k = kind(msg)
    if k == "request":
        return f"{msg['method']} #{_id(msg['id'])}{detail(msg)}"
    if k == "notification":
        return f"{msg['method']}{detail(msg)}"
    if k == "response":
        return f"result #{_id(msg.get('id'))}"
    if k == "error":
        err = msg.get("error") or {}
        if isinstance(err, dict):
            return f"error #{_id(msg.get('id'))} {err.get('code')} {err.get('message')}"
        return f"error #{_id(msg.get('id'))}"
    return "invalid message"


def _id(value: JSON) -> str:
    """An id as JSON spells it where Python would not (null, true)."""
    return value if isinstance(value, str) else json.dumps(value, default=str)
