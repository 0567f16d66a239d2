"""`mcptape replay`: record real sessions, stop the server, serve the tape back to real clients."""

from __future__ import annotations

import json
import re
import time
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import StdioServerParameters

from mcptape.demo.client import script
from mcptape.replay import areplaying, replaying
from mcptape.tape.file import read

from .conftest import INIT, MCPTAPE, LineClient, call, run_mcptape, stop
from .test_record_stdio import DEMO, wrapped

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def recorded_session(demo_server, record, mode: str, *flags: str):
    rec = record(demo_server(*flags))
    lines = anyio.run(script, rec.url, mode)
    rec.stop()
    return rec.tape, lines


def post(url: str, msg: dict, session: str | None = None) -> tuple[int, dict, list[dict]]:
    """(status, headers, messages) — messages from a JSON body or from every SSE event."""
    headers = {**HEADERS, **({"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"} if session else {})}
    request = urllib.request.Request(url, data=json.dumps(msg).encode(), headers=headers)
    try:
        response = urllib.request.urlopen(request)
    except urllib.error.HTTPError as e:
        response = e
    body = response.read().decode()
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    else:
        messages = [json.loads(body)] if body.strip().startswith("{") else []
    return response.status, dict(response.headers), messages


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_sdk_client_gets_the_recorded_session_back(demo_server, record, mode):
    tape, direct = recorded_session(demo_server, record, mode, "--event-store")
    with replaying(str(tape)) as url:  # the server is gone; only the tape answers
        replayed = anyio.run(script, url, mode)
    assert replayed == direct  # same results, progress and log callbacks in the recorded order


def test_async_api_and_the_replay_log(demo_server, record, tmp_path):
    tape, direct = recorded_session(demo_server, record, "legacy")
    log = tmp_path / "log.mcptape"

    async def run() -> list[str]:
        async with areplaying(str(tape), log=str(log)) as url:
            return await script(url, "legacy")

    assert anyio.run(run) == direct
    logged = read(log)
    methods = [r["msg"]["method"] for r in logged.records if r["kind"] == "http.request" and "method" in r.get("msg", {})]
    assert methods[:2] == ["initialize", "notifications/initialized"] and "tools/call" in methods
    checked = run_mcptape("check", str(log), "--format", "json")
    assert checked.returncode == 0, checked.stdout
    assert [f for f in json.loads(checked.stdout)["findings"] if f["severity"] != "info"] == []


def test_a_stdio_client_gets_the_recorded_session_back(tmp_path):
    tape = tmp_path / "stdio.mcptape"
    argv = wrapped(tape, *DEMO)
    direct = anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")
    replayed = anyio.run(script, StdioServerParameters(command=MCPTAPE, args=["replay", str(tape), "--stdio"]),
                         "legacy")
    assert replayed == direct


def test_live_ids_sessions_and_misses(demo_server, record):
    tape, _ = recorded_session(demo_server, record, "legacy")
    with replaying(str(tape)) as url:
        init = {"jsonrpc": "2.0", "id": "init-x", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
        status, headers, [answer] = post(url, init)
        session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        assert status == 200 and answer["id"] == "init-x" and answer["result"]["protocolVersion"] == "2025-11-25"
        big = 123456789012345678901234567890
        call = {"jsonrpc": "2.0", "id": big, "method": "tools/call", "params": {
            "name": "countdown", "arguments": {"steps": 3}, "_meta": {"progressToken": "tok-9"}}}
        status, _, messages = post(url, call, session)
        assert status == 200 and messages[-1]["id"] == big
        tokens = {m["params"]["progressToken"] for m in messages if m.get("method") == "notifications/progress"}
        assert tokens == {"tok-9"}  # the recorded token became the live one
        # a request the tape never saw: a JSON-RPC error naming the closest recorded one and where it differs
        miss = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 99}}}
        _, _, [error] = post(url, miss, session)
        assert error["id"] == 7 and error["error"]["code"] == -32603
        assert error["error"]["message"].startswith("mcptape: no recorded answer for tools/call")
        assert "differs at /params/arguments/b" in error["error"]["message"] and error["error"]["data"]["closest"]["record"] >= 0
        # sessions: none -> 400, unknown -> 404, deleted -> 404
        assert post(url, miss)[0] == 400
        assert post(url, miss, "not-a-session")[0] == 404
        request = urllib.request.Request(url, method="DELETE", headers={"Mcp-Session-Id": session})
        assert urllib.request.urlopen(request).status == 200
        assert post(url, miss, session)[0] == 404


