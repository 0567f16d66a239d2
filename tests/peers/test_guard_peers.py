"""Replay and record refuse a foreign Host (421) and Origin (403), serve loopback, and the SDK server behind the
recorder still sees its own host (it would answer 421 otherwise)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import anyio

from mcptape.demo.client import script
from mcptape.replay import replaying
from mcptape.tape.file import read

from ..conftest import stop

INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}})


def post(url: str, **headers: str) -> tuple[int, bytes]:
    """One initialize POST with these headers (Host among them, as a rebinding page's browser sends it)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.putrequest("POST", parts.path, skip_host="Host" in headers)
        for name, value in {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                            **headers}.items():
            conn.putheader(name, value)
        body = INIT.encode()
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def assert_guarded(url: str) -> None:
    port = urlsplit(url).port
    assert post(url, Host=f"evil.example:{port}")[0] == 421
    status, body = post(url, Origin="http://evil.example")
    assert status == 403 and json.loads(body)["error"]["message"].startswith("Forbidden")
    assert post(url, Origin="null")[0] == 403
    assert post(url, Host=f"localhost:{port}", Origin=f"http://localhost:{port}")[0] == 200


def test_replay_refuses_foreign_host_and_origin(real_tapes):
    with replaying(real_tapes["session"]) as url:
        assert_guarded(url)
        assert anyio.run(script, url, "legacy")  # the SDK client is served as before
    with replaying(real_tapes["session"], allow_hosts=("rebind.example",), allow_origins=("null",)) as url:
        assert post(url, Host="rebind.example")[0] == 200
        assert post(url, Origin="null")[0] == 200


def test_recorder_refuses_before_forwarding_and_the_upstream_sees_its_own_host(demo_server, record):
    upstream = demo_server()
    rec = record(upstream)
    assert_guarded(rec.url)
    assert anyio.run(script, rec.url, "legacy")
    code, _, err = rec.stop()
    assert code == 0, err
    assert err.count("not allowed") == 1  # said once, not once per request
    tape = read(rec.tape)
    statuses = [r["status"] for r in tape.records if r["kind"] == "http.response"]
    assert statuses and 421 not in statuses and 403 not in statuses  # refusals are neither forwarded nor recorded
    hosts = {v for r in tape.records if r["kind"] == "http.request" for k, v in r["headers"] if k.lower() == "host"}
    assert hosts == {urlsplit(upstream).netloc}  # what the upstream saw: its own host


def test_recorder_allow_host_widens_it(demo_server, record):
    rec = record(demo_server(), "--allow-host", "rebind.example")
    try:
        assert post(rec.url, Host="rebind.example")[0] == 200  # accepted here, and the upstream saw its own host
    finally:
        stop(rec.proc)


def test_regular_mode_forwards_only_to_allowed_destinations(demo_server, record):
    import urllib.error
    import urllib.request

    upstream = demo_server()
    port = urlsplit(upstream).port
    rec = record(None, "--mode", "regular", "--allow-dest", f"127.0.0.1:{port}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": rec.url}))

    def status(url: str) -> int:
        request = urllib.request.Request(url, INIT.encode(), {"Content-Type": "application/json",
                                                              "Accept": "application/json, text/event-stream"})
        try:
            with opener.open(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as e:
            return e.code

    assert status(upstream) == 200
    assert status(f"http://127.0.0.1:{port + 1 if port < 65535 else port - 1}/mcp") == 403
    code, out, err = rec.stop()
    assert f"forwards only to 127.0.0.1:{port}" in out, out


def test_regular_mode_says_it_forwards_anywhere(record):
    rec = record(None, "--mode", "regular")
    code, out, _ = rec.stop()
    assert "forwards to any host:port" in out
