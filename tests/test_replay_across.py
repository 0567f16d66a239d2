"""A tape replays over either transport: an HTTP tape as a stdio server, a stdio tape as a Streamable HTTP server.
Recorded with the official SDK through `mcptape record`, replayed to the same SDK client: it sees what it saw live."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anyio
import mcp_types as types
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client

from mcptape.demo.client import script
from mcptape.replay import replaying
from mcptape.tape.file import read

from .conftest import INIT, INITIALIZED, MCPTAPE, LineClient, call, get_stream_open
from .test_record_stdio import DEMO, wrapped

DEADLINE = 20  # a replay that hangs fails the test instead of the run


def replay_stdio(tape, *options: str) -> StdioServerParameters:
    return StdioServerParameters(command=MCPTAPE, args=["replay", str(tape), "--stdio", *options])


def run(function, *args):
    async def bounded():
        with anyio.fail_after(DEADLINE):
            return await function(*args)

    return anyio.run(bounded)


def recorded_stdio(tmp_path, function, *args):
    """A stdio session of the demo server recorded through the wrapper: (tape, what the client saw)."""
    tape = tmp_path / "stdio.mcptape"
    argv = wrapped(tape, *DEMO)
    return tape, run(function, StdioServerParameters(command=argv[0], args=argv[1:]), *args)


# -- an HTTP tape over stdio -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("flags", [(), ("--json",), ("--event-store",)], ids=["sse", "json", "event-ids"])
def test_an_http_tape_replays_over_stdio(demo_server, record, flags):
    """SSE answers (progress and log notifications, then the result), JSON answers, priming events: each message
    the recorded server sent becomes a line, in order."""
    rec = record(demo_server(*flags))
    direct = run(script, rec.url, "legacy")
    rec.stop()
    assert run(script, replay_stdio(rec.tape), "legacy") == direct


def test_an_auto_client_falls_back_over_stdio_as_it_did_over_http(demo_server, record):
    """An 'auto' client's server/discover probe was refused with HTTP 400 and a JSON-RPC error with id null: over
    stdio that error answers the live probe (as the SDK's HTTP client delivers it), so the client falls back to
    initialize and goes on as recorded."""
    rec = record(demo_server("--handshake-only"))
    direct = run(script, rec.url, "auto")
    rec.stop()
    probe = next(r for r in read(rec.tape).records if r["kind"] == "http.response" and r["status"] == 400)
    assert probe["msg"]["id"] is None
    assert run(script, replay_stdio(rec.tape), "auto") == direct


def test_a_refusal_by_http_status_has_a_stdio_answer(tmp_path):
    """A request the recorded server refused by status: with a JSON-RPC error (id null, as the SDK sends for a bad
    protocol version) the stdio client gets that error for its request; with no JSON-RPC body (a bare 404) an
    mcptape error saying so, never silence that would leave the client waiting."""
    from mcptape.tape import records as r
    from mcptape.tape.file import Writer


    tape, sid = tmp_path / "refused.mcptape", "s1"
    init = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}}
    refused = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Bad Request: no"}}
    json_head = [("content-type", "application/json")]
    with Writer(tape, r.header(0.0, "test")) as w:
        w.write(r.capture_start(0.0, "test", {"proxy": "test"}, {}))
        exchanges = [(INIT, None, 200, {"msg": init}, [*json_head, ("mcp-session-id", sid)]),
                     (call(2, "add", {"a": 1, "b": 2}), sid, 400, {"msg": refused}, json_head),
                     (call(3, "add", {"a": 3, "b": 4}), sid, 404, {"raw": b"Not Found"}, [("content-type", "text/plain")])]
        for n, (request, session, status, body, headers) in enumerate(exchanges):
            w.write(r.http_request(n + 0.1, n, 0, "POST", "/mcp", [], json_head, session, None, True, {"msg": request}))
            w.write(r.http_response(n + 0.2, n, status, "", headers, sid, body))
            w.write(r.end(n + 0.3, n, r.COMPLETE))
    client = LineClient([MCPTAPE, "replay", str(tape), "--stdio"])
    try:
        client.send({**INIT, "id": "a"})
        assert client.receive() == {**init, "id": "a"}
        client.send(call("b", "add", {"a": 1, "b": 2}))
        assert client.receive() == {**refused, "id": "b"}
        client.send(call("c", "add", {"a": 3, "b": 4}))
        error = client.receive()
        assert error["id"] == "c" and error["error"]["code"] == -32603
        assert error["error"]["message"].startswith("mcptape: the recorded server refused this request with HTTP 404")
    finally:
        client.proc.stdin.close()
        client.proc.wait(20)


async def greet(target, name: str, asked: list) -> str:
    async def on_elicit(context, params):
        asked.append(params.message)
        await anyio.sleep(0.2)  # a slow user: the result must not come before the answer
        return types.ElicitResult(action="accept", content={"name": name})

    async with Client(target, mode="legacy", elicitation_callback=on_elicit) as client:
        return (await client.call_tool("greet", {})).content[0].text


def test_a_server_request_in_an_http_tape_waits_for_the_stdio_clients_answer(demo_server, record, tmp_path):
    rec = record(demo_server())
    asked: list = []
    assert run(greet, rec.url, "Ada", asked) == "hello Ada"
    rec.stop()
    log = tmp_path / "log.mcptape"
    assert run(greet, replay_stdio(rec.tape, "--log", str(log)), "Ada", asked) == "hello Ada"
    assert asked == ["What is your name?"] * 2
    lines = [r for r in read(log).records if r["kind"] == "stdio.line"]
    answered = next(i for i, r in enumerate(lines) if r["dir"] == "c2s" and r["msg"].get("result", {}).get("action"))
    result = next(i for i, r in enumerate(lines) if r["dir"] == "s2c" and "content" in r["msg"].get("result", {}))
    assert answered < result  # the replay waited for the client's answer before the result


async def other_streams(target, tape=None) -> list[str]:
    """A list_changed on the standalone GET stream during `announce`; `reconnect` drops its stream halfway and
    the client resumes it with Last-Event-ID."""
    seen: list[str] = []

    async def on_log(params) -> None:
        seen.append(params.data)

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            seen.append(message.method)

    async with Client(target, mode="legacy", logging_callback=on_log, message_handler=on_message) as client:
        if tape is not None:
            await get_stream_open(tape)
        for tool in ("announce", "reconnect"):
            seen.append((await client.call_tool(tool, {})).content[0].text)
    return seen


def test_messages_on_other_streams_go_out_over_stdio_with_their_call(demo_server, record):
    """Over stdio there is one channel: what the recorded server sent on the standalone stream during a call,
    and the rest of a dropped stream (on the GET that resumed it), go out with the call they belong to."""
    rec = record(demo_server("--event-store"))
    direct = run(other_streams, rec.url, rec.tape)
    rec.stop()
    assert {"notifications/tools/list_changed", "after the reconnect", "reconnected"} <= set(direct)
    # live, the list_changed raced the call's own stream; replayed, it goes out at its recorded time
    assert sorted(run(other_streams, replay_stdio(rec.tape))) == sorted(direct)


async def legacy_session(transport) -> list[str]:
    """The SDK's ClientSession over a given transport: what the 2024-11-05 HTTP+SSE client test does."""
    progress: list[str] = []

    async def on_progress(p, total, message) -> None:
        progress.append(f"{p}/{total}")

    async with transport as streams, ClientSession(*streams[:2]) as session:
        await session.initialize()
        tools = await session.list_tools()
        added = await session.call_tool("add", {"a": 4, "b": 5})
        counted = await session.call_tool("countdown", {"steps": 2}, progress_callback=on_progress)
        return [",".join(sorted(t.name for t in tools.tools)), str(added.structured_content),
                counted.content[0].text, *progress]


def test_a_legacy_http_sse_tape_replays_over_stdio(demo_server, record):
    """On 2024-11-05 every answer came back on the session's GET channel: over stdio each goes out as a line."""
    rec = record(demo_server("--sse"))
    direct = run(legacy_session, sse_client(rec.url))
    rec.stop()
    assert run(legacy_session, stdio_client(replay_stdio(rec.tape))) == direct


# -- a stdio tape over HTTP --------------------------------------------------------------------------------------------

def test_a_stdio_tape_replays_over_http(tmp_path):
    tape, direct = recorded_stdio(tmp_path, script, "legacy")
    with replaying(str(tape)) as url:
        assert url.endswith("/mcp")
        assert run(script, url, "legacy") == direct


def test_a_server_request_in_a_stdio_tape_goes_out_on_the_calls_stream(tmp_path):
    """elicitation/create, recorded on stdio during the call: over HTTP it goes out on the call's SSE stream and the
    replay waits for the client's answer before the result."""
    asked: list = []
    tape, direct = recorded_stdio(tmp_path, greet, "Ada", asked)
    assert direct == "hello Ada" and asked == ["What is your name?"]
    log = tmp_path / "log.mcptape"
    with replaying(str(tape), log=str(log)) as url:
        assert run(greet, url, "Ada", asked) == "hello Ada"
    assert asked == ["What is your name?"] * 2
    records = read(log).records
    answer = next(r for r in records if r["kind"] == "http.request" and "result" in r.get("msg", {}))
    result = next(r for r in records if r["kind"] == "sse.event" and r.get("msg", {}).get("result", {}).get("content"))
    assert answer["t"] < result["t"]  # the replay waited for the client's answer


def post(url: str, msg: dict, session: str | None = None, accept: str = "application/json, text/event-stream",
         method: str = "POST") -> tuple[int, dict, bytes]:
    headers = {"Content-Type": "application/json", "Accept": accept}
    if session:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    request = urllib.request.Request(url, data=json.dumps(msg).encode() if msg else None, headers=headers,
                                     method=method)
    try:
        response = urllib.request.urlopen(request, timeout=DEADLINE)
    except urllib.error.HTTPError as e:
        response = e
    return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()


def sse_messages(body: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: {")]


def test_a_stdio_answer_is_framed_as_a_streamable_http_server_frames_it(stdio_tape):
    """Sessions as in a session-era tape; a notification gets 202; a call with progress is an SSE stream when the
    client accepts one, else its final response as JSON; Content-Type is always set."""
    with replaying(stdio_tape) as url:
        status, headers, body = post(url, INIT)
        session = headers["mcp-session-id"]
        assert status == 200 and headers["content-type"] == "application/json" and json.loads(body)["id"] == 1
        status, headers, body = post(url, INITIALIZED, session)
        assert (status, body) == (202, b"") and headers["content-type"] == "application/json"

        countdown = call(7, "countdown", {"steps": 3}, token="tok")
        status, headers, body = post(url, countdown, session)
        assert status == 200 and headers["content-type"] == "text/event-stream"
        messages = sse_messages(body)
        assert [m["params"]["progressToken"] for m in messages if m.get("method") == "notifications/progress"] \
            == ["tok"] * 3
        assert messages[-1]["id"] == 7 and messages[-1]["result"]["content"][0]["text"] == "counted down from 3"

        status, headers, body = post(url, countdown, session, accept="application/json")
        assert status == 200 and headers["content-type"] == "application/json"
        assert json.loads(body)["result"]["content"][0]["text"] == "counted down from 3"

        add = call(8, "add", {"a": 2, "b": 3})
        status, headers, body = post(url, add, session)  # one message: JSON, though the client takes SSE
        assert headers["content-type"] == "application/json" and json.loads(body)["result"]["structuredContent"] \
            == {"result": 5}

        assert post(url, add)[0] == 400  # no session id
        assert post(url, add, "not-a-session")[0] == 404
        assert post(url, None, session, method="DELETE")[0] == 200
        assert post(url, add, session)[0] == 404