def test_ignore_pointers_and_the_strict_summary(tmp_path):
    tape = tmp_path / "stdio.mcptape"
    argv = wrapped(tape, *DEMO)
    anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")

    def ask(*options: str) -> subprocess.CompletedProcess:
        lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                     "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mcp", "version": "0.1.0"}}},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 7}}}]
        return subprocess.run([MCPTAPE, "replay", str(tape), "--stdio", *options], capture_output=True, text=True,
                              input="".join(json.dumps(m) + "\n" for m in lines), timeout=30)

    missed = ask()
    answers = [json.loads(line) for line in missed.stdout.splitlines()]
    assert answers[1]["error"]["code"] == -32603 and missed.returncode == 0
    assert "1 request(s) unmatched" in missed.stderr
    matched = ask("--ignore", "/params/arguments/b")
    answers = [json.loads(line) for line in matched.stdout.splitlines()]
    assert answers[1]["result"]["structuredContent"] == {"result": 5}  # the recorded 2 + 3
    assert ask("--strict").returncode == 1  # unmatched and unused requests
    assert "--pace" in run_mcptape("replay", str(tape), "--pace", "slow").stderr


def test_the_replay_command_prints_its_url_and_stops_cleanly(demo_server, record):
    tape, direct = recorded_session(demo_server, record, "legacy")
    proc = subprocess.Popen([MCPTAPE, "replay", str(tape)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", proc.stdout.readline()).group(1)
        assert anyio.run(script, url, "legacy") == direct
    finally:
        stop(proc, __import__("signal").SIGINT)
    assert proc.returncode == 0
    assert "0 request(s) unmatched" in proc.stderr.read()


def test_replay_does_not_import_mitmproxy_nor_ssl(tmp_path):
    tape = tmp_path / "stdio.mcptape"
    argv = wrapped(tape, sys.executable, "-c", "pass")
    subprocess.run(argv, stdin=subprocess.DEVNULL, check=True)
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "mcptape", "replay", str(tape), "--stdio"],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-500:]
    assert "mitmproxy" not in result.stderr and "deepdiff" not in result.stderr
    assert not re.search(r"\| +_ssl$", result.stderr, re.MULTILINE)  # OpenSSL: a replay never speaks TLS (cli/replay.py)


def test_a_resumed_stream_is_served_from_the_tape(demo_server, record, tmp_path):
    """Recorded against the SDK server with an event store: the tool drops its stream, the client resumes with
    Last-Event-ID. Replayed, the client resumes the same way and gets the rest, answer included."""
    from mcp import Client

    async def run(url: str) -> list[str]:
        logs: list[str] = []

        async def on_log(params) -> None:
            logs.append(params.data)

        async with Client(url, mode="legacy", logging_callback=on_log) as client:
            result = await client.call_tool("reconnect", {})
        return logs + [result.content[0].text]

    rec = record(demo_server("--event-store"))
    direct = anyio.run(run, rec.url)
    rec.stop()
    log = tmp_path / "log.mcptape"
    with replaying(str(rec.tape), log=str(log)) as url:
        assert anyio.run(run, url) == direct == ["before the disconnect", "after the reconnect", "reconnected"]
    requests = [r for r in read(log).records if r["kind"] == "http.request"]
    resumed = [r for r in requests if dict((k.lower(), v) for k, v in r["headers"]).get("last-event-id")]
    assert len(resumed) == 1 and resumed[0]["method"] == "GET"


