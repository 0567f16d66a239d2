"""Recording through the real mitmproxy against an upstream that misbehaves on purpose (tests/rawserver.py)."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import threading
import time
from urllib.parse import urlsplit

import brotli
import pytest

from mcptape.tape.file import read

from .conftest import by_exchange, records_so_far, wait_until
from .rawserver import RawServer

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'


@pytest.fixture
def raw():
    server = RawServer()
    yield server
    server.close()


def request(url: str, behaviour: str, body: bytes = INIT, method: str = "POST", headers: dict | None = None):
    split = urlsplit(url)
    conn = http.client.HTTPConnection(split.hostname, split.port, timeout=30)
    target = split.path + (f"?{split.query}" if split.query else "")
    conn.request(method, target, body=body if method == "POST" else None, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Accept-Encoding": "gzip, br", "X-Behaviour": behaviour, **(headers or {})})
    response = conn.getresponse()
    return conn, response


def fetch(url: str, behaviour: str, body: bytes = INIT, headers: dict | None = None) -> tuple[int, bytes]:
    conn, response = request(url, behaviour, body, headers=headers)
    data = response.read()
    conn.close()
    return response.status, data


def test_sse_is_streamed_event_by_event_while_recorded(raw, record):
    """The upstream sends event k+1 only after our client has event k: a buffering proxy would deadlock."""
    rec = record(raw.url)
    conn, response = request(rec.url, "lockstep")
    received = {}
    while True:
        line = response.readline()
        if not line:
            break
        if line.startswith(b"id: "):
            k = int(line[4:])
            received[k] = time.time()
            raw.acks.setdefault(k, threading.Event()).set()
    conn.close()
    assert raw.timeouts == 0, "the proxy held an event back"
    assert sorted(received) == [1, 2, 3, 4, 5]
    for k in range(1, 5):
        assert received[k] < raw.emitted[k + 1]
    code, _, err = rec.stop()
    assert code == 0, err
    events = [r for r in read(rec.tape).records if r["kind"] == "sse.event" and "id" in r]
    assert [int(e["id"]) for e in events] == [1, 2, 3, 4, 5]
    # each event was recorded as it passed, before the server sent the next one
    for k in range(1, 5):
        assert events[k - 1]["t"] <= raw.emitted[k + 1]


BAD = [
    ("not-json", lambda s, d: s == 200 and d == b"<html>oops</html>",
     lambda recs: recs[1]["raw"] == b"<html>oops</html>" and "not JSON" in recs[1]["problem"]),
    ("binary", lambda s, d: len(d) == 10 * 1024 * 1024,
     lambda recs: len(recs[1]["raw"]) == 10 * 1024 * 1024 and "problem" in recs[1]),
    ("gzip-json", lambda s, d: json.loads(gzip.decompress(d))["result"] == {"zipped": True},  # forwarded as sent
     lambda recs: recs[1]["msg"]["result"] == {"zipped": True}),
    ("br-json", lambda s, d: json.loads(brotli.decompress(d))["result"] == {"br": True},
     lambda recs: recs[1]["msg"]["result"] == {"br": True}),
    ("bad-gzip", lambda s, d: s == 200,
     lambda recs: recs[1]["raw"] == b"this is not gzip" and "could not be decoded" in recs[1]["problem"]),
    ("gzip-sse", lambda s, d: s == 200,
     lambda recs: [r["msg"]["params"]["progress"] for r in recs if r["kind"] == "sse.event"] == [1, 2]),
    ("broken-sse", lambda s, d: s == 200,
     lambda recs: [(r.get("msg"), r.get("data"), "problem" in r) for r in recs if r["kind"] == "sse.event"] == [
         (None, None, False),  # the comment-only block
         ({"jsonrpc": "2.0", "id": 1, "result": {}}, None, True),  # bad retry named
         (None, "not json at all", True),
         (None, '{"trailing": tru', True),  # cut off before its blank line
     ]),
]


@pytest.mark.parametrize("behaviour, client_ok, tape_ok", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_forwarded_and_recorded(raw, record, behaviour, client_ok, tape_ok):
    rec = record(raw.url)
    status, data = fetch(rec.url, behaviour)
    assert client_ok(status, data)
    # the proxy still serves the next client
    assert fetch(rec.url, "echo", b'{"jsonrpc":"2.0","id":2,"method":"ping"}')[0] == 200
    code, _, err = rec.stop()
    assert code == 0, err
    first = by_exchange(read(rec.tape))[0]
    assert first[0]["kind"] == "http.request" and first[0]["msg"]["method"] == "initialize"
    assert tape_ok(first), first
    assert first[-1]["kind"] == "end" and first[-1]["reason"] == "complete"


def test_invalid_request_bodies_are_kept_raw_with_the_reason(raw, record):
    rec = record(raw.url)
    for body in (b"{not json", b'{"jsonrpc":"2.0","id":null,"method":"x"}', b"\xff\xfe\x00"):
        assert fetch(rec.url, "echo", body)[0] == 200
    rec.stop()
    requests = [r for r in read(rec.tape).records if r["kind"] == "http.request"]
    assert requests[0]["raw"] == b"{not json" and "not JSON" in requests[0]["problem"]
    assert requests[1]["msg"]["id"] is None and "id must be" in requests[1]["problem"]
    assert requests[2]["raw"] == b"\xff\xfe\x00" and "UTF-8" in requests[2]["problem"]


def test_upstream_dying_mid_stream_is_recorded_as_upstream_reset(raw, record):
    rec = record(raw.url)
    conn, response = request(rec.url, "die-mid-stream")
    with pytest.raises(http.client.IncompleteRead):
        response.read()
    conn.close()
    assert fetch(rec.url, "echo")[0] == 200
    rec.stop()
    first = by_exchange(read(rec.tape))[0]
    events = [r for r in first if r["kind"] == "sse.event"]
    assert events[0]["msg"]["params"]["progress"] == 1
    assert events[1]["data"] == "half an ev" and "blank line" in events[1]["problem"]
    assert first[-1]["kind"] == "end" and first[-1]["reason"] == "upstream-reset"


def test_client_leaving_mid_stream_is_recorded_as_client_disconnected(raw, record):
    rec = record(raw.url)
    conn, response = request(rec.url, "endless")
    assert response.readline()  # the stream is flowing
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    # the proxy has noticed the client left (the exchange ended) before it is stopped, which would end it too
    wait_until(lambda: any(r["kind"] == "end" and r["exchange"] == 0 for r in records_so_far(rec.tape)),
               what="the end of the abandoned stream in the tape")
    assert fetch(rec.url, "echo")[0] == 200
    rec.stop()
    first = by_exchange(read(rec.tape))[0]
    assert first[-1]["kind"] == "end" and first[-1]["reason"] == "client-disconnected", first[-1]


def test_an_absolute_legacy_endpoint_is_relocated_to_the_proxy(raw, record):
    """Otherwise the client would POST straight to the server, past the recorder."""
    rec = record(raw.url.replace("/mcp", "/sse"))
    conn, response = request(rec.url, "absolute-endpoint", method="GET", headers={"Accept": "text/event-stream"})
    stream = response.read().decode()
    conn.close()
    proxy_origin = rec.url.split("/sse")[0]
    assert f"data: {proxy_origin}/messages/?session_id=abc123\r\n" in stream
    assert f"127.0.0.1:{raw.port}" not in stream
    post = proxy_origin + "/messages/?session_id=abc123"
    assert fetch(post, "echo", b'{"jsonrpc":"2.0","id":5,"method":"tools/list"}')[0] == 200
    rec.stop()
    records = read(rec.tape).records
    endpoint = next(r for r in records if r.get("event") == "endpoint")
    assert endpoint["data"] == f"http://127.0.0.1:{raw.port}/messages/?session_id=abc123"  # what the server said
    assert endpoint["rewritten_to"] == post and endpoint["session"] == "abc123"
    posted = [r for r in records if r["kind"] == "http.request" and r["path"] == "/messages/"]
    assert posted[0]["mcp"] and posted[0]["msg"]["method"] == "tools/list" and posted[0]["session"] == "abc123"
