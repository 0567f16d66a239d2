"""HTTP capture without I/O: the proxy tells it what passed (request, response head, body chunks, failures) and it
writes records. It decides which exchanges are MCP, redacts, numbers exchanges and connections, and parses SSE as
it streams. The mitmproxy addon (capture/mitm/addon.py) is only an adapter onto these calls.

Time is I/O too: where a caller hands over no timestamp (an SSE event as it is parsed, the end of a response) the
capture reads its injected `clock`, never the system clock, so a test can drive it in memory and know every `t`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from ..tape import records
from ..wire import http, jsonrpc, sse
from .bounded import Bounded, body_limit

if TYPE_CHECKING:  # a replay without --log imports this module, and needs no redactor
    from ..redact.redactor import Redactor

Body = bytes | Bounded  # a body whole, or as a streamed one was kept (a large one cut: capture/bounded.py)


class RecordSink(Protocol):
    def write(self, record: records.Record) -> None: ...


@dataclass
class _Exchange:
    number: int
    mcp: bool
    stream: SSEStream | None = None
    injected: bool = False  # an edit changed what the client got: every later record of it says so


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


Clock = Callable[[], float]  # seconds since the epoch, as time.time


def has_mcp_headers(headers: Sequence[tuple[str, str]]) -> bool:
    """MCP's own request headers: Streamable HTTP after initialize."""
    return bool(http.get(headers, http.SESSION_ID) or http.get(headers, http.PROTOCOL_VERSION))


def looks_like_mcp(method: str, headers: Sequence[tuple[str, str]], body: bytes | jsonrpc.Body) -> bool:
    """A request with MCP's own headers, or a POST of JSON-RPC: what the recorder (with no endpoint named) and
    mitmweb's MCP view take for MCP. `body` as it came, or as jsonrpc.parse read it."""
    if has_mcp_headers(headers):
        return True
    if method != "POST":
        return False
    parsed = body if isinstance(body, jsonrpc.Body) else jsonrpc.parse(body)
    return parsed.is_json and parsed.problem is None