def test_a_server_initiated_request_waits_for_the_clients_answer(demo_server, record, tmp_path):
    """elicitation/create rides on the tools/call stream; the replay sends it and waits for the client's answer
    before the result, as the recorded server did."""
    import mcp_types as types
    from mcp import Client

    async def run(url: str, name: str) -> str:
        async def on_elicit(context, params):
            await anyio.sleep(0.3)  # a slow user: the result must not come before the answer
            return types.ElicitResult(action="accept", content={"name": name})

        async with Client(url, mode="legacy", elicitation_callback=on_elicit) as client:
            return (await client.call_tool("greet", {})).content[0].text

    rec = record(demo_server())
    assert anyio.run(run, rec.url, "Ada") == "hello Ada"
    rec.stop()
    log = tmp_path / "log.mcptape"
    with replaying(str(rec.tape), log=str(log)) as url:
        assert anyio.run(run, url, "Ada") == "hello Ada"
    records = read(log).records
    answer = next(r for r in records if r["kind"] == "http.request" and "result" in r.get("msg", {}))
    result = next(r for r in records if r["kind"] == "sse.event" and r.get("msg", {}).get("result", {}).get("content"))
    assert answer["t"] < result["t"]  # the replay waited for the client's answer


def test_a_stdio_servers_own_request_waits_for_the_clients_answer(tmp_path):
    """elicitation/create, recorded on stdio during the call it belongs to: the stdio replay sends it and waits for
    the client's answer before the result (it once dropped it, and the result came unasked)."""
    import mcp_types as types
    from mcp import Client

    asked: list[str] = []

    async def run(server: StdioServerParameters) -> str:
        async def on_elicit(context, params):
            asked.append(params.message)
            return types.ElicitResult(action="accept", content={"name": "Ada"})

        with anyio.fail_after(20):
            async with Client(server, mode="legacy", elicitation_callback=on_elicit) as client:
                return (await client.call_tool("greet", {})).content[0].text

    tape, log = tmp_path / "stdio.mcptape", tmp_path / "log.mcptape"
    argv = wrapped(tape, *DEMO)
    assert anyio.run(run, StdioServerParameters(command=argv[0], args=argv[1:])) == "hello Ada"
    replay = StdioServerParameters(command=MCPTAPE, args=["replay", str(tape), "--stdio", "--log", str(log)])
    assert anyio.run(run, replay) == "hello Ada"
    assert asked == ["What is your name?"] * 2
    lines = [r for r in read(log).records if r["kind"] == "stdio.line"]
    answered = next(i for i, r in enumerate(lines) if r["dir"] == "c2s" and r["msg"].get("result", {}).get("action"))
    result = next(i for i, r in enumerate(lines) if r["dir"] == "s2c" and "content" in r["msg"].get("result", {}))
    assert answered < result


def test_a_legacy_http_sse_tape_replays_over_that_transport(demo_server, record):
    from mcp.client.sse import sse_client

    from .test_replay_across import legacy_session

    rec = record(demo_server("--sse"))
    direct = anyio.run(legacy_session, sse_client(rec.url))
    rec.stop()
    with replaying(str(rec.tape)) as url:
        assert url.endswith("/sse")
        assert anyio.run(legacy_session, sse_client(url)) == direct


def test_stdio_replay_keeps_the_recorded_pace_when_asked(stdio_tape):
    """The countdown's three steps were 50 ms apart: --pace recorded spaces them so, x1000 does not."""
    lines = [r for r in read(stdio_tape).records if r["kind"] == "stdio.line" and r["dir"] == "s2c"]
    progress = [r["t"] for r in lines if r["msg"].get("method") == "notifications/progress"]
    final = next(r["t"] for r in lines if r["msg"].get("result", {}).get("content", [{}])[0].get("text", "")
                 .startswith("counted down"))
    recorded = final - progress[0]
    spans = {}
    for pace in ("recorded", "x1000"):
        client = LineClient([MCPTAPE, "replay", stdio_tape, "--stdio", "--pace", pace])
        client.send(INIT)
        client.receive()
        client.send(call(2, "countdown", {"steps": 3}, token=1))
        got = []
        while not got or "result" not in got[-1]:
            got.append(client.receive())
            got[-1]["_t"] = time.monotonic()
        first = next(m["_t"] for m in got if m.get("method") == "notifications/progress")
        spans[pace] = got[-1]["_t"] - first
        client.proc.stdin.close()
        client.proc.wait(20)
    assert spans["recorded"] >= recorded * 0.9 and spans["x1000"] < spans["recorded"]


