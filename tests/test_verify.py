"""`mcptape verify`: tapes recorded from real SDK sessions, re-driven against real servers (the demo server, and
tests/verify_server.py, which answers differently or not at all)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

import mcptape
from mcptape.demo.client import script
from mcptape.tape.file import read

from .conftest import MCPTAPE, free_port, run_mcptape, spawn_demo, start_recording, stop, wait_for_port
from .node_peers import ts_server  # noqa: F401  (a fixture)
from .test_record_stdio import DEMO, RawClient, wrapped

SERVER = str(Path(__file__).with_name("verify_server.py"))


@pytest.fixture
def other_server():
    """tests/verify_server.py over HTTP: `url = other_server("--token", "t")`."""
    procs: list[subprocess.Popen] = []

    def start(*flags: str) -> str:
        port = free_port()
        proc = subprocess.Popen([sys.executable, SERVER, "--port", str(port), *flags],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        wait_for_port(port, proc)
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for proc in procs:
        stop(proc)


# What verify waits for a message the tape holds and the live server never sends (the demo script's countdown
# progress, which tests/verify_server.py has no tool for): its default 10 s, waited out in full, is 3 s here.
MISSING_WAIT = "3"


@pytest.fixture(scope="module")
def demo_tape(tmp_path_factory) -> Iterator[tuple[Path, str]]:
    """The demo client's script recorded once through `mcptape record` from a demo server that stays up for the
    module: (tape, upstream). The tests that only read the tape share it; one that changes it copies it first."""
    port = free_port()
    server = spawn_demo(port)
    upstream = f"http://127.0.0.1:{port}/mcp"
    try:
        rec = start_recording(upstream, tmp_path_factory.mktemp("verify") / "run0.mcptape")
        anyio.run(script, rec.url, "legacy")
        assert rec.stop()[0] == 0
        yield rec.tape, upstream
    finally:
        stop(server)


def verify(tape, *args: str, timeout: float = 60) -> tuple[int, dict, str]:
    result = subprocess.run([str(Path(sys.executable).parent / "mcptape"), "verify", str(tape), "--format", "json",
                             *args], capture_output=True, text=True, timeout=timeout)
    assert result.returncode in (0, 1, 2), result.stderr
    return result.returncode, json.loads(result.stdout) if result.returncode != 2 else {}, result.stderr


def findings(tape) -> list[str]:
    result = run_mcptape("check", str(tape), "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    return [f["rule"] for f in json.loads(result.stdout)["findings"]]


async def elicit_and_add(url: str) -> list[str]:
    """A session with a server request in it (greet asks the client for a name) and progress (countdown)."""

    async def name(context, params):
        from mcp.types import ElicitResult

        return ElicitResult(action="accept", content={"name": "Ada"})

    async with Client(url, mode="legacy", elicitation_callback=name) as client:
        greeting = await client.call_tool("greet", {})
        total = await client.call_tool("add", {"a": 2, "b": 3})
        counted = await client.call_tool("countdown", {"steps": 2, "delay": 0.01})
        return [greeting.content[0].text, json.dumps(total.structured_content), counted.content[0].text]


def test_session_era_tape_verifies_against_the_same_server_and_the_log_checks_clean(demo_server, record, tmp_path):
    upstream = demo_server()
    rec = record(upstream)
    assert anyio.run(elicit_and_add, rec.url)[0] == "hello Ada"
    rec.stop()
    log = tmp_path / "new.mcptape"
    code, out, err = verify(rec.tape, "--upstream", upstream, "--log", str(log))
    assert (code, out["differences"], out["missed"]) == (0, [], []), err
    assert out["summary"]["calls"] == 5  # initialize, three calls, and the elicitation answer is no call of ours
    assert findings(log) == []
    # the elicitation went to the live server's own request, answered with the recorded answer
    sent = [r["msg"] for r in read(log).records if r["kind"] == "http.request" and "result" in r.get("msg", {})]
    assert [m["result"] for m in sent] == [{"action": "accept", "content": {"name": "Ada"}}]
    # a second live session: the recorded session id was mapped to the live one
    sessions = {r["session"] for r in read(log).records if r["kind"] == "http.request" and r["session"]}
    recorded = {r["session"] for r in read(rec.tape).records if r["kind"] == "http.request" and r["session"]}
    assert sessions and not sessions & recorded


def test_a_resumed_stream_resumes_from_the_live_event(demo_server, record, tmp_path):
    """The server drops a call's stream halfway; the client resumes it with Last-Event-ID. Re-driven, the resumption
    waits for the stream's end and names the live server's event id, not the recorded one."""
    upstream = demo_server("--event-store")
    rec = record(upstream)

    async def resume(url: str) -> None:
        async with Client(url, mode="legacy") as client:
            assert (await client.call_tool("reconnect", {})).content[0].text == "reconnected"

    anyio.run(resume, rec.url)
    rec.stop()
    log = tmp_path / "new.mcptape"
    code, out, err = verify(rec.tape, "--upstream", upstream, "--log", str(log))
    assert (code, out["differences"], out["missed"]) == (0, [], []), err
    records = read(log).records
    get = next(r for r in records if r["kind"] == "http.request" and any(k.lower() == "last-event-id"
                                                                          for k, _ in r["headers"]))
    resumed = dict((k.lower(), v) for k, v in get["headers"])["last-event-id"]
    ids_before = [r.get("id") for r in records[:records.index(get)] if r["kind"] == "sse.event"]
    assert resumed == ids_before[-1]  # the priming event of the live dropped stream, already arrived
    recorded = read(rec.tape).records
    assert resumed not in {r.get("id") for r in recorded if r["kind"] == "sse.event"}  # the store counts on


def test_a_changed_server_fails_naming_the_call_and_the_pointer(demo_tape, other_server):
    tape, _ = demo_tape
    other = other_server()
    code, out, _ = verify(tape, "--upstream", other, "--timeout", MISSING_WAIT)
    assert code == 1
    changed = [d for d in out["differences"] if d["kind"] == "result-changed" and "tools/call (1st) add" in d["call"]]
    assert {(d["path"], d["a"], d["b"]) for d in changed} >= {("/result/structuredContent/result", 5, 6)}
    # the text form says the same in one line
    text = run_mcptape("verify", str(tape), "--upstream", other, "--timeout", MISSING_WAIT)
    assert text.returncode == 1
    assert re.search(r"result-changed +session 1 \(\w+ \| \w+\) tools/call \(1st\) add at "
                     r"/result/structuredContent/result: 5 -> 6", text.stdout), text.stdout
    # --ignore drops what the user says may differ (here, everything add and tools/list answer)
    code, out, _ = verify(tape, "--upstream", other, "--timeout", MISSING_WAIT, "--ignore",
                          "/result/structuredContent", "--ignore", "/result/content", "--ignore", "/result/tools")
    assert [d for d in out["differences"] if d["kind"] == "result-changed" and "tools/call (1st) add" in d["call"]] == []


def test_a_call_never_answered_is_reported_within_the_timeout(demo_server, other_server, record, tmp_path):
    rec = record(demo_server())

    async def nap(url: str) -> None:
        async with Client(url, mode="legacy") as client:
            await client.call_tool("sleep", {"seconds": 0.01})

    anyio.run(nap, rec.url)
    rec.stop()
    log = tmp_path / "new.mcptape"
    code, out, _ = verify(rec.tape, "--upstream", other_server(), "--timeout", "1", "--log", str(log))
    assert code == 1
    assert out["missed"] == ["unanswered: tools/call (request id 2) got no answer within 1s"]
    assert [(d["path"], d["a"], d["b"]) for d in out["differences"]
            if d["kind"] == "answered-in-a-only" and "tools/call (1st) sleep" in d["call"]] == [(None, "result", "unanswered")]
    assert "unanswered-request" in findings(log)  # and the log, checked, says so (its session was deleted)


def test_unreachable_server_and_unreadable_tape_exit_2(demo_tape, tmp_path):
    tape, _ = demo_tape
    code, _, err = verify(tape, "--upstream", f"http://127.0.0.1:{free_port()}/mcp")
    assert code == 2 and err.startswith("mcptape: cannot connect to 127.0.0.1") and "Traceback" not in err
    bad = tmp_path / "bad.mcptape"
    bad.write_bytes(b"not a tape")
    code, _, err = verify(bad, "--upstream", "http://127.0.0.1:1/mcp")
    assert code == 2 and "not an mcptape tape" in err
    code, _, err = verify(tape, "--", sys.executable, "-m", "mcptape.demo.server", "--stdio")
    assert code == 2 and "is a HTTP tape: give an upstream URL" in err


def test_stdio_tape_verifies_and_a_cancelled_call_stays_unanswered(tmp_path):
    tape = tmp_path / "stdio.mcptape"
    argv = wrapped(tape, *DEMO)
    assert anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")
    code, out, err = verify(tape, "--", *DEMO)
    assert (code, out["differences"], out["missed"]) == (0, [], []), err

    cancelled_tape, log = tmp_path / "cancelled.mcptape", tmp_path / "log.mcptape"
    client = RawClient(wrapped(cancelled_tape, *DEMO))
    client.handshake()
    client.cancel_in_flight(7)
    client.outlast(cancelled_tape, 8)
    client.close()
    assert "cancelled-without-response" in findings(cancelled_tape)
    code, out, err = verify(cancelled_tape, "--log", str(log), "--", *DEMO)
    assert (code, out["differences"], out["missed"]) == (0, [], []), err
    assert "cancelled-without-response" in findings(log)
    # the cancellation went out after the call's first progress, as recorded
    lines = [r["msg"] for r in read(log).records if r["kind"] == "stdio.line" and "msg" in r]
    cancel = next(i for i, m in enumerate(lines) if m.get("method") == "notifications/cancelled")
    assert any(m.get("method") == "notifications/progress" and m["params"]["progressToken"] == "t"
               for m in lines[:cancel])


def test_legacy_http_sse_tape_verifies(demo_server, record):
    upstream = demo_server("--sse")
    rec = record(upstream)

    async def legacy_client() -> None:
        async with sse_client(rec.url) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                await session.initialize()
                await session.list_tools()
                await session.call_tool("add", {"a": 4, "b": 5})

    anyio.run(legacy_client)
    rec.stop()
    code, out, err = verify(rec.tape, "--upstream", upstream)
    assert (code, out["differences"], out["missed"]) == (0, [], []), err
    assert out["summary"]["calls"] == 3


def test_2026_stateless_tape_verifies_with_its_closed_stream(demo_server, record, tmp_path):
    upstream = demo_server()
    rec = record(upstream)

    async def modern(url: str) -> None:
        async with Client(url, mode="2026-07-28") as client:
            with anyio.move_on_after(0.5):  # gives up: on this wire, closing the stream is the cancellation
                await client.call_tool("sleep", {"seconds": 5})
            await client.call_tool("add", {"a": 1, "b": 1})

    anyio.run(modern, rec.url)
    rec.stop()
    log = tmp_path / "new.mcptape"
    code, out, err = verify(rec.tape, "--upstream", upstream, "--log", str(log))
    assert (code, out["differences"], out["missed"]) == (0, [], []), err
    assert "cancelled-without-response" in findings(log)  # the stream closed again where the client closed it


def test_redacted_tape_needs_its_secret_and_verifies_with_it(other_server, record, tmp_path):
    upstream = other_server("--token", "s3cr3t", "--right")
    rec = record(upstream)

    async def authorized(url: str) -> None:
        http = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cr3t"})
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            await client.call_tool("add", {"a": 1, "b": 2})

    anyio.run(authorized, rec.url)
    rec.stop()
    assert b"s3cr3t" not in rec.tape.read_bytes()
    code, _, err = verify(rec.tape, "--upstream", upstream)
    assert code == 2 and "/headers/authorization" in err and "--secret" in err
    log = tmp_path / "new.mcptape"
    env = {**os.environ, "TOKEN": "s3cr3t"}
    result = subprocess.run([str(Path(sys.executable).parent / "mcptape"), "verify", str(rec.tape), "--upstream",
                             upstream, "--secret", "/headers/authorization=TOKEN", "--secret", "/query/none=TOKEN",
                             "--log", str(log)], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "mcptape: warning: --secret /query/none: the tape holds no redacted value there" in result.stderr
    assert b"s3cr3t" not in log.read_bytes()  # the log is redacted as any recording


def test_a_redacted_message_needs_its_secret_and_the_log_keeps_it_out(tmp_path):
    """A tape whose tool argument was redacted (as `mcptape record` does for credentials), re-driven with the
    secret from the environment; the server echoes it, and the new tape still holds only the pseudonym."""
    from mcptape.tape.file import Writer

    secret, pseudonym = "hunter2", "<redacted:0123456789ab>"
    recorded, tape = tmp_path / "plain.mcptape", tmp_path / "redacted.mcptape"
    stdio = [sys.executable, SERVER, "--stdio", "--right"]
    client = RawClient(wrapped(recorded, *stdio))
    client.handshake()
    client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo",
                                                                              "arguments": {"text": secret}}})
    assert client.receive()["result"]["content"][0]["text"] == secret
    client.close()
    original = read(recorded)
    with Writer(tape, original.header) as writer:  # the same tape, the secret replaced wherever it stood
        for record in original.records:
            writer.write(json.loads(json.dumps(record).replace(secret, pseudonym)))
    code, _, err = verify(tape, "--", *stdio)
    assert code == 2 and "/params/arguments/text (tools/call, record" in err and "--secret" in err
    log = tmp_path / "log.mcptape"
    result = subprocess.run([str(Path(sys.executable).parent / "mcptape"), "verify", str(tape), "--secret",
                             "/params/arguments/text=ECHOED", "--log", str(log), "--", *stdio],
                            capture_output=True, text=True, env={**os.environ, "ECHOED": secret}, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert secret.encode() not in log.read_bytes() and pseudonym.encode() in log.read_bytes()


def test_update_keeps_the_old_tape_beside_the_new(demo_tape, other_server, tmp_path):
    tape = tmp_path / "run0.mcptape"
    tape.write_bytes(before := demo_tape[0].read_bytes())
    other = other_server()
    code, out, _ = verify(tape, "--upstream", other, "--update", "--timeout", MISSING_WAIT)
    assert code == 0 and out["differences"]
    kept = Path(out["updated"])
    assert kept.name == "run0.old.mcptape" and kept.read_bytes() == before
    code, out, _ = verify(tape, "--upstream", other)
    assert code == 0 and out["differences"] == []


def test_the_python_api_and_the_lazy_import(demo_tape, other_server):
    from mcptape.redrive import VerifyError

    tape, upstream = demo_tape
    assert mcptape.verify(tape, upstream=upstream).ok
    result = mcptape.verify(tape, upstream=other_server(), timeout=float(MISSING_WAIT))
    assert not result.ok and "at /result/structuredContent/result: 5 -> 6" in result.report()
    with pytest.raises(VerifyError, match="cannot connect"):
        mcptape.verify(tape, upstream=f"http://127.0.0.1:{free_port()}/mcp")
    # the stdio wrapper's start: the package imports neither asyncio nor mitmproxy until verify is asked for
    probe = "import sys, mcptape; assert 'asyncio' not in sys.modules and 'mitmproxy' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", probe]).returncode == 0


@pytest.mark.parametrize("transport", ["streamableHttp", "sse"])
def test_typescript_reference_server_verifies_a_tape_the_inspector_recorded(ts_server, record, tmp_path,
                                                                              transport):
    from .node_peers import inspector
    from .test_typescript_peers import FLAG

    upstream = ts_server(transport)
    rec = record(upstream)
    inspector([rec.url, "--transport", FLAG[transport]], "tools/call", "--tool-name", "get-sum",
              "--tool-arg", "a=2", "--tool-arg", "b=3")
    assert rec.stop()[0] == 0
    log = tmp_path / "new.mcptape"
    code, out, err = verify(rec.tape, "--upstream", upstream, "--log", str(log))
    assert (code, out["differences"], out["missed"]) == (0, [], []), err
    assert out["summary"]["calls"] >= 3  # initialize, tools/list, tools/call (and logging/setLevel)
    # the reference server asks the client things on its own clock (roots/list after the handshake): one it asks
    # as the re-drive ends may be left pending, as it may be for any client leaving; nothing else is found
    found = json.loads(run_mcptape("check", str(log), "--format", "json", "--fail-on", "never").stdout)["findings"]
    pending = {"capture-incomplete", "unanswered-request"}
    assert [(f["rule"], f["dir"]) for f in found if not (f["dir"] == "s2c" and f["rule"] in pending)] == []


def test_a_redacted_value_in_an_answer_compares_equal_to_anything():
    from mcptape.blend import blend  # what verify's comparison (diff's) matches a redacted answer with

    def matches(recorded, live) -> bool:
        return blend(recorded, live) == recorded

    assert matches("<redacted:0123456789ab>", "anything")
    assert matches("<redacted:0123456789ab>", 42)
    assert matches("Bearer <redacted:0123456789ab> for you", "Bearer xyz for you")
    assert not matches("Bearer <redacted:0123456789ab> for you", "Basic xyz for me")
    assert not matches("plain", "other")


# -- the script, on synthetic tapes (fast, in process) ---------------------------------------------------------------


def line(t: float, direction: str, msg: dict) -> dict:
    from mcptape.tape import records

    return records.stdio_line(t, direction, json.dumps(msg).encode())


def test_each_client_message_needs_the_server_messages_it_followed(tmp_path):
    from mcptape.redrive import script as scripted
    from mcptape.tape import records

    from .conftest import INIT, INITIALIZED, write_tape

    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "slow", "_meta": {"progressToken": "p"}}}
    tape = write_tape(tmp_path / "t.mcptape", [
        records.capture_start(0.0, "test", {"stdio": ["srv"], "cwd": "/"}, {}),
        line(0.1, "c2s", INIT),
        line(0.2, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25"}}),
        line(0.3, "c2s", INITIALIZED),
        line(0.4, "c2s", call),
        line(0.5, "s2c", {"jsonrpc": "2.0", "id": 0, "method": "roots/list"}),
        line(0.6, "s2c", {"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": "p", "progress": 1}}),
        line(0.7, "c2s", {"jsonrpc": "2.0", "id": 0, "result": {"roots": []}}),
        line(0.8, "s2c", {"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": "p", "progress": 2}}),
        line(2.0, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}),
        # the server had not yet seen the cancellation: its progress and answer crossed it
        line(2.05, "s2c", {"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": "p", "progress": 3}}),
        line(2.06, "s2c", {"jsonrpc": "2.0", "id": 2, "result": {}}),
        line(2.1, "c2s", {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "quick"}}),
        line(2.2, "s2c", {"jsonrpc": "2.0", "id": 3, "result": {}}),
        records.stdio_eof(2.3, "c2s"),
    ])
    script = scripted.build(tape)
    assert script.stdio and [s.kind for s in script.steps] == ["line"] * 6 + ["eof"]
    session = script.steps[0].session
    needs = [[(key[1:], n) for key, n in s.needs] for s in script.steps]
    assert needs == [[], [(("answer", 1), 1)], [],
                     [(("ask", "roots/list"), 1), (("progress", "p"), 1)],  # the answer to the server's request
                     [(("progress", "p"), 2)],  # the cancellation: after the second progress, as recorded
                     [],  # not the progress nor the answer that crossed the cancellation: a re-drive may not get them
                     [(("answer", 3), 1)]]
    assert all(key[0] == session for s in script.steps for key, _ in s.needs)
    assert script.steps[3].answers == {0: ("roots/list", 1)}  # answered under the live request's id
    assert script.steps[4].gave_up is None  # it waits on a message, not on the clock
    assert script.redacted() == [] and script.methods[(session, 3)] == "tools/call"


@pytest.mark.parametrize("transport", ["streamable-http", "stdio"])
def test_what_raced_a_cancellation_is_not_waited_for_but_the_rest_still_is(tmp_path, transport):
    """A log line after the cancellation, on the cancelled call's own stream, may not come again; the same line on
    stdio could be any call's (the wire says nothing of whom it is for), so it is still waited for."""
    from mcptape.redrive import script as scripted
    from mcptape.testing.builder import Conversation, Event, notification, result

    def log(text: str) -> dict:
        return notification("notifications/message", {"level": "info", "data": text})

    def progress(n: int) -> dict:
        return notification("notifications/progress", {"progressToken": "slow", "progress": n})

    c = Conversation(transport=transport)
    c.initialize()
    slow = {"name": "slow", "_meta": {"progressToken": "slow"}}
    if transport == "stdio":
        c.request("tools/call", slow, id=10)
        c.line("s2c", log("started"))
        c.line("s2c", progress(1))
        c.notify("notifications/cancelled", {"requestId": 10})
        for late in (log("still going"), progress(2), result(10, {"content": []})):
            c.line("s2c", late)  # crossed the cancellation
    else:
        ex = c.exchange({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": slow},
                        events=[Event(msg=log("started")), Event(msg=progress(1))], end=None)
        c.notify("notifications/cancelled", {"requestId": 10})
        for late in (log("still going"), progress(2), result(10, {"content": []})):
            c.sse(ex, late)
        c.end(ex)
    c.call("tools/call", {"name": "quick"}, before=[log("quick")], stream=True, id=11)
    c.notify("notifications/roots/list_changed")
    script = scripted.build(c.write(tmp_path / "t.mcptape"))
    cancel, quick, last = script.steps[-3:]

    def needs(step) -> dict:  # (an HTTP step also waits for the answer to the POST before it: not the point here)
        return {key[1:]: n for key, n in step.needs if key[1] != "http"}

    assert needs(cancel) == {("note", "notifications/message"): 1, ("progress", "slow"): 1}
    assert needs(quick) == ({} if transport != "stdio" else
                            {("note", "notifications/message"): 2})
    expected = {("answer", 11): 1, ("note", "notifications/message"): 2 if transport != "stdio" else 3}
    assert needs(last) == expected


def test_a_cancellation_with_nothing_to_wait_for_keeps_its_recorded_delay(tmp_path):
    from mcptape.redrive import script as scripted
    from mcptape.tape import records

    from .conftest import INIT, write_tape

    tape = write_tape(tmp_path / "t.mcptape", [
        records.capture_start(0.0, "test", {"stdio": ["srv"], "cwd": "/"}, {}),
        line(0.1, "c2s", INIT),
        line(0.2, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25"}}),
        line(1.0, "c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow"}}),
        line(1.5, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}),
    ])
    cancel = scripted.build(tape).steps[-1]
    assert cancel.needs == [] and cancel.gave_up[1] == pytest.approx(0.5)


