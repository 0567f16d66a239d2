"""`mcptape check` on tapes of real traffic: each rule fires where it should and stays silent on clean sessions."""

from __future__ import annotations

import json
import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcptape.demo.client import script

from .conftest import await_until, free_port, records_so_far, run_mcptape, spawn_demo, stop, wait_until
from .rawserver import RawServer
from .test_record_raw import fetch
from .test_record_stdio import DEMO, RawClient, cancelled, wrapped


def check(*tapes, extra=()) -> dict:
    result = run_mcptape("check", *map(str, tapes), "--format", "json", "--fail-on", "never", *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)




def rules(report: dict, severity: str | None = None) -> list[str]:
    return [f["rule"] for f in report["findings"] if severity is None or f["severity"] == severity]


def serious(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["severity"] in ("error", "warning")]


@pytest.fixture
def raw():
    server = RawServer()
    yield server
    server.close()


def test_clean_sdk_sessions_have_no_warnings_or_errors(demo_server, record, tmp_path):
    upstream = demo_server("--event-store")
    tapes = []
    for mode in ("legacy", "auto"):
        rec = record(upstream)
        anyio.run(script, rec.url, mode)
        rec.stop()
        tapes.append(rec.tape)
    rec = record(demo_server("--sse"))
    rec_url = rec.url
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    async def legacy() -> None:
        async with sse_client(rec_url) as streams, ClientSession(*streams) as session:
            await session.initialize()
            await session.call_tool("add", {"a": 1, "b": 2})

    anyio.run(legacy)
    rec.stop()
    tapes.append(rec.tape)
    stdio_tape = tmp_path / "stdio.mcptape"
    argv = wrapped(stdio_tape, *DEMO)
    anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")
    tapes.append(stdio_tape)
    report = check(*tapes)
    assert serious(report) == [], serious(report)
    assert report["summary"]["tapes"] == 4
    assert run_mcptape("check", *map(str, tapes), "--fail-on", "never").returncode == 0
    # the demo server declares logging (it handles logging/setLevel), so its log notifications break no rule
    assert [f for f in report["findings"] if f["severity"] in ("error", "warning")] == []


def test_a_cancelled_stdio_call_is_not_a_hang(tmp_path):
    """Seed 000: the server honours the cancellation and, as the spec recommends, never answers."""
    tape = tmp_path / "cancel.mcptape"
    client = RawClient(wrapped(tape, *DEMO))
    client.handshake()
    client.cancel_in_flight(2)
    client.outlast(tape, 3)  # the same call, uncancelled, was answered: request 2 never will be
    client.close()
    report = check(tape)
    assert rules(report) == ["cancelled-without-response"]
    finding = next(f for f in report["findings"] if f["rule"] == "cancelled-without-response")
    assert finding["severity"] == "info" and finding["request_id"] == 2 and finding["method"] == "tools/call"
    assert "SHOULD" in finding["spec"] and "Not send a response for the cancelled request" in finding["spec"]
    assert finding["dir"] == "c2s" and finding["session"].startswith("stdio")


SILENT = ("import sys, json\nfor line in sys.stdin:\n    m = json.loads(line)\n"
          "    if m.get('method') == 'initialize':\n"
          "        print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':{'protocolVersion':'2025-11-25',"
          "'capabilities':{'tools':{}},'serverInfo':{'name':'x','version':'0'}}}), flush=True)\n")


def test_a_never_answered_stdio_request_is_an_error(tmp_path):
    tape = tmp_path / "hang.mcptape"
    client = RawClient(wrapped(tape, sys.executable, "-c", SILENT))
    client.handshake()
    client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}})
    client.close()
    report = check(tape)
    assert rules(report) == ["unanswered-request"]
    assert "server process exited" in report["findings"][0]["message"]
    assert run_mcptape("check", str(tape)).returncode == 1
    assert run_mcptape("check", str(tape), "--fail-on", "never").returncode == 0


def test_the_sdk_client_after_a_server_restart_reuses_the_dead_session(record, tmp_path):
    """Seed 003: the session is gone (404) and the client never re-initializes."""
    port = free_port()
    server = spawn_demo(port)
    rec = record(f"http://127.0.0.1:{port}/mcp")

    async def run() -> None:
        nonlocal server
        async with Client(rec.url, mode="legacy", read_timeout_seconds=5) as client:
            await client.call_tool("add", {"a": 1, "b": 1})
            stop(server)
            server = spawn_demo(port)  # every session of the old process is gone
            for _ in range(3):
                with pytest.raises(Exception):
                    await client.call_tool("add", {"a": 2, "b": 2})

    try:
        anyio.run(run)
    except Exception:
        pass
    finally:
        stop(server)
    rec.stop()
    report = check(rec.tape)
    found = rules(report)
    assert "dead-session-reuse" in found and "no-reinitialize" in found
    reuse = next(f for f in report["findings"] if f["rule"] == "dead-session-reuse")
    assert reuse["severity"] == "error" and "after the server declared it dead (404" in reuse["message"]
    assert "wrong-status-for-dead-session" not in found  # the SDK server answers 404, as it must
    assert "MUST start a new session" in next(f for f in report["findings"] if f["rule"] == "no-reinitialize")["spec"]