def test_standalone_stream_messages_come_at_their_recorded_point(demo_server, record):
    """A list_changed the server sent on its GET stream during `announce` is replayed once `announce` is asked,
    not as soon as the client opens its stream."""
    import socket

    from mcp import Client

    from .conftest import INITIALIZED, get_stream_open

    rec = record(demo_server())

    async def recorded() -> None:
        async with Client(rec.url, mode="legacy") as client:
            await get_stream_open(rec.tape)  # so the server has a stream to announce on
            await client.call_tool("announce", {})

    anyio.run(recorded)
    rec.stop()
    changed = [r for r in read(rec.tape).records
               if r["kind"] == "sse.event" and r.get("msg", {}).get("method") == "notifications/tools/list_changed"]
    assert len(changed) == 1

    with replaying(str(rec.tape)) as url:
        status, headers, _ = post(url, INIT)
        session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        post(url, INITIALIZED, session)
        host, port = url.split("//")[1].split("/")[0].split(":")
        stream = socket.create_connection((host, int(port)), timeout=10)  # every read below has a deadline

        def more() -> bytes:
            chunk = stream.recv(65536)
            assert chunk, "the replay closed the GET stream"
            return chunk

        stream.sendall(f"GET /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\nMcp-Session-Id: "
                       f"{session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n".encode())
        got = b""
        while b"\r\n\r\n" not in got:  # the replay answered the GET: the stream is open
            got += more()
        # Not yet, whatever the machine's speed: a round trip on the same replay after the stream opened. A replay
        # that sent list_changed when the stream opened would have written it before answering this ping (one
        # event loop serves both), and loopback has it in our socket as soon as it is written; a fixed sleep
        # proved nothing when the replay was slower than the sleep.
        assert post(url, {"jsonrpc": "2.0", "id": "p", "method": "ping"}, session)[2] == [
            {"jsonrpc": "2.0", "id": "p", "result": {}}]
        stream.setblocking(False)
        try:
            while chunk := stream.recv(65536):
                got += chunk
        except BlockingIOError:
            pass  # all it had sent
        stream.settimeout(10)
        assert b"list_changed" not in got  # the recorded server sent it during announce
        assert post(url, call(2, "announce", {}), session)[2][-1]["result"]["content"][0]["text"] == "announced"
        while b"notifications/tools/list_changed" not in got:
            got += more()
        stream.close()


def test_a_legacy_answer_that_overtook_its_202_is_still_replayed(tmp_path):
    """On 2024-11-05 a server may put a POST's answer on the channel before the POST's own 202 is back: the tape
    then holds the answer first. The replay must still file it under that POST (it once lost it and hung)."""
    from mcptape.replay.recorded import load
    from mcptape.tape import records as r
    from mcptape.tape.file import Writer
    from mcptape.wire.sse import Event

    tape, sid = tmp_path / "legacy.mcptape", "5b2a99cce584463c83dfad0073d32e7d"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05"}}
    result = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2024-11-05", "capabilities": {}}}
    with Writer(tape, r.header(0.0, "test")) as w:
        w.write(r.capture_start(0.0, "test", {"proxy": "test"}, {}))
        w.write(r.http_request(0.1, 0, 0, "GET", "/sse", [], [], None, None, True, {}))
        w.write(r.http_response(0.2, 0, 200, "OK", [("content-type", "text/event-stream")], None, {}))
        w.write({**r.sse_event(0.3, 0, Event(event="endpoint", data=f"/messages/?session_id={sid}")),
                 "session": sid})
        w.write(r.http_request(0.4, 1, 1, "POST", "/messages/", [("session_id", sid)],
                               [("content-type", "application/json")], sid, None, True, {"msg": init}))
        w.write(r.sse_event(0.5, 0, Event(event="message", data=json.dumps(result))))  # before its 202
        w.write(r.http_response(0.6, 1, 202, "Accepted", [], None, {"raw": b"Accepted"}))
        w.write(r.end(0.6, 1, r.COMPLETE))
    [post] = [a for a in load(str(tape)).answers if a.method == "initialize"]
    assert [e["msg"] for e in post.channel] == [result]


