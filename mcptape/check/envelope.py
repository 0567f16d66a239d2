"""Judges the JSON-RPC envelope of every message (requirements/envelope.py): the version, ids, result and error.

The recorder already read each body with wire.jsonrpc and wrote a `problem` on any record that is not valid
JSON-RPC, so a record without one only needs the checks JSON-RPC alone does not make (a notification that carries
an id, the 2026-07-28 error codes); the sentences a record with a problem breaks are sorted out here, one finding
per sentence (malformed-message stays the transport's own clause).
"""

from __future__ import annotations

from typing import Any

from ..model import Call, Model, Observer, Seen
from ..wire import jsonrpc
from .finding import Finding, broke, broke_call, on_protocol_channel


class Envelope(Observer):
    """No hook on every record: a record whose body is not valid JSON-RPC is noted by the model (`noted`), and a
    valid message can only break the envelope's sentences as a request (a notification's method with an id: the
    model took it for a request) or as an answer (2026-07-28 error codes): both are settled calls (`call`)."""

    def noted(self, seen: Seen, model: Model) -> list[Finding] | None:
        r = seen.record
        problem = r.get("problem")
        if problem is None or not on_protocol_channel(seen):
            return None
        msg = r.get("msg")
        if msg is None:
            if isinstance(problem, str) and problem.startswith("not UTF-8"):
                return broke("utf-8", seen, f"{r['kind']} is {problem}")
            return None
        return [f for item in jsonrpc.messages(msg) for f in self._item(seen, item)] or None

    def call(self, call: Call, model: Model) -> list[Finding] | None:
        if call.method.startswith("notifications/"):  # (whether its record had a problem or not)
            return broke_call("notification-without-id", call, f"the notification {call.method} carries an id "
                              f"({call.id!r})") or None
        response = call.response
        if response is not None and "error" in response and (call.session.version or "") >= "2026-07-28":
            return _code_2026(call, response) or None
        return None

    @staticmethod
    def _item(seen: Seen, msg: Any) -> list[Finding]:
        if not isinstance(msg, dict):
            return []  # not an object at all: malformed-message says so
        found: list[Finding] = []
        method = msg.get("method")
        has_id = "id" in msg
        id_ = msg.get("id")
        if msg.get("jsonrpc") != "2.0":
            found += broke("jsonrpc-version", seen, f'"jsonrpc" is {msg.get("jsonrpc")!r}, not "2.0"', method=method,
                           request_id=id_ if _plain(id_) else None)
        if isinstance(method, str):
            # (a notification's method with an id: the model took it for a request, and `call` judges it)
            if has_id and not method.startswith("notifications/") and id_ is None:
                found += broke("request-id-not-null", seen, f"the request {method} has a null id", method=method)
            elif has_id and not method.startswith("notifications/") and not _plain(id_):
                found += broke("request-id-type", seen, f"the request {method} has {jsonrpc.type_name(id_)} for its "
                               f"id ({id_!r})", method=method)
            return found
        if method is not None or not has_id:
            return found  # a method that is not a string, or no id at all: no response either
        request_id = id_ if _plain(id_) else None
        if "result" in msg and "error" in msg:
            found += broke("response-not-both", seen, "a response with both result and error", request_id=request_id)
        elif "result" not in msg and "error" not in msg:
            found += broke("response-result-or-error", seen, "a response with neither result nor error",
                           request_id=request_id)
        if "error" in msg:
            error = msg["error"]
            if not isinstance(error, dict) or "code" not in error or "message" not in error:
                lacks = ("an error that is " + jsonrpc.type_name(error) if not isinstance(error, dict) else
                         "an error without " + " or ".join(k for k in ("code", "message") if k not in error))
                found += broke("error-code-and-message", seen, lacks, request_id=request_id)
            if isinstance(error, dict) and "code" in error and not _plain_int(error["code"]):
                found += broke("error-code-integer", seen, f"the error code is {error['code']!r}, not an integer",
                               request_id=request_id)
        return found


# 2026-07-28: the codes it defines in -32020…-32099, and those earlier revisions defined that it retired
_DEFINED_2026 = frozenset({-32020, -32021, -32022})
_RETIRED_2026 = {-32002: "resource not found, now -32602", -32042: "URL elicitation required"}


def _code_2026(call: Call, msg: dict) -> list[Finding]:
    error = msg.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if type(code) is not int:
        return []
    if code in _RETIRED_2026:
        return broke_call("error-code-retired", call, f"answered with error code {code} ({_RETIRED_2026[code]}), "
                          f"retired in 2026-07-28")
    if -32099 <= code <= -32020 and code not in _DEFINED_2026:
        return broke_call("error-code-reserved", call, f"answered with error code {code}, in the range the "
                          f"specification reserves and does not define")
    return []


def _plain(value: Any) -> bool:
    return type(value) is str or type(value) is int


def _plain_int(value: Any) -> bool:
    return type(value) is int