def test_a_client_that_reinitializes_after_404_is_clean(raw, record):
    rec = record(raw.url)
    init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
    call = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
    fetch(rec.url, "init-session", init)
    assert fetch(rec.url, "gone-404", call, headers={"Mcp-Session-Id": "s-1"})[0] == 404
    fetch(rec.url, "init-session", init)  # a new session, as the spec says
    rec.stop()
    report = check(rec.tape)
    assert "no-reinitialize" not in rules(report) and "dead-session-reuse" not in rules(report)


def test_seed_001_a_stale_session_answered_401(raw, record):
    rec = record(raw.url)
    fetch(rec.url, "init-session", b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
    for i in range(2, 5):
        body = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}' % i
        assert fetch(rec.url, "stale-401", body, headers={"Mcp-Session-Id": "s-1"})[0] == 401
    rec.stop()
    report = check(rec.tape)
    found = rules(report)
    assert found.count("wrong-status-for-dead-session") == 1
    assert "dead-session-reuse" in found and "auth-rejected" not in found
    wrong = next(f for f in report["findings"] if f["rule"] == "wrong-status-for-dead-session")
    assert "401" in wrong["message"] and wrong["severity"] == "warning" and "404 Not Found" in wrong["spec"]
    reuse = next(f for f in report["findings"] if f["rule"] == "dead-session-reuse")
    assert reuse["message"].startswith("2 request(s)")


def test_http_shapes_the_server_gets_wrong(raw, record):
    rec = record(raw.url)
    fetch(rec.url, "init-session", b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
    headers = {"Mcp-Session-Id": "s-1", "MCP-Protocol-Version": "2025-11-25"}
    fetch(rec.url, "accepted", b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}', headers=headers)
    fetch(rec.url, "no-answer", b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}', headers=headers)
    from .test_record_raw import request

    conn, response = request(rec.url, "get-response", method="GET", headers={**headers, "Accept": "text/event-stream"})
    response.read()
    conn.close()
    rec.stop()
    found = {f["rule"]: f for f in check(rec.tape)["findings"]}
    assert found["status-202-for-request"]["request_id"] == 2
    assert found["unanswered-request"]["request_id"] == 3 and "exchange ended" in found["unanswered-request"]["message"]
    assert found["response-on-get-stream"]["request_id"] == 7


MISBEHAVING = r"""
import sys, json
def out(m): print(json.dumps(m), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        out({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"x","version":"0"}}})
    elif m.get("method") == "tools/call":
        token = m["params"]["_meta"]["progressToken"]
        out({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":2}})
        out({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":1}})
        out({"jsonrpc":"2.0","id":m["id"],"result":{"content":[]}})
        out({"jsonrpc":"2.0","id":m["id"],"result":{"content":[]}})
        out({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":3}})
        out({"jsonrpc":"2.0","id":99,"result":{}})
        sys.stdout.write("this is not JSON\n"); sys.stdout.flush()
"""


def test_misbehaving_stdio_server_and_client(tmp_path):
    tape = tmp_path / "bad.mcptape"
    client = RawClient(wrapped(tape, sys.executable, "-c", MISBEHAVING))
    client.send({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})  # before initialize
    client.handshake()
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", "_meta": {"progressToken": "p"}}}
    client.send(call)
    # its decreasing progress is in the tape before the id (and the token) come again: sent at once, the second
    # request can land between the two notifications, and then each call has one progress value, none decreasing
    decreased = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}
    wait_until(lambda: any(r.get("msg") == decreased for r in records_so_far(tape)),
               what="the first call's progress in the tape")
    client.send(call)  # the same id again, in the same session
    # the server misbehaves while the client is still there (its last line, once per call), not after it left
    wait_until(lambda: sum(r.get("raw") == b"this is not JSON" for r in records_so_far(tape)) == 2,
               what="the server's misbehaviour for both calls in the tape")
    client.close()
    found = rules(check(tape))
    for rule in ("request-before-initialize", "progress-not-increasing", "duplicate-response",
                 "progress-after-response", "orphan-response", "malformed-message", "duplicate-request-id"):
        assert rule in found, (rule, found)