def test_redacted_positions_the_conversation_needs_are_named(tmp_path):
    from mcptape.redrive import VerifyError, verify as run
    from mcptape.tape import records

    from .conftest import INIT, write_tape

    secret = "<redacted:00112233aabb>"
    tape = write_tape(tmp_path / "t.mcptape", [
        records.capture_start(0.0, "test", {"stdio": ["srv"], "cwd": "/"}, {}),
        line(0.1, "c2s", INIT),
        line(0.2, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25"}}),
        line(0.3, "c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "login", "arguments": {"key": secret, "again": [secret]}}}),
    ])
    with pytest.raises(VerifyError) as e:
        run(tape, command=["true"])
    assert str(e.value) == (f"{tape} is redacted where the conversation needs the secret: /params/arguments/key "
                            f"(tools/call, record 3); /params/arguments/again/0 (tools/call, record 3); give each "
                            f"with --secret POINTER=ENVVAR")


def test_a_server_that_breaks_off_or_compresses_its_stream_is_logged_as_it_was(tmp_path):
    """tests/rawserver.py scripts each answer by a header the tape's request carries: a stream cut mid-event is an
    upstream reset in the log (not a crash of verify), a gzip-encoded stream is read through its encoding."""
    from mcptape.tape import records

    from .conftest import write_tape
    from .rawserver import RawServer

    def exchange(n: int, behaviour: str, answer: list[dict]) -> list[dict]:
        call = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": behaviour}}
        out = [records.http_request(n, n, 0, "POST", "/mcp", [], [("X-Behaviour", behaviour),
               ("Content-Type", "application/json")], None, None, True, {"msg": call}),
               records.http_response(n, n, 200, "OK", [("Content-Type", "text/event-stream")], None, {})]
        out += [{"kind": "sse.event", "t": n, "exchange": n, "dir": "s2c", "msg": m} for m in answer]
        return out + [records.end(n, n, "complete")]

    def progress(i: int) -> dict:
        return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": i}}

    tape = write_tape(tmp_path / "raw.mcptape", [*exchange(1, "gzip-sse", [progress(1), progress(2)]),
                                                 *exchange(2, "die-mid-stream", [progress(1)])])
    server = RawServer()
    try:
        log = tmp_path / "log.mcptape"
        result = mcptape.verify(tape, upstream=server.url, log=log, timeout=2)
    finally:
        server.close()
    ends = {r["exchange"]: r["reason"] for r in read(log).records if r["kind"] == "end"}
    assert ends == {0: "complete", 1: "upstream-reset"}
    events = [r for r in read(log).records if r["kind"] == "sse.event" and r["exchange"] == 0]
    assert [e["msg"]["params"]["progress"] for e in events] == [1, 2]
    # neither call is answered, in the tape or now; what is new is the half event the server broke off in
    assert [(d.kind, d.path) for d in result.differences] == [("finding-new-in-b", "malformed-message")]
    assert result.missed == []


QUITTER = """
import json, sys
first = json.loads(sys.stdin.readline())
print(json.dumps({"jsonrpc": "2.0", "id": first["id"], "result": {"protocolVersion": "2025-11-25",
      "capabilities": {}, "serverInfo": {"name": "quitter", "version": "0"}}}), flush=True)
"""


def test_a_server_that_goes_away_is_not_waited_for(tmp_path):
    """A stdio server that answers initialize and exits: verify says so and sends the rest without waiting for
    answers that cannot come (however long --timeout is)."""
    tape = tmp_path / "stdio.mcptape"
    argv = wrapped(tape, *DEMO)
    assert anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")
    code, out, err = verify(tape, "--timeout", "120", "--", sys.executable, "-c", QUITTER, timeout=100)
    assert code == 1, err
    assert len(out["missed"]) == 1
    assert out["missed"][0].startswith("the server went away (the server closed its stdout): ")
    assert {d["kind"] for d in out["differences"]} >= {"answered-in-a-only"}


def test_https_upstream_needs_a_trusted_certificate_or_insecure(demo_server, record, tmp_path):
    from .test_record_transports import self_signed

    upstream = demo_server("--tls", *self_signed(tmp_path))
    rec = record(upstream, "--insecure")
    anyio.run(script, rec.url, "legacy")
    rec.stop()
    code, _, err = verify(rec.tape, "--upstream", upstream)
    assert code == 2 and "TLS with 127.0.0.1" in err and "--insecure" in err
    code, out, err = verify(rec.tape, "--upstream", upstream, "--insecure")
    assert (code, out["differences"], out["missed"]) == (0, [], []), err


def test_typescript_reference_server_over_stdio_two_runs_in_one_tape(tmp_path):
    """Two Inspector runs appended to one stdio tape: re-driven as two server processes, one after the other."""
    from .node_peers import ts_server_argv
    from .test_typescript_peers import conversation

    argv, env = ts_server_argv("stdio")
    tape = tmp_path / "stdio.mcptape"
    conversation([MCPTAPE, "record", "--append", "-o", str(tape), "--", *argv])
    log = tmp_path / "new.mcptape"
    # server-everything does not exit when its stdin closes: verify gives each run's server 2 s to go, then stops
    # it. A --timeout of 5 s still leaves each answer, Node's start-up included, ample time
    result = subprocess.run([MCPTAPE, "verify", str(tape), "--format", "json", "--log", str(log), "--timeout", "5",
                             "--", *argv], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["differences"] == []
    assert sum(r["kind"] == "capture.start" for r in read(log).records) == 2
