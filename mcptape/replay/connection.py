"""One client connection of the HTTP replay, and how an answer goes out on it: httptools' C parser, requests
answered in order (HTTP/1.1 pipelining), status lines, chunked SSE, each part recorded into the `--log` tape as it
goes. Nothing here knows MCP beyond reading a request's body with the one JSON-RPC parser.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Coroutine
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import httptools

from .. import edits
from ..tape import json_form, records
from ..wire import http, jsonrpc, sse

if TYPE_CHECKING:  # the capture core is loaded only for a --log (replay/__init__.serving): start-up time
    from ..capture.http import HttpCapture, SSEStream

Pace = Callable[[float], float]  # recorded gap (s) -> how long to wait
# a server-initiated request just sent on a stream -> until the client has answered it (None: no waiting)
Answered = Callable[[dict], Awaitable[None]] | None


@functools.cache
def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Status"


@functools.cache
def _status_line(status: int) -> bytes:
    return f"HTTP/1.1 {status} {_reason(status)}\r\n".encode()


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    return _status_line(status) + b"".join(f"{k}: {v}\r\n".encode() for k, v in headers) + b"\r\n"


def json_bytes(value: Any) -> bytes:
    return json_form.dumps(value).encode()


_LAST_CHUNK = b"0\r\n\r\n"


class Request:
    __slots__ = ("method", "target", "headers", "body", "_json")

    def __init__(self) -> None:
        self.method = ""
        self.target = ""
        self.headers: list[tuple[str, str]] = []
        self.body = b""
        self._json: tuple[Any, str | None] | None = None

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    def json(self) -> tuple[Any, str | None]:
        """The body as the one JSON-RPC parser reads it, once for everything that asks (the edits, the session
        check, the answer): (the value, None), or (None, why it is not JSON). Whether it is well-formed JSON-RPC is
        the log's to say, not the replay's."""
        if self._json is None:
            try:
                self._json = (jsonrpc.loads(self.body), None)
            except (ValueError, RecursionError) as e:
                self._json = (None, str(e))
        return self._json

    @property
    def message(self) -> Any:
        """What a POST carried (a JSON-RPC message, a batch, any JSON), else None."""
        return self.json()[0] if self.method == "POST" else None


class Exchange:
    """One request and the answer going out for it on its connection, each part recorded into the log as it goes
    (by the capture core `mcptape record` uses). `key` numbers the request for the log."""

    __slots__ = ("conn", "key", "log")

    def __init__(self, conn: Connection, key: int, log: HttpCapture | None) -> None:
        self.conn = conn
        self.key = key
        self.log = log

    def send(self, status: int, headers: list, body: bytes) -> None:
        headers = [*headers, ("content-length", str(len(body)))]
        self.conn.write(_head(status, headers) + body)
        if self.log is not None:
            self.log.response(self.key, time.time(), status, _reason(status), headers, body)

    def send_body(self, status: int, headers: list, msg: Any, raw: bytes | None) -> None:
        """A JSON body (typed as JSON unless the headers say otherwise), or the raw bytes one was recorded as, or
        nothing."""
        if msg is not None:
            body = records.message_text(msg).encode()
            if not any(k.lower() == "content-type" for k, _ in headers):
                headers = [*headers, ("content-type", http.JSON)]
        else:
            body = raw if raw is not None else b""
        self.send(status, headers, body)

    def write_events(self, status: int, headers: list, events: list[dict], encoded: dict) -> None:
        """The head and every event at once (nothing to wait for): one send, held for the stream's end. Events
        found in `encoded` (a recorded answer's, Answer.encoded) are not encoded again."""
        stream = self._stream_head(status, headers)
        self.conn.pending = _head(status, [*headers, ("transfer-encoding", "chunked")]) + b"".join(
            chunk(record, stream, _from_encoded(record, encoded)) for record in events)

    async def send_events(self, status: int, headers: list, events: list[dict], start: float, pace: Pace | None,
                          answered: Answered = None) -> None:
        """The head and every event, at the recorded pace; after a server-initiated request (sampling,
        elicitation, roots) it waits until the client has `answered`, as the recorded server did. The caller
        decides how the stream ends. Events that go out together are written together: one send, not one per
        event."""
        conn = self.conn
        out = [_head(status, [*headers, ("transfer-encoding", "chunked")])]
        stream = self._stream_head(status, headers)
        previous = start
        for record in events:
            if pace is not None and record.get("t"):
                conn.write(b"".join(out))
                out = []
                await asyncio.sleep(pace(max(0.0, record["t"] - previous)))
                previous = record["t"]
            if conn.closed:
                break
            out.append(chunk(record, stream))
            if answered is not None and server_request(record):
                conn.write(b"".join(out))
                out = []
                await answered(record["msg"])
        conn.pending = b"".join(out)  # the caller adds the stream's end and sends it all at once

    def emit(self, events: list[dict]) -> None:
        """More events on this exchange's open stream (a legacy channel, a standalone GET stream)."""
        stream = self.log.stream_of(self.key) if self.log is not None else None
        self.conn.write(b"".join(chunk(record, stream) for record in events))

    def finish(self, status: int, headers: list, end: str | None) -> None:
        """End the stream as the recorded one ended: cleanly, or by dropping the connection (a server that
        expected a Last-Event-ID resume, or one that died)."""
        if end in (None, records.COMPLETE, records.CLIENT_DISCONNECTED, records.PROXY_STOPPED):
            self.conn.write(_LAST_CHUNK)
            if self.log is not None:
                self.log.response(self.key, time.time(), status, _reason(status), headers, b"")
        else:
            self.abort(f"replayed as recorded: {end}")

    async def stay_open(self, done: asyncio.Event, status: int | None, headers: list) -> None:
        """Keep a stream (or a request with no response yet) open until `done` (the session ended) or the client
        leaves."""
        conn = self.conn
        conn.flush()
        conn.on_close.append(done.set)
        await done.wait()
        if conn.closed:
            self.failed(records.CLIENT_DISCONNECTED)
        elif status is None:  # no response was started: all we can do is hang up
            self.abort("the session ended")
        else:
            conn.write(_LAST_CHUNK)
            if self.log is not None:
                self.log.response(self.key, time.time(), status, _reason(status), headers, b"")

    def abort(self, why: str) -> None:
        """Drop the connection: to the client, the server went away."""
        self.conn.abort()
        self.failed(records.UPSTREAM_RESET, why)

    def failed(self, reason: str, detail: str | None = None) -> None:
        if self.log is not None:
            self.log.failed(self.key, time.time(), reason, detail)

    def edited(self, plan: edits.Plan, effect: edits.Effect | edits.EditedEvents) -> None:
        if self.log is not None:
            self.log.edited(self.key, time.time(), plan.texts, effect.detail, effect.withheld or None)

    def noted(self, what: str, detail: str) -> None:
        """Something the replay made up on its own (no user edit): logged as an edit record naming `what`, so the
        answer is known to be mcptape's."""
        if self.log is not None:
            self.log.edited(self.key, time.time(), [what], detail)

    def _stream_head(self, status: int, headers: list) -> SSEStream | None:
        if self.log is None:
            return None
        return self.log.response_head(self.key, time.time(), status, _reason(status), headers)


async def then(first: Awaitable, after: Callable[[], Coroutine | None]) -> None:
    """Await `first`, then run `after`, and await what it returns, if anything: an answer that starts late."""
    await first
    pending = after()
    if pending is not None:
        await pending


def chunk(record: dict, stream: SSEStream | None, encoded: bytes | None = None) -> bytes:
    """One SSE event record as an HTTP chunk; recorded into the log's stream as it goes."""
    data = encoded or sse.encode(records.wire_event(record))
    if stream is not None:
        stream.record(data, record.get("injected", False))
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _from_encoded(record: dict, encoded: dict) -> bytes | None:
    msg = record.get("msg")
    if msg is None:
        return encoded.get(id(record))
    found = encoded.get(id(msg.get("result", msg.get("error")))) if isinstance(msg, dict) else None
    return None if found is None else found[0] + json_form.dumps(msg["id"]).encode() + found[1]


def server_request(record: dict) -> bool:
    """An SSE event carrying a request of the server's own (sampling, elicitation, roots)."""
    return jsonrpc.kind(record.get("msg")) == "request"


class Connection(asyncio.Protocol):
    """One client connection: each complete request goes to `handle`, which writes its answer at once or returns
    a coroutine that finishes it; those run one at a time, in order."""

    def __init__(self, handle: Callable[[Request, Connection], Coroutine | None]) -> None:
        self.handle = handle
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.current = Request()
        # requests (and answers still going out) wait here while an earlier answer is still going out
        self.queue: asyncio.Queue[Request | Coroutine | None] = asyncio.Queue()
        self.busy = False
        self.closed = False
        self.on_close: list[Callable[[], None]] = []
        self.worker: asyncio.Task | None = None
        self.keep_alive = True
        self.pending = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.worker = asyncio.get_running_loop().create_task(self._work())

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.write(_head(400, [("content-length", "0"), ("connection", "close")]))
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for callback in self.on_close:
            callback()
        self.queue.put_nowait(None)

    # httptools callbacks
    def on_url(self, url: bytes) -> None:
        self.current.target += url.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.current.headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_body(self, body: bytes) -> None:
        self.current.body += body

    def on_message_complete(self) -> None:
        req, self.current = self.current, Request()
        req.method = self.parser.get_method().decode()
        self.keep_alive = self.parser.should_keep_alive()
        if self.busy:  # an earlier answer is still going out: this request waits its turn (HTTP/1.1 order)
            self.queue.put_nowait(req)
            return
        pending = self._handle(req)  # most answers are written right here, with no task switch
        if pending is not None:
            self.busy = True
            self.queue.put_nowait(pending)
        elif not self.keep_alive:
            self.transport.close()

    def write(self, data: bytes) -> None:
        """Send `data`, after anything `pending` (the events of a stream, held to go out with its end)."""
        if self.pending:
            data, self.pending = self.pending + data, b""
        if data and not self.closed and self.transport is not None:
            self.transport.write(data)

    def flush(self) -> None:
        self.write(b"")

    def abort(self) -> None:
        if self.transport is not None:
            if self.pending and not self.closed:
                self.transport.write(self.pending)
            self.pending = b""
            self.transport.abort()

    def _handle(self, req: Request) -> Coroutine | None:
        try:
            return self.handle(req, self)
        except Exception as e:
            self._failed(e)
            return None

    def _failed(self, e: Exception) -> None:
        """A replay bug must not hang the client: answer 500 and say why."""
        body = f"mcptape replay failed: {type(e).__name__}: {e}".encode()
        self.write(_head(500, [("content-type", "text/plain"), ("content-length", str(len(body)))]) + body)

    async def _work(self) -> None:
        # what could not be answered at once, one at a time per connection, in order (HTTP/1.1 pipelining)
        while (item := await self.queue.get()) is not None:
            if isinstance(item, Request):
                item = self._handle(item)
            if item is not None:
                try:
                    await item
                except Exception as e:
                    self._failed(e)
            if not self.keep_alive:
                self.transport.close()
                break
            self.busy = not self.queue.empty()