@pytest.mark.filterwarnings("ignore:ping is removed as of 2026-07-28")  # the SDK's reminder: this tape is older
def test_ping_is_answered_though_the_tape_holds_none(stdio_tape, demo_server, record):
    """Every revision before 2026-07-28 has ping, and "the receiver MUST respond promptly": over stdio and HTTP."""
    from mcp import Client

    assert not any(r.get("msg", {}).get("method") == "ping" for r in read(stdio_tape).records
                   if isinstance(r.get("msg"), dict))

    async def pings(target) -> list:
        async with Client(target, mode="legacy") as client:  # the SDK pings only in the handshake eras
            return [await client.send_ping(), await client.send_ping()]

    answers = anyio.run(pings, StdioServerParameters(command=MCPTAPE, args=["replay", stdio_tape, "--stdio"]))
    assert len(answers) == 2
    tape, _ = recorded_session(demo_server, record, "legacy")
    with replaying(str(tape)) as url:
        assert len(anyio.run(pings, url)) == 2


def test_a_miss_names_the_closest_message_of_its_own_kind(tmp_path):
    """A request never comes closest to a notification (a miss's error names a recorded request)."""
    from mcptape.replay.recorded import load
    from mcptape.replay.serve import Replayer
    from mcptape.tape import records

    from .conftest import write_tape

    path = write_tape(tmp_path / "t.mcptape", [
        records.stdio_line(1.0, records.C2S, json.dumps(line).encode())
        for line in (INIT, {"jsonrpc": "2.0", "method": "tools/call"}, call(2, "add", {"a": 1, "b": 2}))])
    replayer = Replayer(load(path))
    outcome = replayer.answer(call(5, "add", {"a": 9}), replayer.open_session())
    assert "closest: record 2 tools/call" in outcome.body["error"]["message"], outcome.body


# -- one loaded tape, several replays ---------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["streamable", "legacy"])
def test_one_loaded_tape_serves_two_replays_at_once(demo_server, record, transport):
    """What a replay did with a tape (which answers it used up, which requests the client asked) is the replay's
    own: two replays of one loaded Recording, two SDK clients at the same time, and each gets the whole recorded
    session. A standalone GET (or a legacy channel) is served once per replay, so shared counts would starve the
    second; a replay that served nothing still has every recorded request unused."""
    from mcp.client.sse import sse_client

    from mcptape.replay import serving
    from mcptape.replay.recorded import load
    from mcptape.replay.serve import Replayer

    from .test_replay_across import legacy_session

    def session(url: str):
        return script(url, "legacy") if transport == "streamable" else legacy_session(sse_client(url))

    rec = record(demo_server("--event-store") if transport == "streamable" else demo_server("--sse"))
    direct = anyio.run(session, rec.url)
    rec.stop()
    recording = load(str(rec.tape))
    first, second, idle = Replayer(recording), Replayer(recording), Replayer(recording)

    async def both() -> list[list[str]]:
        got: list[list[str]] = [[], []]
        async with serving(str(rec.tape), replayer=first) as a, serving(str(rec.tape), replayer=second) as b:
            async def run(i: int, url: str) -> None:
                got[i] = await session(url)

            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    group.start_soon(run, 0, a.url)
                    group.start_soon(run, 1, b.url)
        return got

    assert anyio.run(both) == [direct, direct]
    assert first.unused() == second.unused() == []
    assert first.unmatched == second.unmatched == []
    asked = [a for a in recording.answers if isinstance(a.request, dict) and "id" in a.request]
    assert asked and idle.unused() == asked


