"""Recording real sessions: the official SDK client and server, the real mitmproxy, `mcptape record` as a user runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcptape.demo.client import script
from mcptape.tape.file import read

from .conftest import by_exchange, free_port, loud_findings, get_stream_open, run_mcptape, stop, wait_for_port


def messages(tape, direction: str) -> list[dict]:
    """Every JSON-RPC message of one direction, in tape order."""
    out = []
    for r in tape.records:
        if r.get("dir") == direction and "msg" in r:
            out += r["msg"] if isinstance(r["msg"], list) else [r["msg"]]
    return out


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_proxied_session_equals_direct_and_the_tape_holds_it_all(demo_server, record, mode):
    upstream = demo_server("--event-store")
    direct = anyio.run(script, upstream, mode)
    rec = record(upstream)
    proxied = anyio.run(script, rec.url, mode)
    code, _, err = rec.stop()
    assert code == 0, err
    assert proxied == direct
    assert "exchanges to" in err

    tape = read(rec.tape)
    assert tape.truncated is None
    sent, received = messages(tape, "c2s"), messages(tape, "s2c")
    requests = [m for m in sent if "id" in m and "method" in m]
    answered = {m["id"] for m in received if "result" in m or "error" in m}
    assert {m["id"] for m in requests} <= answered  # every request got its final response
    methods = [m["method"] for m in requests]
    assert methods.count("tools/call") == 2 and "resources/read" in methods and "tools/list" in methods
    notes = [m["method"] for m in received if "method" in m]
    assert notes.count("notifications/progress") == 3 and notes.count("notifications/message") == 3
    # progress and logs arrive before the countdown's result, in the order the server sent them
    countdown = next(m["id"] for m in requests if m.get("params", {}).get("name") == "countdown")
    stream = [m for m in received if m.get("id") == countdown or m.get("method", "").startswith("notifications/")]
    assert [m.get("method", "result") for m in stream] == ["notifications/progress", "notifications/message"] * 3 + ["result"]
    assert all(r.get("status") != 421 for r in tape.records)  # the upstream saw its own Host
    # Exchanges end complete, or with the client hanging up once it has what it wanted: the SDK closes a POST's
    # stream as soon as the response event arrives (racing the server's last chunk) and its GET stream at exit.
    for number, recs in by_exchange(tape).items():
        end = recs[-1]
        assert end["kind"] == "end" and end["reason"] in ("complete", "client-disconnected"), end
        request = recs[0].get("msg")
        if end["reason"] == "client-disconnected" and isinstance(request, dict) and "id" in request:
            assert any(r.get("msg", {}).get("id") == request["id"] for r in recs[1:] if isinstance(r.get("msg"), dict))
    assert tape.records[-1]["kind"] == "capture.stop"
    assert loud_findings(rec.tape) == []

    http_requests = [r for r in tape.records if r["kind"] == "http.request"]
    if mode == "legacy":
        assert methods[0] == "initialize" and http_requests[0]["session"] is None
        session = next(r["session"] for r in tape.records if r["kind"] == "http.response" and r["session"])
        assert all(r["session"] == session for r in http_requests[1:])  # the session id on every exchange
        assert all(r["protocol_version"] == "2025-11-25" for r in http_requests[1:])
        assert http_requests[-1]["method"] == "DELETE"
        events = [r for r in tape.records if r["kind"] == "sse.event"]
        assert events and all("id" in e for e in events)  # the event store's ids
        assert any(e.get("data") == "" for e in events)  # priming events kept
    else:
        assert methods[0] == "server/discover"
        assert all(r["session"] is None for r in http_requests)
        assert all(r["protocol_version"] == "2026-07-28" for r in http_requests)


def test_several_clients_at_once_do_not_mix(demo_server, record):
    upstream = demo_server()
    rec = record(upstream)
    results: list[list[str]] = []

    async def many() -> None:
        async def one() -> None:
            results.append(await script(rec.url, "legacy"))

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one)

    anyio.run(many)
    rec.stop()
    assert len(results) == 4 and all(r == results[0] for r in results)
    tape = read(rec.tape)
    sessions: dict[str, list[str]] = {}
    for number, recs in by_exchange(tape).items():
        request = recs[0]
        assert request["kind"] == "http.request"
        session = request["session"] or next(r["session"] for r in recs if r["kind"] == "http.response")
        # every answer in an exchange answers that exchange's request
        if "msg" in request and "id" in request["msg"]:
            finals = [r["msg"] for r in recs[1:] if "msg" in r and ("result" in r["msg"] or "error" in r["msg"])]
            assert [m["id"] for m in finals] == [request["msg"]["id"]]
        sessions.setdefault(session, []).append(request["msg"]["method"] if "msg" in request else request["method"])
    assert len(sessions) == 4
    shapes = {tuple(sorted(v)) for v in sessions.values()}
    assert len(shapes) == 1  # each session holds one client's whole conversation


def test_stopping_records_open_streams_as_proxy_stopped(demo_server, record):
    rec = record(demo_server())

    async def hold_open() -> None:
        try:
            async with Client(rec.url, mode="legacy", read_timeout_seconds=5) as client:
                await client.list_tools()
                await get_stream_open(rec.tape)  # the client's GET stream is open now
                rec.proc.send_signal(signal.SIGTERM)
                await anyio.to_thread.run_sync(rec.proc.wait)
        except Exception:
            pass  # the client loses its server; that is the point

    anyio.run(hold_open)
    assert rec.proc.returncode == 0
    tape = read(rec.tape)
    get = next(r["exchange"] for r in tape.records if r["kind"] == "http.request" and r["method"] == "GET")
    end = next(r for r in tape.records if r["kind"] == "end" and r["exchange"] == get)
    assert end["reason"] == "proxy-stopped"
    assert tape.records[-1]["kind"] == "capture.stop"


def test_kill_9_mid_session_leaves_a_tape_that_loads(demo_server, record):
    rec = record(demo_server())

    client = subprocess.Popen([sys.executable, "-c", f"""
