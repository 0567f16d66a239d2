"""HTTP capture without I/O: the proxy tells it what passed (request, response head, body chunks, failures) and it
writes records. It decides which exchanges are MCP, redacts, numbers exchanges and connections, and parses SSE as
it streams. The mitmproxy addon (capture/mitm.py) is only an adapter onto these calls.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import parse_qsl, urlsplit

from ..redact import Redactor
from ..tape import records
from ..wire import http, jsonrpc, sse


class RecordSink(Protocol):
    def write(self, record: records.Record) -> None: ...


@dataclass
class _Exchange:
    number: int
    mcp: bool
    stream: SSEStream | None = None


@dataclass
class Scope:
    """Which exchanges are recorded and how much of them.

    endpoints: paths known to be MCP endpoints (the upstream URL's path in reverse mode); learned legacy message
    endpoints are added as they are announced. When empty, an exchange is MCP when it looks like MCP.
    mcp_only: exchanges that are not MCP are not recorded at all (regular proxy mode); otherwise they are recorded
    as request line, status and redacted headers. record_all: bodies of every exchange are recorded.
    """

    endpoints: set[str] = field(default_factory=set)
    mcp_only: bool = False
    record_all: bool = False


class HttpCapture:
    def __init__(self, sink: RecordSink, redactor: Redactor, scope: Scope) -> None:
        self.sink = sink
        self.redactor = redactor
        self.scope = scope
        self._exchanges: dict[object, _Exchange] = {}
        self._conns: dict[object, int] = {}
        self._next_exchange = 0
        self.recorded = 0  # exchanges recorded by this run

    def start(self, t: float, tool: str, source: dict, first_exchange: int = 0) -> None:
        self._next_exchange = first_exchange
        self.sink.write(records.capture_start(t, tool, source, self.redactor.describe()))

    # -- requests ----------------------------------------------------------------------------------------------

    def request(
        self, key: object, conn: object, t: float, method: str, target: str, headers: list[tuple[str, str]],
        body: bytes, body_problem: str | None = None,
    ) -> bool:
        """A request arrived whole. Returns whether it is recorded."""
        split = urlsplit(target)
        path = split.path or "/"
        query = _query_pairs(split.query)
        mcp = self._is_mcp(method, path, headers, body)
        if not mcp and self.scope.mcp_only and not self.scope.record_all:
            return False
        number = self._next_exchange
        self._next_exchange += 1
        self.recorded += 1
        self._exchanges[key] = _Exchange(number, mcp)
        conn_number = self._conns.setdefault(conn, len(self._conns))
        redacted = self.redactor.headers(headers)
        with_body = mcp or self.scope.record_all
        self.sink.write(records.http_request(
            t, number, conn_number, method, path, self.redactor.query(query), redacted,
            http.get(redacted, http.SESSION_ID), http.get(headers, http.PROTOCOL_VERSION), mcp,
            records.body(body, body_problem) if with_body else {},
        ))
        return True

    def _is_mcp(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes) -> bool:
        if path in self.scope.endpoints:
            return True
        if self.scope.endpoints:
            return False
        if http.get(headers, http.SESSION_ID) or http.get(headers, http.PROTOCOL_VERSION):
            return True
        if method == "POST":
            parsed = jsonrpc.parse(body)
            return parsed.is_json and parsed.problem is None
        return method == "GET" and http.accepts(headers, http.SSE)

    # -- responses ---------------------------------------------------------------------------------------------

    def response_head(
        self, key: object, t: float, status: int, reason: str, headers: list[tuple[str, str]]
    ) -> SSEStream | None:
        """Response headers arrived. For an SSE response this records the head and returns the stream the body
        chunks go to; otherwise the response is recorded whole by `response`."""
        ex = self._exchanges.get(key)
        if ex is None or http.media_type(http.get(headers, "content-type")) != http.SSE:
            return None
        redacted = self.redactor.headers(headers)
        self.sink.write(records.http_response(
            t, ex.number, status, reason, redacted, http.get(redacted, http.SESSION_ID), {}
        ))
        with_body = ex.mcp or self.scope.record_all
        ex.stream = SSEStream(self, ex.number, http.get(headers, "content-encoding"), with_body)
        return ex.stream

    def response(
        self, key: object, t: float, status: int, reason: str, headers: list[tuple[str, str]], body: bytes,
        body_problem: str | None = None,
    ) -> None:
        """The response finished (for a streamed one, its last chunk passed)."""
        ex = self._exchanges.get(key)
        if ex is None:
            return
        if ex.stream is not None:
            ex.stream.close()
        else:
            redacted = self.redactor.headers(headers)
            fields = records.body(body, body_problem) if ex.mcp or self.scope.record_all else {}
            self.sink.write(records.http_response(
                t, ex.number, status, reason, redacted, http.get(redacted, http.SESSION_ID), fields
            ))
        self._end(key, time.time(), records.COMPLETE)

    def failed(self, key: object, t: float, reason: str, detail: str | None = None) -> None:
        ex = self._exchanges.get(key)
        if ex is None:
            return
        if ex.stream is not None:
            ex.stream.close()
        self._end(key, t, reason, detail)

    def stop(self, t: float, reason: str) -> None:
        """The proxy is stopping: exchanges still open were cut by us, not by either peer."""
        for key in list(self._exchanges):
            self.failed(key, t, records.PROXY_STOPPED, "the recorder stopped while this exchange was open")
        self.sink.write(records.capture_stop(t, reason))

    def _end(self, key: object, t: float, reason: str, detail: str | None = None) -> None:
        ex = self._exchanges.pop(key)
        self.sink.write(records.end(t, ex.number, reason, detail))

    def learn_endpoint(self, uri: str) -> None:
        """A legacy (2024-11-05) server announced where clients POST: that path is an MCP endpoint too."""
        path = urlsplit(uri).path
        if path and self.scope.endpoints:
            self.scope.endpoints.add(path)


class SSEStream:
    """One streamed SSE response: chunks in (as they pass to the client), one record per event out."""

    def __init__(self, capture: HttpCapture, exchange: int, encoding: str | None, with_body: bool) -> None:
        self.capture = capture
        self.exchange = exchange
        self.with_body = with_body
        self.parser = sse.Parser()
        self.problem: str | None = None
        self.closed = False
        try:
            self.decoder = http.Decoder(encoding)
        except ValueError as e:
            self.decoder = None
            self.problem = str(e)

    def feed(self, chunk: bytes) -> None:
        if not self.with_body or self.closed or not chunk:
            return
        if self.decoder is not None and self.problem is None:
            try:
                self._events(self.parser.feed(self.decoder.decode(chunk)))
                return
            except Exception as e:  # a corrupt compressed stream: keep what passes, raw
                self.problem = f"content-encoding {self.decoder.encoding} could not be decoded: {e}"
        self.capture.sink.write(records.sse_raw(time.time(), self.exchange, chunk, self.problem or ""))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.with_body and self.problem is None:
            self._events(self.parser.close())

    def _events(self, events: Iterable[sse.Event]) -> None:
        for event in events:
            if event.event == "endpoint" and event.data:
                self.capture.learn_endpoint(event.data)
            self.capture.sink.write(records.sse_event(time.time(), self.exchange, event))


def _query_pairs(query: str) -> list[tuple[str, str]]:
    return parse_qsl(query, keep_blank_values=True)
