"""A tape's HTTP exchanges as a mitmproxy flow file, which `mitmweb -r` and `mitmproxy -r` open: one HTTPFlow per
exchange, in request order (the model groups the records; har.exchanges reads them, for both formats), with the
times the tape holds.

An SSE response becomes the whole stream as its body (the events written out again, in the order they passed), so
mitmweb shows it through the MCP contentview. An exchange that did not end complete gets mitmproxy's own `error`
(why it ended), and one an edit changed says so in the flow's comment. Bodies are the JSON the tape holds, written
out again (a tape keeps parsed JSON, not its bytes).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import BinaryIO
from urllib.parse import urlsplit

from mitmproxy import connection, io
from mitmproxy import flow as mflow
from mitmproxy import http as mhttp

from . import har
from ..tape import records

LOOPBACK = ("127.0.0.1", 0)  # a tape does not keep the client's address
# Flow and connection ids are derived from the flow's place in the file, not drawn at random (mitmproxy's default),
# so the same tape exports to the same bytes.
_IDS = uuid.UUID("6d637074-6170-6520-666c-6f7769647321")


def _id(what: str, n: object) -> str:
    return str(uuid.uuid5(_IDS, f"{what}/{n}"))


def _headers(pairs) -> mhttp.Headers:
    return mhttp.Headers([(str(k).encode(), str(v).encode()) for k, v in pairs or []])


def _set_body(message: mhttp.Message, body: bytes) -> None:
    """The tape holds bodies decoded: encode them again where the headers say they were encoded on the wire."""
    if message.headers.get("content-encoding"):
        message.set_content(body)
    else:
        message.raw_content = body


def _split_host(authority: str, scheme: str) -> tuple[str, int]:
    split = urlsplit(f"//{authority}")
    try:
        port = split.port
    except ValueError:  # a Host header that names no port we could connect to
        port = None
    return split.hostname or "localhost", port or (443 if scheme == "https" else 80)


def _flow(exchange: har.Exchange, clients: dict, n: int) -> mhttp.HTTPFlow:
    q = exchange.request
    started = har._seconds(q)
    host, port = _split_host(exchange.authority, exchange.scheme)
    client = clients.get(q.get("conn"))
    if client is None:
        client = clients[q.get("conn")] = connection.Client(peername=LOOPBACK, sockname=LOOPBACK,
                                                            timestamp_start=started)
        client.id = _id("client", len(clients))
    server = connection.Server(address=(host, port), timestamp_start=started, timestamp_tcp_setup=started)
    server.id = _id("server", n)
    flow = mhttp.HTTPFlow(client, server)
    flow.id = _id("flow", n)
    flow.timestamp_created = started
    flow.request = mhttp.Request(host, port, str(q.get("method", "")).encode(), exchange.scheme.encode(), b"",
                                 exchange.target.encode(), b"HTTP/1.1", _headers(q.get("headers")), None, None,
                                 started, started)
    _set_body(flow.request, har.body_bytes(q))
    r = exchange.response
    if r is not None:
        flow.response = mhttp.Response(b"HTTP/1.1", int(r.get("status", 0)), str(r.get("reason") or "").encode(),
                                       _headers(r.get("headers")), None, None, har._seconds(r, started),
                                       exchange.last_t)
        _set_body(flow.response, b"".join(exchange.stream) if exchange.stream else har.body_bytes(r))
    end = exchange.end or {}
    if end.get("reason") != records.COMPLETE:
        reason = end.get("reason", "not ended in the tape")
        flow.error = mflow.Error(str(end.get("detail") or reason), har._seconds(end, exchange.last_t))
    notes = [f"mcptape exchange {q.get('exchange')}, ended {end.get('reason', 'not ended in the tape')}"]
    if any(x.get("injected") for x in (q, r or {}, *exchange.events, end)):
        notes.append("an mcptape edit changed what the client got")
    flow.comment = "; ".join(notes)
    return flow


def flows(items: Iterable[dict]) -> Iterator[mhttp.HTTPFlow]:
    """A tape's exchanges as flows, in request order. Raises har.NotHttp for a stdio tape."""
    clients: dict = {}
    for n, exchange in enumerate(har.exchanges(items)):
        yield _flow(exchange, clients, n)


def write(items: Iterable[dict], out: BinaryIO) -> int:
    """Write the flows; returns how many."""
    writer = io.FlowWriter(out)
    n = 0
    for flow in flows(items):
        writer.add(flow)
        n += 1
    return n
