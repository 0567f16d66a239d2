"""A misbehaving HTTP upstream for the bad-input tests: real sockets, a scripted reply per `X-Behaviour` header.

The SDK server is too well-behaved to send broken SSE, bad encodings or die mid-stream, so this one does it on
purpose. It runs its own asyncio loop in a thread, so a test can coordinate with it (the lockstep behaviour waits
for the test's client to acknowledge each event before sending the next).
"""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
from collections.abc import Callable

import brotli

SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"


def _event(i: int) -> bytes:
    return f'id: {i}\nevent: message\ndata: {{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":1,"progress":{i}}}}}\n\n'.encode()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class RawServer:
    def __init__(self) -> None:
        self.port = 0
        self.acks: dict[int, threading.Event] = {}
        self.emitted: dict[int, float] = {}  # event number -> time the server wrote it
        self.timeouts = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def close(self) -> None:
        """Stop, with every connection's handler ended first: left pending, each would run its `finally` when
        collected, on a closed loop (a warning in whichever test runs then)."""
        async def finish() -> None:
            self._server.close()
            handlers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for handler in handlers:
                handler.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(finish(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:] if l)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                behaviour = BEHAVIOURS.get(headers.get("x-behaviour", "echo"), BEHAVIOURS["echo"])
                if await behaviour(self, writer, body) == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def _json(server: RawServer, writer: asyncio.StreamWriter, body: bytes, ctype=b"application/json",
                extra: bytes = b"") -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\n" + extra
                 + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    await writer.drain()


async def echo(server, writer, body):
    await _json(server, writer, body or b'{"jsonrpc":"2.0","id":1,"result":{}}')


async def not_json(server, writer, body):
    await _json(server, writer, b"<html>oops</html>", b"text/html")


async def binary(server, writer, body):
    # bytes no secret shape can match (all non-ASCII): random bytes hold a `pin=…` or `://a:b@` now and then, and
    # redaction (rightly) rewrites it, which made this test fail about once in thirty runs
    await _json(server, writer, bytes(range(128, 256)) * (10 * 1024 * 1024 // 128), b"application/octet-stream")


async def gzip_json(server, writer, body):
    await _json(server, writer, gzip.compress(b'{"jsonrpc":"2.0","id":1,"result":{"zipped":true}}'),
                extra=b"Content-Encoding: gzip\r\n")


async def br_json(server, writer, body):
    await _json(server, writer, brotli.compress(b'{"jsonrpc":"2.0","id":1,"result":{"br":true}}'),
                extra=b"Content-Encoding: br\r\n")


async def bad_gzip(server, writer, body):
    await _json(server, writer, b"this is not gzip", extra=b"Content-Encoding: gzip\r\n")


async def _sse(writer, parts: list[bytes], extra: bytes = b"", end: bool = True) -> None:
    writer.write(SSE_HEAD + extra + b"Transfer-Encoding: chunked\r\n\r\n")
    for part in parts:
        writer.write(_chunk(part))
        await writer.drain()
        await asyncio.sleep(0.01)
    if end:
        writer.write(b"0\r\n\r\n")
        await writer.drain()


async def broken_sse(server, writer, body):
    await _sse(writer, [b": comment\r", b"\rretry: soon\rdata: {\"jsonrpc\":\"2.0\",\"id\":1,\"res", b"ult\":{}}\r\r",
                        b"data: not json at all\n\n", b"event: message\ndata: {\"trailing\": tru"])


async def gzip_sse(server, writer, body):
    packer = gzip.compress(_event(1) + _event(2))
    await _sse(writer, [packer[:10], packer[10:]], extra=b"Content-Encoding: gzip\r\n")


async def die_mid_stream(server, writer, body):
    await _sse(writer, [_event(1), b"data: half an ev"], end=False)
    return "close"


async def endless(server, writer, body):
    writer.write(SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
    for i in range(600):
        writer.write(_chunk(_event(i)))
        await writer.drain()
        await asyncio.sleep(0.05)
    return "close"


async def lockstep(server, writer, body):
    """Send event k only after the client has acknowledged event k-1."""
    writer.write(SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
    for i in range(1, 6):
        server.emitted[i] = time.time()
        writer.write(_chunk(_event(i)))
        await writer.drain()
        ack = server.acks.setdefault(i, threading.Event())
        if not await asyncio.to_thread(ack.wait, 10):
            server.timeouts += 1
            break
    writer.write(_chunk(b'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n') + b"0\r\n\r\n")
    await writer.drain()


async def absolute_endpoint(server, writer, body):
    """A legacy server that announces its POST endpoint as an absolute URL naming itself."""
    endpoint = f"http://127.0.0.1:{server.port}/messages/?session_id=abc123"
    await _sse(writer, [f"event: endpoint\r\ndata: {endpoint}\r\n\r\n".encode(),
                        b'event: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\r\n\r\n'])


async def init_session(server, writer, body):
    """Answer like a session-era server: the result of initialize, with a session id."""
    await _json(server, writer, b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},'
                b'"serverInfo":{"name":"raw","version":"0"}}}', extra=b"Mcp-Session-Id: s-1\r\n")


async def stale_401(server, writer, body):
    """Seed 001: a stale session answered with 401 instead of 404."""
    text = b"Unauthorized: Session not found"
    writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\n"
                 + f"Content-Length: {len(text)}\r\n\r\n".encode() + text)
    await writer.drain()


async def gone_404(server, writer, body):
    text = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}'
    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(text)}\r\n\r\n".encode() + text)
    await writer.drain()


async def accepted(server, writer, body):
    writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    await writer.drain()


async def no_answer(server, writer, body):
    """An SSE stream that ends cleanly without the response, and without an event id: nothing a client could resume
    (a stream closed after an id is one 2025-11-25 lets the client resume: then the answer waits on the client)."""
    await _sse(writer, [b'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n'])


async def get_response(server, writer, body):
    """A GET stream (not a resume) that carries a response."""
    await _sse(writer, [b'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n'])


BEHAVIOURS: dict[str, Callable] = {
    "echo": echo, "not-json": not_json, "binary": binary, "gzip-json": gzip_json, "br-json": br_json,
    "bad-gzip": bad_gzip, "broken-sse": broken_sse, "gzip-sse": gzip_sse, "die-mid-stream": die_mid_stream,
    "endless": endless, "lockstep": lockstep, "absolute-endpoint": absolute_endpoint,
    "init-session": init_session, "stale-401": stale_401, "gone-404": gone_404, "accepted": accepted,
    "no-answer": no_answer, "get-response": get_response,
}