class HttpCapture:
    def __init__(self, sink: RecordSink, redactor: Redactor, scope: Scope, clock: Clock = time.time) -> None:
        self.sink = _Redacting(sink, redactor)
        self.clock = clock
        self.redactor = redactor
        self.scope = scope
        self._exchanges: dict[object, _Exchange] = {}
        self._conns: dict[object, int] = {}
        self._next_exchange = 0
        self._legacy_paths: set[str] = set()
        self.recorded = 0  # exchanges recorded by this run
        self.limit = body_limit()  # a body longer than this is recorded cut, or no reader could read it back

    def start(self, t: float, tool: str, source: dict, first_exchange: int = 0) -> None:
        self._next_exchange = first_exchange
        self.sink.write(records.capture_start(t, tool, source, self.redactor.describe()))

    # -- requests ----------------------------------------------------------------------------------------------

    def request(
        self, key: object, conn: object, t: float, method: str, target: str, headers: list[tuple[str, str]],
        body: Body, body_problem: str | None = None,
    ) -> bool:
        """A request arrived whole. Returns whether it is recorded."""
        split = urlsplit(target)
        path = split.path or "/"
        query = http.query_pairs(target)
        parsed = None  # with no endpoint named, a POST's body is read to tell MCP, and that reading is kept
        if not self.scope.endpoints and method == "POST" and isinstance(body, bytes) and len(body) <= self.limit:
            parsed = jsonrpc.parse(body)
        mcp = self._is_mcp(method, path, headers, body, parsed)
        if not mcp and self.scope.mcp_only and not self.scope.record_all:
            return False
        number = self._next_exchange
        self._next_exchange += 1
        self.recorded += 1
        self._exchanges[key] = _Exchange(number, mcp)
        conn_number = self._conns.setdefault(conn, len(self._conns))
        redacted = self.redactor.headers(headers)
        redacted_query = self.redactor.query(query)
        session = http.get(redacted, http.SESSION_ID)
        if session is None and path in self._legacy_paths:
            session = http.legacy_session(redacted_query)
        fields, text = self._body(body, body_problem, parsed) if mcp or self.scope.record_all else ({}, None)
        self.sink.write(records.http_request(
            t, number, conn_number, method, path, redacted_query, redacted, session,
            http.get(headers, http.PROTOCOL_VERSION), mcp, fields,
        ), text)
        return True

    def _body(self, body: Body, problem: str | None,
              parsed: jsonrpc.Body | None = None) -> tuple[records.Record, bytes | None]:
        """A body's fields, and the bytes they were read from (None when it was cut). `parsed`: the body read."""
        if isinstance(body, bytes) and len(body) > self.limit:
            kept = Bounded(self.limit)
            kept.add(body)
            body = kept
        if isinstance(body, Bounded):
            if not body.cut:
                body = body.whole()
            else:
                fields = body.fields()
                if problem:
                    fields["problem"] += f"; {problem}"
                return fields, None
        return records.body(body, problem, parsed), body

    def _is_mcp(self, method: str, path: str, headers: list[tuple[str, str]], body: Body,
                parsed: jsonrpc.Body | None) -> bool:
        if path in self.scope.endpoints:
            return True
        if self.scope.endpoints:
            return False
        if method == "POST" and (not isinstance(body, bytes) or len(body) > self.limit):
            if has_mcp_headers(headers):
                return True
            first = body.prefix if isinstance(body, Bounded) else body[:1024]  # not parsed: a JSON object is MCP
            return first.lstrip()[:1] == b"{"
        return looks_like_mcp(method, headers, body if parsed is None else parsed) or (
            method == "GET" and http.accepts(headers, http.SSE))

    # -- responses ---------------------------------------------------------------------------------------------

    def response_head(
        self, key: object, t: float, status: int, reason: str, headers: list[tuple[str, str]],
        relocation: Relocation | None = None,
    ) -> SSEStream | None:
        """Response headers arrived. For an SSE response this records the head and returns the stream the body
        chunks go to; otherwise the response is recorded whole by `response`."""
        ex = self._exchanges.get(key)
        if ex is None or http.media_type(http.get(headers, "content-type")) != http.SSE:
            return None
        redacted = self.redactor.headers(headers)
        self._write(ex, records.http_response(
            t, ex.number, status, reason, redacted, http.get(redacted, http.SESSION_ID), {}
        ))
        with_body = ex.mcp or self.scope.record_all
        ex.stream = SSEStream(self, ex, http.get(headers, "content-encoding"), with_body, relocation, self.clock)
        return ex.stream

    def response(
        self, key: object, t: float, status: int, reason: str, headers: list[tuple[str, str]], body: Body,
        body_problem: str | None = None, end: str = records.COMPLETE, detail: str | None = None,
    ) -> None:
        """The response finished (for a streamed one, its last chunk passed). `end`: how the exchange ended, when
        the answer is the recorder's own (a 502 for an unreachable upstream)."""
        ex = self._exchanges.get(key)
        if ex is None:
            return
        if ex.stream is not None:
            ex.stream.close()
        else:
            redacted = self.redactor.headers(headers)
            fields, text = self._body(body, body_problem) if ex.mcp or self.scope.record_all else ({}, None)
            self._write(ex, records.http_response(
                t, ex.number, status, reason, redacted, http.get(redacted, http.SESSION_ID), fields
            ), text)
        self._end(key, self.clock(), end, detail)

    def exchange_number(self, key: object) -> int | None:
        ex = self._exchanges.get(key)
        return ex.number if ex is not None else None

    def stream_of(self, key: object) -> SSEStream | None:
        """The SSE stream `response_head` opened for an exchange, if it did."""
        ex = self._exchanges.get(key)
        return ex.stream if ex is not None else None

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

    def edited(self, key: object, t: float, edits: list[str], detail: str, withheld=None) -> None:
        """Edits fired on this exchange: say so in the tape, and mark what the client gets from now on."""
        ex = self._exchanges.get(key)
        if ex is None:
            return
        ex.injected = True
        self.sink.write(records.edit(t, edits, detail, ex.number, withheld))

    def _write(self, ex: _Exchange, record: records.Record, text: bytes | str | None = None) -> None:
        """`text`: what the record's body fields were read from (the redactor may then know them clean)."""
        if ex.injected:
            record["injected"] = True
        self.sink.write(record, text)

    def _end(self, key: object, t: float, reason: str, detail: str | None = None) -> None:
        ex = self._exchanges.pop(key)
        self._write(ex, records.end(t, ex.number, reason, detail))

    def session_of(self, target: str, headers: list[tuple[str, str]]) -> str | None:
        """The session a request carries (the endpoints learned so far tell a legacy POST)."""
        return http.request_session(headers, target, self.is_legacy(target))

    def is_legacy(self, target: str) -> bool:
        """A POST to a legacy (2024-11-05) message endpoint: its answers come back on the session's channel."""
        return urlsplit(target).path in self._legacy_paths

    def learn_endpoint(self, uri: str) -> str | None:
        """A legacy (2024-11-05) server announced where clients POST: that path is an MCP endpoint too, and its
        query names the session (that transport has no Mcp-Session-Id). Returns the session."""
        split = urlsplit(uri)
        if not split.path:
            return None
        self._legacy_paths.add(split.path)
        if self.scope.endpoints:
            self.scope.endpoints.add(split.path)
        return http.legacy_session(http.query_pairs(uri))


