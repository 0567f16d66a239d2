"""Judges the legacy HTTP+SSE channel (2024-11-05; later revisions keep it for backward compatibility): the
`endpoint` event a server sends when a client connects (first, with a URI), and the client's messages, POSTed to
that endpoint (requirements/transports.py). What is said on the channel is judged as on any transport."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ..model import Model, Observer, Seen, Session
from ..tape import records
from ..wire import http
from .finding import Finding, broke
from .streamable import call_named

# RFC 3986's characters: a URI reference holds nothing else (no space, no control, no quote or brace)
_URI = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
_KEPT = 4096  # channels remembered (bounded: a hostile tape opens a channel on every line)


class LegacySse(Observer):
    kinds = frozenset({records.HTTP_REQUEST, records.SSE_EVENT})

    def __init__(self) -> None:
        self.early: set[int] = set()  # GET exchanges without a session that streamed a message before any endpoint
        self.endpoints: dict[str, tuple[str, Session]] = {}  # legacy session id -> (the endpoint's path, session)

    def record(self, seen: Seen, model: Model) -> list[Finding] | None:
        ex = seen.exchange
        if ex is None:
            return None
        if seen.kind == records.SSE_EVENT:
            if ex.method != "GET":
                return None  # a POST's stream (Streamable HTTP): the bulk of a tape's events
            r = seen.record
            if r.get("event") == "endpoint":
                return self._endpoint(seen) or None
            if ex.session is None and "msg" in r and len(self.early) < _KEPT:
                self.early.add(ex.number)
            return None
        if self.endpoints and ex.msg is not None:  # nothing to compare with before a channel opened
            return self._sent(seen) or None
        return None

    def _endpoint(self, seen: Seen) -> list[Finding]:
        data = seen.record.get("data") or ""
        found: list[Finding] = []
        if seen.exchange.number in self.early:
            found += broke("sse-endpoint-event", seen, "the channel streamed a message before its endpoint event, "
                           "which is due when the client connects")
        if not _URI.fullmatch(data):
            found += broke("sse-endpoint-event", seen, f"the endpoint event's data {data[:80]!r} is not a URI")
        elif seen.session is not None and len(self.endpoints) < _KEPT:
            self.endpoints[seen.session.label] = (urlsplit(data).path, seen.session)
        return found

    def _sent(self, seen: Seen) -> list[Finding]:
        r = seen.record
        label = r.get("session") or http.legacy_session(r.get("query") or ())  # (the recorder reads the query
        # only on the endpoint's path)
        known = self.endpoints.get(label) if label else None
        if known is None:
            return []
        path, session = known
        method, where = r.get("method"), r.get("path")
        if method == "POST" and where == path:
            return []
        msg = seen.exchange.msg
        return broke("sse-post-to-endpoint", seen, f"a message of legacy session {label[:40]!r} sent as {method} "
                     f"{str(where)[:80]!r}, not POSTed to the endpoint {path[:80]!r} the server announced",
                     session.version, *call_named(msg))
