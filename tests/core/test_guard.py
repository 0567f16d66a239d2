"""guard.py: which Host and Origin a server mcptape runs accepts (DNS rebinding), in memory."""

import json

import pytest

from mcptape.guard import Guard


def refused(guard: Guard, host: str | None = None, origin: str | None = None):
    headers = [("Host", host)] if host is not None else []
    headers += [("Origin", origin)] if origin is not None else []
    refusal = guard.check(headers)
    return refusal.status if refusal else None


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost", "LOCALHOST:1", "[::1]:9", "127.0.0.2:80",
                                  "app.localhost:3000", None, "localhost.:80", "localhost:", "[0:0:0:0:0:0:0:1]:9"])
def test_loopback_hosts_on_any_port_are_served(host):
    assert refused(Guard(), host) is None


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "127.0.0.1.nip.io:8765", "0.0.0.0:80",
                                  "[::1", "localhost:notaport", "", "evil.example@localhost", "evil.example@[::1]:80",
                                  "evil.example\\@localhost", "localhost\\", "localhost/evil", "localhost..",
                                  "[::1]evil", "[::1%25lo]", "localhost:" + "0" * 5000, "localhost:-1"])
def test_foreign_or_malformed_hosts_get_421(host):
    assert refused(Guard(), host) == 421


def test_the_listen_address_and_allowed_hosts_are_served():
    guard = Guard("192.168.1.5", hosts=["mcp.internal", "box:8080"])
    assert refused(guard, "192.168.1.5:8765") is None
    assert refused(guard, "mcp.internal:1234") is None
    assert refused(guard, "box:8080") is None
    assert refused(guard, "box:8081") == 421
    assert refused(guard, "192.168.1.6:8765") == 421
    assert refused(Guard(hosts=["*"]), "anything:1") is None


@pytest.mark.parametrize("origin", ["http://localhost:3000", "https://127.0.0.1", "http://[::1]:5173",
                                    "HTTP://LOCALHOST", "Http://LocalHost.:3000", "https://[0::1]:443",
                                    "http://localhost:80/"])
def test_loopback_origins_are_served(origin):
    assert refused(Guard(), "localhost", origin) is None


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "file://", "ftp://localhost", "http://[bad"])
def test_foreign_origins_get_403_with_a_json_rpc_error_without_id(origin):
    refusal = Guard().check([("host", "127.0.0.1:1"), ("origin", origin)])
    assert refusal.status == 403
    body = json.loads(refusal.body)
    assert body["jsonrpc"] == "2.0" and "id" not in body and body["error"]["code"] == -32000
    assert origin in body["error"]["message"]


@pytest.mark.parametrize("origin", ["http://evil.example@localhost", "http://evil.example\\@localhost",
                                    "http://localhost\\", "http://localhost/evil", "http://localhost:99999",
                                    "http//localhost", "://localhost"])
def test_malformed_origins_get_403(origin):
    assert refused(Guard(), "localhost", origin) == 403


def test_allowed_origins_are_exact():
    guard = Guard(origins=["https://app.example:8443", "null"])
    assert refused(guard, "localhost", "https://app.example:8443") is None
    assert refused(guard, "localhost", "null") is None
    assert refused(guard, "localhost", "https://app.example") == 403


def test_allowed_names_and_origins_compare_by_url_rules():
    guard = Guard(hosts=["box:80", "mcp.internal."], origins=["https://app.example:443", "http://App.Example."])
    assert refused(guard, "BOX") is None and refused(guard, "box:80") is None  # no port: the scheme's default
    assert refused(guard, "box:8080") == 421
    assert refused(guard, "MCP.internal:9") is None
    for origin in ("HTTPS://App.Example", "https://app.example:443/", "http://app.example:80"):
        assert refused(guard, "localhost", origin) is None, origin
    assert refused(guard, "localhost", "https://app.example:80") == 403


def test_a_host_or_origin_given_twice_is_refused_whichever_comes_first():
    guard = Guard()
    for hosts in (["localhost", "evil.example"], ["evil.example", "localhost"], ["localhost", "localhost"]):
        refusal = guard.check([("Host", hosts[0]), ("host", hosts[1])])
        assert refusal.status == 421 and refusal.reason == "mcptape: Host is given 2 times, not once"
    refusal = guard.check([("Host", "localhost"), ("Origin", "http://localhost"), ("ORIGIN", "http://evil.example")])
    assert refusal.status == 403 and refusal.reason == "mcptape: Origin is given 2 times, not once"
    assert Guard(origins=["*"]).check([("Origin", "http://localhost"), ("Origin", "http://evil.example")]) is None


def test_host_is_judged_before_origin_and_answers_are_remembered_boundedly():
    guard = Guard()
    assert refused(guard, "evil", "http://evil") == 421
    for n in range(500):
        refused(guard, f"evil{n}.example")
    assert len(guard._seen) <= 65
    assert refused(guard, "localhost") is None