import anyio
from mcp import Client
async def main():
    async with Client({rec.url!r}, mode="legacy") as c:
        await c.call_tool("countdown", {{"steps": 400, "delay": 0.002}})
anyio.run(main)
"""], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not rec.tape.exists() or rec.tape.stat().st_size < 20_000):
        time.sleep(0.01)
    rec.proc.kill()
    rec.proc.wait()
    stop(client)
    tape = read(rec.tape)
    assert tape.records[1]["kind"] == "http.request" and tape.records[1]["msg"]["method"] == "initialize"
    assert sum(r["kind"] == "sse.event" for r in tape.records) > 20
    shown = run_mcptape("show", str(rec.tape))
    assert shown.returncode == 0 and "initialize" in shown.stdout


def test_non_mcp_paths_are_recorded_without_bodies(demo_server, record):
    import urllib.error
    import urllib.request

    upstream = demo_server()
    for extra in ((), ("--record-all",)):
        rec = record(upstream, *extra)
        base = rec.url.rsplit("/mcp", 1)[0]
        for path in ("/favicon.ico", "/.well-known/oauth-authorization-server"):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(urllib.request.Request(base + path, headers={"Authorization": "Bearer s3cr3t"}))
            assert e.value.code == 404
        anyio.run(script, rec.url, "legacy")
        rec.stop()
        tape = read(rec.tape)
        others = [r for r in tape.records if r["kind"] in ("http.request", "http.response")
                  and by_path(tape, r) != "/mcp"]
        assert len(others) == 4
        assert all(r["mcp"] is False for r in others if r["kind"] == "http.request")
        bodies = [r for r in others if r["kind"] == "http.response" and ("raw" in r or "msg" in r)]
        assert len(bodies) == (2 if extra else 0)
        assert b"s3cr3t" not in rec.tape.read_bytes()


def by_path(tape, record: dict) -> str:
    return next(r["path"] for r in tape.records if r["kind"] == "http.request" and r["exchange"] == record["exchange"])


def test_credentials_never_reach_the_tape(demo_server, record):
    import urllib.request

    rec = record(demo_server())
    secret, key = "sk-live-0123456789abcdef", "qwertyuiop-key"
    headers = {"Authorization": f"Bearer {secret}", "X-Api-Key": key, "Cookie": f"sid={secret}",
               "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    init = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            b'"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}')
    for _ in range(2):
        request = urllib.request.Request(rec.url + f"?api_key={key}&page=2", data=init, headers=headers)
        assert b"serverInfo" in urllib.request.urlopen(request).read()
    rec.stop()
    raw = rec.tape.read_bytes()
    assert secret.encode() not in raw and key.encode() not in raw
    posts = [r for r in read(rec.tape).records if r["kind"] == "http.request"]
    assert len(posts) == 2 and all(dict(p["query"])["page"] == "2" for p in posts)
    auth = [dict((k.lower(), v) for k, v in p["headers"])["authorization"] for p in posts]
    assert auth[0] == auth[1] and auth[0].startswith("Bearer <redacted:")  # stable pseudonym, scheme kept
    assert dict(posts[0]["query"])["api_key"].startswith("<redacted:")


def test_no_redact_records_credentials_and_warns(demo_server, record):
    import urllib.request

    rec = record(demo_server(), "--no-redact")
    req = urllib.request.Request(rec.url, data=b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                                 headers={"Authorization": "Bearer visible-token", "Content-Type": "application/json",
                                          "Accept": "application/json, text/event-stream"})
    try:
        urllib.request.urlopen(req)
    except Exception:
        pass
    _, out, err = rec.stop()
    assert b"visible-token" in rec.tape.read_bytes()
    assert "warning" in err and "no-redact" in err


def test_mitmdump_users_load_the_addon_script(demo_server, tmp_path):
    upstream = demo_server()
    addon = run_mcptape("addons", "record").stdout.strip()
    assert addon.endswith("record.py")
    port = free_port()
    tape = tmp_path / "dump.mcptape"
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "mitmdump"), "-q", "--listen-host", "127.0.0.1",
         "-p", str(port), "--mode", f"reverse:{upstream.rsplit('/mcp', 1)[0]}", "-s", addon,
         "--set", f"mcptape_tape={tape}", "--set", "mcptape_endpoint=/mcp"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc)
        assert anyio.run(script, f"http://127.0.0.1:{port}/mcp", "legacy")[0].startswith("protocol")
    finally:
        stop(proc, signal.SIGINT)
    records = read(tape).records
    assert records[0]["kind"] == "capture.start" and records[-1]["kind"] == "capture.stop"
    assert any(r.get("msg", {}).get("method") == "initialize" for r in records if isinstance(r.get("msg"), dict))


def test_regular_proxy_mode_records_only_mcp(demo_server, record):
    upstream = demo_server()
    rec = record(None, "--mode", "regular")
    env = {**os.environ, "HTTP_PROXY": rec.url, "http_proxy": rec.url, "NO_PROXY": "", "no_proxy": ""}
    code = f"""
import anyio, urllib.error, urllib.request
from mcptape.demo.client import script
print(anyio.run(script, {upstream!r}, "legacy")[0])
try:
    urllib.request.urlopen({upstream.rsplit('/mcp', 1)[0] + '/robots.txt'!r})
except urllib.error.HTTPError as e:
    print("robots", e.code)
"""
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["protocol 2025-11-25", "robots 404"]
    rec.stop()
    requests = [r for r in read(rec.tape).records if r["kind"] == "http.request"]
    assert requests and all(r["mcp"] for r in requests)  # the robots.txt fetch went through but is not taped
    assert requests[0]["msg"]["method"] == "initialize"
    assert all(r["path"] == "/mcp" for r in requests)