class _Redacting:
    """A sink that redacts each record on its way: bodies, texts and URLs of every kind of record, in one place.
    Headers and query parameters are the exception: the capture redacts them itself, as it reads the session from
    them, so they are not read a second time (redaction is idempotent: the tape is the same). Nor are a body's
    fields when the text they were read from is clean (Redactor.clean): most bodies hold nothing to redact, and
    searching their text costs a fraction of walking their message."""

    _DONE = frozenset({"headers", "query"})
    _CLEAN = _DONE | {"msg", "raw", "data"}  # the fields a body's or an event's text fills (records.body, sse_event)

    def __init__(self, sink: RecordSink, redactor: Redactor) -> None:
        self.sink, self.redactor = sink, redactor

    def write(self, record: records.Record, text: bytes | str | None = None) -> None:
        clean = text is not None and self.redactor.clean(text)
        self.sink.write(self.redactor.record(record, self._CLEAN if clean else self._DONE))


@dataclass(frozen=True)
class Relocation:
    """Reverse mode: an absolute endpoint URL naming the upstream is rewritten to the proxy, or the client would
    POST past the recorder. `upstream` is (scheme, host, port); `proxy` the origin the client used."""

    upstream: tuple[str, str, int]
    proxy: str

    def rewrite(self, uri: str) -> str | None:
        split = urlsplit(uri)
        if not split.scheme or not split.hostname:
            return None  # relative: it already goes where the client went
        default = 443 if split.scheme == "https" else 80
        if (split.scheme, split.hostname, split.port or default) != self.upstream:
            return None
        return self.proxy + uri[len(f"{split.scheme}://{split.netloc}"):]