def test_dead_id_reuse_across_two_tapes(tmp_path):
    """Seed 002: a conversation id from one server process, sent to the next one, is refused as not found."""
    first, second = tmp_path / "first.mcptape", tmp_path / "second.mcptape"

    async def start(tape) -> str:
        argv = wrapped(tape, *DEMO)
        async with Client(StdioServerParameters(command=argv[0], args=argv[1:])) as client:
            return json.loads((await client.call_tool("start_thread", {"message": "hi"})).content[0].text)["threadId"]

    async def resume(tape, thread_id) -> bool:
        argv = wrapped(tape, *DEMO)
        async with Client(StdioServerParameters(command=argv[0], args=argv[1:])) as client:
            return (await client.call_tool("reply", {"thread_id": thread_id, "message": "again"})).is_error

    thread_id = anyio.run(start, first)
    assert anyio.run(resume, second, thread_id)
    report = check(first, second)
    [finding] = [f for f in report["findings"] if f["rule"] == "dead-id-reuse"]
    assert thread_id in finding["message"] and finding["tape"] == str(second)
    assert check(second)["findings"] == []  # alone, the second tape cannot know where the id came from


def test_formats_thresholds_truncation_and_unreadable_input(tmp_path):
    tape = tmp_path / "cancel.mcptape"
    client = RawClient(wrapped(tape, *DEMO))
    client.handshake()
    client.cancel_in_flight(2)
    wait_until(lambda: cancelled(tape, 2), what="the cancellation in the tape")  # relayed before the client leaves
    client.close()
    text = run_mcptape("check", str(tape))
    assert "cancelled-without-response" in text.stdout and "spec:" in text.stdout
    assert run_mcptape("check", str(tape), "--fail-on", "error").returncode == (1 if "declare-logging" in text.stdout
                                                                               else 0)
    assert run_mcptape("check", str(tape), "--fail-on", "info").returncode == 1
    sarif = json.loads(run_mcptape("check", str(tape), "--format", "sarif").stdout)
    levels = {r["ruleId"]: r["level"] for r in sarif["runs"][0]["results"]}
    assert sarif["version"] == "2.1.0" and levels["cancelled-without-response"] == "note"
    data = tape.read_bytes()
    (tmp_path / "torn.mcptape").write_bytes(data[:-10])
    torn = check(tmp_path / "torn.mcptape")
    assert any(f["rule"] == "capture-incomplete" and "truncated" in f["message"] for f in torn["findings"])
    (tmp_path / "junk.mcptape").write_bytes(b"junk")
    bad = run_mcptape("check", str(tape), str(tmp_path / "junk.mcptape"))
    assert bad.returncode == 2 and bad.stdout == "" and "not an mcptape tape" in bad.stderr
    finding = check(tape)["findings"][0]
    assert set(finding) == {"rule", "severity", "tape", "session", "dir", "request_id", "method", "message", "spec",
                            "record", "t", "injected", "blames", "transition"}
    assert finding["blames"] in ("client", "server", "none")


def test_a_cancelled_http_call_answered_by_the_sdk(demo_server, record):
    """The SDK's handshake-era HTTP transport ends a cancelled request's stream with a -32800 error."""
    rec = record(demo_server())

    async def run() -> None:
        async with Client(rec.url, mode="legacy") as client:
            with pytest.raises(Exception):
                await client.call_tool("sleep", {"seconds": 3}, read_timeout_seconds=0.5)
            # the client's cancellation and the server's -32800 on the call's stream pass before the client leaves
            await await_until(lambda: any(r.get("msg", {}).get("error", {}).get("code") == -32800
                                          for r in records_so_far(rec.tape) if r["kind"] == "sse.event"),
                              what="the server's answer to the cancelled call in the tape")

    anyio.run(run)
    rec.stop()
    report = check(rec.tape)
    assert "response-after-cancel" in rules(report)
    assert serious(report) == []


def test_a_json_body_that_is_not_json_rpc_is_flagged_with_the_http_clause(demo_server, record):
    """Before a session exists and inside one: both bodies are reported, with the Streamable HTTP clause (not the
    stdio one)."""
    import http.client
    from urllib.parse import urlsplit

    rec = record(demo_server())
    split = urlsplit(rec.url)

    def post(body: bytes, session: str | None = None) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection(split.hostname, split.port, timeout=30)
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session:
            headers["Mcp-Session-Id"] = session
        conn.request("POST", split.path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        conn.close()
        return response

    post(b'{"hello": "before any session"}')
    session = post(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
                   b'"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}').getheader("mcp-session-id")
    assert session
    post(b'{"hello": "inside the session"}', session)
    rec.stop()
    malformed = [f for f in check(rec.tape)["findings"] if f["rule"] == "malformed-message" and f["dir"] == "c2s"]
    assert len(malformed) == 2, malformed
    assert [f["session"] for f in malformed] == [None, session]
    for finding in malformed:
        assert "Streamable HTTP" in finding["spec"] and "stdio" not in finding["spec"], finding
        assert finding["message"] == 'http.request: missing "jsonrpc": "2.0"'