def test_edits_parsed_once_drive_two_editors_and_two_replays_independently(demo_server, record):
    """An edit's fire count is its Editor's, and an answer an edit stood in for is left unused by that replay
    alone: each replay's first tools/call gets the injected error, its retry the recorded answer."""
    from mcptape.edits import Editor, parse
    from mcptape.replay.recorded import load
    from mcptape.replay.serve import Replayer

    from .conftest import INITIALIZED

    parsed = [parse("error code=-32001 message=busy at=tools/call#1"), parse("drop at=ping")]
    one, two = Editor(parsed), Editor(parsed)
    assert one.plan(0.0, call(2, "add", {})).error is not None
    assert two.plan(0.0, call(2, "add", {})).error is not None  # fires again: its count is not on the edit
    assert not one.plan(0.0, call(3, "add", {}))  # times=1, once per Editor
    assert one.unfired() == two.unfired() == ["edit 'drop at=ping' never fired"]

    rec = record(demo_server())
    anyio.run(script, rec.url, "legacy")
    rec.stop()
    recording = load(str(rec.tape))
    urls = []
    with (replaying(str(rec.tape), replayer=Replayer(recording, editor=Editor(parsed))) as a,
          replaying(str(rec.tape), replayer=Replayer(recording, editor=Editor(parsed))) as b):
        sessions = {}
        for url in (a, b):
            status, headers, _ = post(url, INIT)
            sessions[url] = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
            post(url, INITIALIZED, sessions[url])
        for url in (a, b):  # interleaved: each replay's first call is its own
            assert post(url, call(2, "add", {"a": 2, "b": 3}), sessions[url])[2][-1]["error"]["message"] == "busy"
        for url in (a, b):
            answer = post(url, call(3, "add", {"a": 2, "b": 3}), sessions[url])[2][-1]
            urls.append(answer["result"]["structuredContent"])
    assert urls == [{"result": 5}, {"result": 5}]


def test_a_session_the_recorded_server_refused_stays_dead_in_the_replay():
    """The tape's server refused the session (a 404 once it expired): a replayed client that meets that 404 has a
    dead session from then on, so its DELETE gets the recorded server's 404, not 200 from mcptape (which check
    would then blame on the server)."""
    tape = str(Path(__file__).parent.parent / "cassettes" / "expired-session-404.mcptape")
    search = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "search", "arguments": {"query": "mcp"}}}
    with replaying(tape) as url:
        _, headers, _ = post(url, INIT)
        session = headers["mcp-session-id"]
        assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
        assert post(url, {**search, "id": 2}, session)[0] == 200
        assert post(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session)[0] == 200
        assert post(url, {**search, "id": 4}, session)[0] == 404  # as recorded: the session had expired
        delete = urllib.request.Request(url, method="DELETE", headers={**HEADERS, "Mcp-Session-Id": session})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(delete)
        assert refused.value.code == 404


def test_a_connection_a_client_left_open_ends_with_the_replay():
    """On every Python (3.12's server.close() leaves accepted connections open): the client sees the end."""
    import socket
    from urllib.parse import urlsplit

    tape = Path(__file__).parent.parent / "cassettes" / "resumed-stream.mcptape"
    with replaying(str(tape)) as url:
        where = urlsplit(url)
        client = socket.create_connection((where.hostname, where.port), timeout=10)
        client.sendall(b"OPTIONS /elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = client.recv(65536)
        assert answer.startswith(b"HTTP/1.1 ")  # answered, and kept alive
    try:
        assert client.recv(65536) == b""  # closed by the replay as it ended, not left for the client to drop
    finally:
        client.close()


def test_a_paced_answer_still_going_out_ends_with_the_replay():
    """A stream paced to crawl (its worker asleep between events) does not hold the replay's end: it is cut."""
    import socket
    from urllib.parse import urlsplit

    tape = Path(__file__).parent.parent / "cassettes" / "resumed-stream.mcptape"
    with replaying(str(tape), pace="x0.0001") as url:
        where = urlsplit(url)
        client = socket.create_connection((where.hostname, where.port), timeout=10)
        body = json.dumps(INIT).encode()
        client.sendall(f"POST {where.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                       + body)
        assert client.recv(65536).startswith(b"HTTP/1.1 200")  # its head came; its events crawl
        ending = time.monotonic()
    try:
        assert time.monotonic() - ending < 5  # the replay did not wait for the stream to finish at its pace
        while client.recv(65536):  # what had gone out, then the end
            pass
    finally:
        client.close()