class SSEStream:
    """One streamed SSE response: chunks in (as they pass to the client), one record per event out.

    Each chunk goes to `record` (parse, write records) and then to `forward`, which returns what to send on: the
    chunk itself, except while a legacy stream's first event (its endpoint) is incomplete and may need relocating;
    those few bytes are held until that event's blank line arrives."""

    _MAX_HOLD = 65536

    def __init__(self, capture: HttpCapture, exchange: _Exchange, encoding: str | None, with_body: bool,
                 relocation: Relocation | None = None, clock: Clock = time.time) -> None:
        self.capture = capture
        self.clock = clock  # each event is stamped when it is complete, which no caller knows
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
        # bytes can only be rewritten when they are what the parser sees
        self.relocation = relocation if with_body and (encoding or "identity") == "identity" else None
        self._holding = self.relocation is not None
        self._held = b""
        self._first_event_done = False
        self._swap: tuple[bytes, bytes] | None = None
        # A live edit that changes events (edits.StreamEditor): the client then gets the edited events, each sent
        # as soon as it is complete, instead of the bytes as they came.
        self.editor = None
        self._edited = b""

    def edit(self, editor) -> bool:
        """Send the client edited events from now on; refused (False) when the bytes are not plain SSE text."""
        if self.decoder is None or self.decoder.encoding not in (None, "", "identity") or not self.with_body:
            return False
        self.editor = editor
        return True

    def forward(self, chunk: bytes) -> bytes | list[bytes]:
        if self.editor is not None:
            out, self._edited = self._edited, b""
            return out or []
        if not chunk:  # end of stream
            return self._release()
        if not self._holding:
            return chunk
        self._held += chunk
        if self._first_event_done or len(self._held) >= self._MAX_HOLD:
            return self._release()
        return []  # an empty list, not b"": mitmproxy must send nothing, not an empty chunk

    def _release(self) -> bytes | list[bytes]:
        held, self._held, self._holding = self._held, b"", False
        if self._swap:
            held = held.replace(*self._swap, 1)
        return held or []

    def record(self, chunk: bytes, injected: bool = False) -> None:
        """`injected`: the chunk is an event an edit made (a replay says so; a proxy only sees bytes)."""
        if not self.with_body or self.closed or not chunk:
            return
        if self.decoder is not None and self.problem is None:
            try:
                self._events(self.parser.feed(self.decoder.decode(chunk)), injected)
                return
            except Exception as e:  # a corrupt compressed stream: keep what passes, raw
                self.problem = f"content-encoding {self.decoder.encoding} could not be decoded: {e}"
        self.capture._write(self.exchange, records.sse_raw(self.clock(), self.exchange.number, chunk,
                                                            self.problem or ""))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.with_body and self.problem is None:
            self._events(self.parser.close())

    def _events(self, events: Iterable[sse.Event], injected: bool = False) -> None:
        for event in events:
            record = records.sse_event(self.clock(), self.exchange.number, event)
            if injected:
                record["injected"] = True
            if event.event == "endpoint" and event.data:
                record["session"] = self.capture.learn_endpoint(event.data)
                if self.relocation and (moved := self.relocation.rewrite(event.data)):
                    self._swap = (event.data.encode(), moved.encode())
                    record["rewritten_to"] = moved
            if self.editor is not None:
                self._edit(record)
            else:
                self.capture._write(self.exchange, record, event.data)
            self._first_event_done = True

    def _edit(self, record: records.Record) -> None:
        editor = self.editor.editor_for(record)
        if editor is None:  # a channel's message no edit is about: as it came (encoded anew, as the others)
            self.capture._write(self.exchange, record)
            self._edited += _encode(record)
            return
        withheld = len(editor.withheld)
        for sent in editor.feed(record):
            if editor is not self.editor:
                sent = {**sent, "injected": True}  # one request's answer on a channel that carries all of them
            self.capture._write(self.exchange, sent)
            self._edited += _encode(sent)
        if len(editor.withheld) > withheld:
            self.capture.sink.write(records.edit(record["t"], editor.plan.texts, editor.notes[-1],
                                                 editor.exchange if editor.exchange is not None else
                                                 self.exchange.number, editor.withheld[withheld:]))


def _encode(record: records.Record) -> bytes:
    """An event as the client gets it: a relocated legacy endpoint names the proxy."""
    event = records.wire_event(record)
    if "rewritten_to" in record:
        event.data = record["rewritten_to"]
    return sse.encode(event)
