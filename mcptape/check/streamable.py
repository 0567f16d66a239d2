"""Judges Streamable HTTP's messages and session ids (requirements/transports.py, sessions.py): Accept headers,
202 for notifications, the GET stream's content type, batches after 2025-06-18, the session id's characters, a
DELETE without a session, and a server that takes a protocol version header that is no revision; and, on every HTTP
transport, a server on loopback that serves a foreign Origin. The legacy channel's own clauses are in legacy.py."""

from __future__ import annotations

import functools
import re

from ..guard import Guard
from ..model import LEGACY_SSE, STREAMABLE, Exchange, Model, Observer, Seen
from ..tape import records
from ..wire import http, jsonrpc
from .finding import Finding, broke

_REVISION = re.compile(r"\d{4}-\d{2}-\d{2}")


@functools.lru_cache(maxsize=64)
def is_revision(value: str) -> bool:
    """A protocol version header that names a revision (a date); anything else is invalid in every revision."""
    return _REVISION.fullmatch(value) is not None


_VISIBLE = re.compile(r"[\x21-\x7e]+")


_MISSING: dict[tuple, tuple[str, ...]] = {}  # (Accept, types) -> the types it lacks: a client repeats its header


def _accepts(headers: list, *types: str) -> tuple[str, ...]:
    """The media types of `types` an Accept header does not list."""
    accept = None
    for key, value in headers:  # http.get, without lower-casing every other header's name
        if len(key) == 6 and key.lower() == "accept":
            accept = value
            break
    key = (accept, types)
    missing = _MISSING.get(key)
    if missing is None:
        listed = {http.media_type(part) for part in (accept or "").split(",")}
        missing = tuple(t for t in types if t not in listed)
        if len(_MISSING) < 256:
            _MISSING[key] = missing
    return missing


_LOOPBACK = Guard()  # the check mcptape's own servers make: no listen address, nothing allowed but loopback


_ASKED: tuple[list | None, str | None] = (None, None)  # the headers asked about last, and the answer


def foreign_origin(headers: list) -> str | None:
    """The Origin of a request that a server on loopback must refuse: a web page of another site (not http(s) on a
    loopback name, or `null`), sent to a loopback Host (the server is local: what DNS rebinding reaches). None for
    a request without Origin (not a browser) or without Host (where the server is, the tape does not say)."""
    global _ASKED
    asked = _ASKED
    if asked[0] is headers:  # the same request's, asked again (check --requirements asks twice for each)
        return asked[1]
    found = _foreign_origin(headers)
    _ASKED = (headers, found)
    return found


def _foreign_origin(headers: list) -> str | None:
    origin = host = None
    for key, value in headers:  # one pass, without lower-casing every other header's name
        if len(key) == 6 and key.lower() == "origin":
            origin = value
        elif len(key) == 4 and key.lower() == "host":
            host = value
    if origin is None or host is None:
        return None
    refusal = _LOOPBACK.check([("host", host), ("origin", origin)])
    return origin if refusal is not None and refusal.status == 403 else None  # (421: the Host is not loopback)


