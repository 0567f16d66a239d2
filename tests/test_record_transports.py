"""Recording an https upstream and a legacy (2024-11-05) HTTP+SSE server through `mcptape record`."""

from __future__ import annotations

import datetime
import ipaddress

import anyio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import Client, ClientSession
from mcp.client.sse import sse_client

from mcptape.demo.client import script
from mcptape.tape.file import read

from .conftest import by_exchange, loud_findings, run_mcptape


def self_signed(tmp_path) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


def test_https_upstream(demo_server, record, tmp_path):
    upstream = demo_server("--tls", *self_signed(tmp_path))
    assert upstream.startswith("https://")
    rec = record(upstream, "--insecure")
    lines = anyio.run(script, rec.url, "legacy")
    assert lines[0] == "protocol 2025-11-25" and "resource hello from a resource" in lines
    assert rec.stop()[0] == 0
    methods = [r["msg"]["method"] for r in read(rec.tape).records
               if r["kind"] == "http.request" and isinstance(r.get("msg"), dict) and "method" in r["msg"]]
    assert methods[:2] == ["initialize", "notifications/initialized"]


def test_https_upstream_with_an_untrusted_certificate_is_recorded_as_unreachable(demo_server, record, tmp_path):
    import urllib.error
    import urllib.request

    rec = record(demo_server("--tls", *self_signed(tmp_path)))
    request = urllib.request.Request(rec.url, data=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
                                     headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request)
        status = 200
    except urllib.error.HTTPError as e:
        status = e.code
    assert status == 502
    rec.stop()
    end = next(r for r in read(rec.tape).records if r["kind"] == "end")
    assert end["reason"] == "upstream-unreachable" and "certificate" in end["detail"].lower()


def test_legacy_http_sse_server_message_endpoint_is_recorded(demo_server, record):
    upstream = demo_server("--sse")
    rec = record(upstream)

    async def legacy_client() -> list[str]:
        async with sse_client(rec.url) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool("add", {"a": 4, "b": 5})
                return [t.name for t in tools.tools] + [str(result.structured_content)]

    out = anyio.run(legacy_client)
    assert "add" in out and "{'result': 9}" in out
    rec.stop()
    records = read(rec.tape).records
    get = next(r for r in records if r["kind"] == "http.request" and r["method"] == "GET")
    assert get["path"] == "/sse"
    endpoint = next(r for r in records if r["kind"] == "sse.event" and r.get("event") == "endpoint")
    assert endpoint["data"].startswith("/messages/?session_id=") and "rewritten_to" not in endpoint
    session = endpoint["session"]
    assert endpoint["data"].endswith(session)
    posts = [r for r in records if r["kind"] == "http.request" and r["method"] == "POST"]
    assert posts and all(r["path"] == "/messages/" and r["mcp"] and "msg" in r for r in posts)
    assert all(r["session"] == session for r in posts)  # the legacy session lives in the query string
    assert [p["msg"].get("method") for p in posts][:2] == ["initialize", "notifications/initialized"]
    # the answers ride on the GET stream
    answers = [r["msg"] for r in records if r["kind"] == "sse.event" and r["exchange"] == get["exchange"] and "msg" in r]
    assert {m.get("id") for m in answers if "result" in m} == {p["msg"]["id"] for p in posts if "id" in p["msg"]}
    assert loud_findings(rec.tape) == []


def header(record: dict, name: str) -> str | None:
    return next((v for k, v in record["headers"] if k.lower() == name), None)


def test_2026_stateless_traffic_with_a_subscription_and_a_stream_closed_as_cancellation(demo_server, record):
    rec = record(demo_server())

    async def modern() -> None:
        async with Client(rec.url, mode="2026-07-28") as client:
            async with client.listen(tools_list_changed=True) as subscription:
                assert subscription is not None  # acknowledged
            with anyio.move_on_after(0.5):  # gives up: on this wire, closing the stream is the cancellation
                await client.call_tool("sleep", {"seconds": 5})
            assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}

    anyio.run(modern)
    rec.stop()
    tape = read(rec.tape)
    requests = [r for r in tape.records if r["kind"] == "http.request"]
    assert requests and all(r["session"] is None and r["protocol_version"] == "2026-07-28" for r in requests)
    assert all(header(r, "mcp-method") == r["msg"]["method"] for r in requests)
    calls = [r for r in requests if r["msg"]["method"] == "tools/call"]
    assert [header(r, "mcp-name") for r in calls] == ["sleep", "add"]
    exchanges = by_exchange(tape)
    listen = next(r["exchange"] for r in requests if r["msg"]["method"] == "subscriptions/listen")
    events = [r["msg"]["method"] for r in exchanges[listen] if r["kind"] == "sse.event" and "msg" in r]
    assert events[0] == "notifications/subscriptions/acknowledged"
    assert exchanges[listen][-1]["reason"] == "client-disconnected"
    sleep = exchanges[calls[0]["exchange"]]
    assert sleep[-1]["reason"] == "client-disconnected"
    assert not any("result" in r.get("msg", {}) or "error" in r.get("msg", {}) for r in sleep[1:])
    assert not any(r.get("msg", {}).get("method") == "notifications/cancelled" for r in requests)
    assert loud_findings(rec.tape) == []


def test_an_auto_client_probe_then_its_real_session(demo_server, record):
    rec = record(demo_server("--handshake-only"))
    assert anyio.run(script, rec.url, "auto")[0] == "protocol 2025-11-25"
    rec.stop()
    tape = read(rec.tape)
    requests = [r for r in tape.records if r["kind"] == "http.request"]
    responses = {r["exchange"]: r for r in tape.records if r["kind"] == "http.response"}
    probe, init = requests[0], requests[1]
    assert probe["msg"]["method"] == "server/discover" and probe["protocol_version"] == "2026-07-28"
    assert responses[probe["exchange"]]["status"] == 400
    assert init["msg"]["method"] == "initialize" and init["session"] is None
    session = responses[init["exchange"]]["session"]
    assert session and all(r["session"] == session for r in requests[2:])
    shown = run_mcptape("show", str(rec.tape)).stdout
    assert "era probe refused" in shown
    assert loud_findings(rec.tape) == []


def test_regular_proxy_mode_over_https_with_mitmproxys_ca(demo_server, record, tmp_path):
    """A client that can only be pointed at a proxy, talking https: it trusts the CA the command names."""
    import os
    import re
    import subprocess
    import sys

    upstream = demo_server("--tls", *self_signed(tmp_path))
    rec = record(None, "--mode", "regular", "--insecure")
    while not (found := re.search(r"trust (\S+)", rec.proc.stdout.readline())):
        pass  # (the lines before it: where to point the client, where it forwards)
    ca = found.group(1)
    assert os.path.exists(ca)
    env = {**os.environ, "HTTPS_PROXY": rec.url, "https_proxy": rec.url, "NO_PROXY": "", "no_proxy": "",
           "SSL_CERT_FILE": ca}
    code = f"import anyio\nfrom mcptape.demo.client import script\nprint(anyio.run(script, {upstream!r}, 'legacy')[0])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "protocol 2025-11-25"
    rec.stop()
    requests = [r for r in read(rec.tape).records if r["kind"] == "http.request"]
    assert requests[0]["msg"]["method"] == "initialize" and all(r["mcp"] for r in requests)
