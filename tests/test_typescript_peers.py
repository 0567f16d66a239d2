"""mcptape between TypeScript peers: the reference server (server-everything) over Streamable HTTP, legacy HTTP+SSE
and stdio, driven by the MCP Inspector's CLI. Recorded, then replayed with the server gone: the Inspector gets the
same answers, and `check` finds nothing wrong with a clean session."""

from __future__ import annotations

import json

import pytest

from mcptape.replay import replaying

from .conftest import MCPTAPE, run_mcptape
from .node_peers import inspector, ts_server, ts_server_argv  # noqa: F401  (ts_server is a fixture)

FLAG = {"streamableHttp": "http", "sse": "sse"}


def conversation(target: list[str]) -> list[dict]:
    """What a user asks the Inspector, one run each: the tools, then one call."""
    return [inspector(target, "tools/list"),
            inspector(target, "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=2", "--tool-arg", "b=3")]


def findings(tape) -> list[dict]:
    result = run_mcptape("check", str(tape), "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["findings"]


def loud(found: list[dict]) -> list[tuple[str, str]]:
    """Findings at warning or above, as (rule, message): of a correct conversation, none (issue 33)."""
    return [(f["rule"], f["message"]) for f in found if f["severity"] in ("error", "warning")]


@pytest.mark.parametrize("transport", ["streamableHttp", "sse"])
def test_http_record_then_replay(ts_server, record, transport):
    rec = record(ts_server(transport))
    recorded = conversation([rec.url, "--transport", FLAG[transport]])
    assert rec.stop()[0] == 0
    ts_server.stop_all()  # from here on only the tape answers
    with replaying(str(rec.tape)) as url:
        assert conversation([url, "--transport", FLAG[transport]]) == recorded
    assert loud(findings(rec.tape)) == []


def test_feature_traffic_raises_nothing(ts_server, record):
    """Resource templates, resource links, an image, a prompt with arguments (issue 34's feature judges on a real
    server), one Inspector run each over Streamable HTTP."""
    rec = record(ts_server("streamableHttp"))
    target = [rec.url, "--transport", "http"]
    templates = inspector(target, "resources/templates/list")["resourceTemplates"]
    links = inspector(target, "tools/call", "--tool-name", "get-resource-links", "--tool-arg", "count=2")["content"]
    image = inspector(target, "tools/call", "--tool-name", "get-tiny-image")["content"]
    inspector(target, "prompts/list")
    prompt = inspector(target, "prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Paris")
    assert rec.stop()[0] == 0
    assert templates and [c["type"] for c in links].count("resource_link") == 2
    assert "image" in [c["type"] for c in image] and prompt["messages"]
    assert loud(findings(rec.tape)) == []
    table = run_mcptape("check", str(rec.tape), "--requirements", "--format", "json", "--fail-on", "never")
    verdicts = {row["requirement"]: row["verdict"] for row in json.loads(table.stdout)["requirements"]}
    judged = ("resource-template-fields", "resource-link-fields", "image-base64", "prompt-message-role")
    assert {rule: verdicts[rule] for rule in judged} == dict.fromkeys(judged, "pass")


def test_stdio_record_then_replay(tmp_path):
    argv, _ = ts_server_argv("stdio")
    tape = tmp_path / "stdio.mcptape"
    recorded = conversation([MCPTAPE, "record", "--append", "-o", str(tape), "--", *argv])
    replayed = conversation([MCPTAPE, "replay", str(tape), "--stdio"])
    assert replayed == recorded
    found = findings(tape)
    assert loud(found) == []
    # the server asks roots/list once the Inspector has closed its stdin: said, not blamed
    late = [f for f in found if f["rule"] == "request-after-close"]
    assert late and all(f["dir"] == "s2c" and f["severity"] == "info" for f in late), found


def test_live_edits_on_a_legacy_sse_server(ts_server, record):
    """The TypeScript server's legacy HTTP+SSE transport: its POSTs are only accepted (202) and every answer comes
    back on the session's channel. An injected error reaches the client on that channel, as the answer to its call
    (it does not wait for a timeout); an expired session answers its POSTs with 404."""
    from mcptape.tape.file import read

    upstream = ts_server("sse")
    rec = record(upstream, "--edit", "error code=-32001 message=nope at=tools/call#1")
    target = [rec.url, "--transport", "sse"]
    with pytest.raises(AssertionError, match="nope"):
        inspector(target, "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=2", "--tool-arg", "b=3", timeout=30)
    assert inspector(target, "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=2", "--tool-arg", "b=3",
                     timeout=30)["content"][0]["text"] == "The sum of 2 and 3 is 5."  # fired once: then the server's
    assert rec.stop()[0] == 0
    edits = [r for r in read(rec.tape).records if r["kind"] == "edit"]
    assert [e["detail"] for e in edits] == ["answer JSON-RPC error -32001 (on the session's SSE channel)",
                                            "answered with a JSON-RPC error instead"]
    assert edits[1]["withheld"][0]["result"]  # what the server answered, kept
    assert all(f["injected"] for f in findings(rec.tape) if f["severity"] != "info")

    rec = record(upstream, "--edit", "expire-session at=tools/call#1")
    with pytest.raises(AssertionError, match="404"):
        inspector([rec.url, "--transport", "sse"], "tools/call", "--tool-name", "echo",
                  "--tool-arg", "message=hi", timeout=30)
    assert rec.stop()[0] == 0
    edits = [r for r in read(rec.tape).records if r["kind"] == "edit"]
    assert [e["detail"] for e in edits] == ["answered HTTP 404 instead"]


def test_a_deleted_session_answered_400_by_the_typescript_server(ts_server, record):
    """The TypeScript SDK server answers a request on a session it has itself deleted with 400 "No valid session ID
    provided": the tape proves the session gone (its DELETE was answered 2xx), whatever the body says."""
    import http.client
    from urllib.parse import urlsplit

    rec = record(ts_server("streamableHttp"))
    split = urlsplit(rec.url)

    def send(method: str, msg: dict | None, session: str | None = None) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection(split.hostname, split.port, timeout=30)
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session:
            headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
        conn.request(method, split.path, body=json.dumps(msg) if msg else None, headers=headers)
        response = conn.getresponse()
        response.read()
        conn.close()
        return response

    session = send("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
                   ).getheader("mcp-session-id")
    send("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    assert send("DELETE", None, session).status == 200
    assert send("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session).status == 400
    rec.stop()
    found = findings(rec.tape)
    wrong = next(f for f in found if f["rule"] == "wrong-status-for-dead-session")
    assert wrong["blames"] == "server" and wrong["transition"]["kind"] == "deleted"
    assert "No valid session ID provided" in wrong["message"]
    reuse = next(f for f in found if f["rule"] == "dead-session-reuse")
    assert reuse["blames"] == "client"