class StreamableHttp(Observer):
    kinds = frozenset({records.HTTP_REQUEST, records.HTTP_RESPONSE})

    def __init__(self) -> None:
        self.bad_version: set[int] = set()  # exchanges whose MCP-Protocol-Version is no revision
        self.foreign: dict[int, str] = {}  # exchanges from a foreign Origin to a loopback server -> that Origin

    def record(self, seen: Seen, model: Model) -> list[Finding] | None:
        ex = seen.exchange
        if ex is None or not ex.mcp:
            return None
        if seen.kind == records.HTTP_REQUEST:
            if (origin := foreign_origin(ex.headers)) is not None and len(self.foreign) < 4096:
                self.foreign[ex.number] = origin
            if seen.session is not None and seen.session.transport == LEGACY_SSE:
                return None
            return self._request(seen, ex) or None
        found = self._origin(seen, ex) if self.foreign else None
        if seen.session is not None and seen.session.transport == LEGACY_SSE:
            return found or None
        more = self._response(seen, ex)
        return (found + more if found else more) or None

    # (the exchange as a typed argument, not seen.exchange read again: docs/compiled.md)

    def _origin(self, seen: Seen, ex: Exchange) -> list[Finding]:
        origin = self.foreign.pop(ex.number, None)
        status = seen.record.get("status") or 0
        if origin is None or not 200 <= status < 300:
            return []
        return broke("origin-validated", seen, f"a request from the web origin {origin[:80]!r} reached a server on "
                     f"loopback and was answered {status}: the server did not refuse it (403)", None,
                     *call_named(ex.msg), records.C2S)

    def _request(self, seen: Seen, ex: Exchange) -> list[Finding]:
        session = seen.session
        msg = ex.msg
        revision = None
        if session is None:  # the handshake: the version it asks for
            if ex.method == "DELETE":
                return broke("delete-with-session", seen, "a DELETE without MCP-Session-Id: it names no session to "
                             "terminate")
            if ex.method != "POST" or msg is None:
                return []  # (a GET without a session: a legacy channel opening, or a probe)
            params = msg.get("params") if isinstance(msg, dict) and isinstance(msg.get("params"), dict) else {}
            revision = params.get("protocolVersion") if isinstance(params.get("protocolVersion"), str) else None
        found: list[Finding] = []
        if ex.method == "POST" and msg is not None:
            if missing := _accepts(ex.headers, http.JSON, http.SSE):
                found += broke("post-accept-both", seen, f"the POST's Accept header does not list "
                               f"{' or '.join(missing)}", revision, *call_named(msg))
            if type(msg) is list:
                found += broke("post-single-message", seen, f"a POST whose body is a batch of {len(msg)} messages",
                               revision)
        elif ex.method == "GET" and session is not None and session.transport == STREAMABLE:
            if _accepts(ex.headers, http.SSE):
                found += broke("get-accept-sse", seen, "the GET's Accept header does not list text/event-stream")
        if isinstance(ex.version_header, str) and not is_revision(ex.version_header):
            self.bad_version.add(ex.number)
        return found

    def _response(self, seen: Seen, ex: Exchange) -> list[Finding]:
        r = seen.record
        status = r.get("status") or 0
        found: list[Finding] = []
        request = ex.msg
        if self.bad_version and ex.number in self.bad_version:
            self.bad_version.discard(ex.number)
            if status < 400:
                found += broke("version-header-invalid-400", seen, f"MCP-Protocol-Version {ex.version_header!r} is "
                               f"no revision, yet the server answered {status}", None, *call_named(request))
        if (ex.method == "POST" and request is not None and 200 <= status < 300
                and not (type(request) is dict and "id" in request and "method" in request)  # a request: answered
                and _only_notifications(request)):
            if status != 202 or "msg" in r or r.get("raw"):
                said = f"{status}" + (" with a body" if status == 202 else "")
                found += broke("notification-202", seen, f"a POST of notifications or responses only was answered "
                               f"{said}, not 202 Accepted with no body", None, *call_named(request))
        if (ex.method == "GET" and ex.sent_session and 200 <= status < 300 and not ex.get_stream
                and seen.session is not None and seen.session.transport == STREAMABLE):
            found += broke("get-sse-or-405", seen, f"the GET was answered {status} with "
                           f"{http.get(r.get('headers') or [], 'content-type') or 'no content type'}, not an event "
                           f"stream (or 405)")
        sent = r.get("session")
        if sent and not ex.sent_session and isinstance(sent, str) and not _VISIBLE.fullmatch(sent):
            found += broke("session-id-visible-ascii", seen, f"the server assigned the session id {sent!r}, which "
                           f"holds characters outside 0x21-0x7E")
        return found


def _only_notifications(body: object) -> bool:
    if type(body) is dict:
        return jsonrpc.kind(body) in _ANSWERLESS
    kinds = [jsonrpc.kind(m) for m in jsonrpc.messages(body)]
    return bool(kinds) and "request" not in kinds and "invalid" not in kinds


_ANSWERLESS = frozenset({"notification", "response", "error"})


def call_named(msg: object) -> tuple:
    """The method and id a finding about an HTTP exchange names: its request's, when it carried one message."""
    if isinstance(msg, dict):
        return msg.get("method") if isinstance(msg.get("method"), str) else None, msg.get("id")
    return None, None
