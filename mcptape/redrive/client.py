"""A small HTTP/1.1 client on asyncio streams and h11 (already a dependency, through mitmproxy): a request out, the
response head, then the body chunk by chunk as it arrives (an SSE stream is read as it is sent). Connections that
finished a request cleanly are kept for the next one."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import h11

_READ = 65536


class Unreachable(Exception):
    """The server could not be connected to."""


@dataclass
class Head:
    status: int
    reason: str
    headers: list[tuple[str, str]]


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.CLIENT)

    async def next_event(self):
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(await self.reader.read(_READ))

    def close(self) -> None:
        self.writer.close()


class Response:
    """One response being read. `chunks()` yields its body as it arrives; `close()` hangs up (a stream still open
    is abandoned: the server sees the client disconnect)."""

    def __init__(self, client: Client, origin: tuple, conn: _Connection, head: Head) -> None:
        self._client, self._origin, self._conn, self.head = client, origin, conn, head
        self.done = False

    async def chunks(self) -> AsyncIterator[bytes]:
        conn = self._conn
        while not self.done:
            try:
                event = await conn.next_event()
            except h11.ProtocolError as e:  # the server broke off mid-body
                conn.close()
                self._conn = None
                raise ConnectionResetError(f"the server broke off the response: {e}") from None
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                self.done = True
        self._release()

    def _release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE:
            conn.h11.start_next_cycle()
            self._client._idle.setdefault(self._origin, []).append(conn)
        else:
            conn.close()

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            if self.done:
                self._conn = conn
                self._release()
            else:
                conn.close()


class Client:
    def __init__(self, verify_tls: bool = True) -> None:
        self._idle: dict[tuple, list[_Connection]] = {}
        self._ssl = ssl.create_default_context() if verify_tls else _insecure()

    async def _connect(self, origin: tuple) -> _Connection:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()
            if not conn.reader.at_eof():
                return conn
            conn.close()
        scheme, host, port = origin
        try:
            reader, writer = await asyncio.open_connection(host, port, ssl=self._ssl if scheme == "https" else None)
        except ssl.SSLError as e:
            raise Unreachable(f"TLS with {host}:{port} failed: {e.reason or e} (--insecure skips the certificate "
                              f"check)") from None
        except OSError as e:
            raise Unreachable(f"cannot connect to {host}:{port}: {e.strerror or e}") from None
        return _Connection(reader, writer)

    async def probe(self, url: str) -> None:
        """Connect (TLS too) and keep the connection for the first request; raises Unreachable."""
        origin = _origin(urlsplit(url))
        self._idle.setdefault(origin, []).append(await self._connect(origin))

    async def request(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes = b"") -> Response:
        split = urlsplit(url)
        origin = _origin(split)
        target = (split.path or "/") + (f"?{split.query}" if split.query else "")
        conn = await self._connect(origin)
        out = [("host", split.netloc), *headers]
        if body or method == "POST":
            out.append(("content-length", str(len(body))))
        try:
            data = conn.h11.send(h11.Request(method=method, target=target, headers=out))
            if body:
                data += conn.h11.send(h11.Data(data=body))
            data += conn.h11.send(h11.EndOfMessage())
            conn.writer.write(data)
            event = await conn.next_event()
            while isinstance(event, h11.InformationalResponse):
                event = await conn.next_event()
        except (OSError, h11.ProtocolError) as e:
            conn.close()
            raise Unreachable(f"{method} {url}: {e}") from None
        if isinstance(event, h11.ConnectionClosed):
            conn.close()
            raise Unreachable(f"{method} {url}: the server closed the connection without answering")
        head = Head(event.status_code, event.reason.decode("latin-1"),
                    [(k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers])
        return Response(self, origin, conn, head)

    def close(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()


def _origin(split) -> tuple[str, str, int]:
    return split.scheme, split.hostname, split.port or (443 if split.scheme == "https" else 80)


def _insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
