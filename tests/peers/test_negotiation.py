"""A 2026-07-28 'auto' client against a server that predates 2026-07-28: the official SDK client (auto mode)
recorded against the SDK server (it probes with server/discover: no initialize on the tape), then replayed with
`refuse-discover`, which plays an older server's answer to the probe. The client falls back to initialize, the
replay derives the handshake from the recorded discover answer and serves every recorded call."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

from mcptape.check import check

NEGOTIATION = {"no-fallback", "fallback-on-modern-error", "discover-refused"}
from mcptape.replay import replaying
from mcptape.tape.file import read


@pytest.fixture
def short_probe_timeout(monkeypatch) -> None:
    """The SDK's auto client gives server/discover its own timeout (10 s in mcp 2.3.0) before it falls back; a probe
    that is never answered waits all of it. The fallback is the same after one second, and the suite waits less."""
    import mcp.client.session

    assert mcp.client.session.DISCOVER_TIMEOUT_SECONDS >= 1  # the name the SDK reads at each probe
    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", 1.0)


async def session(url: str) -> list[str]:
    """What an application does: list, call, read; the lines it saw."""
    async with Client(url, mode="auto") as client:
        lines = [f"protocol {client.protocol_version}"]
        lines.append(",".join(sorted(t.name for t in (await client.list_tools()).tools)))
        lines.append(json.dumps((await client.call_tool("add", {"a": 2, "b": 3})).structured_content))
        lines.append((await client.read_resource("demo://hello")).contents[0].text)
        return lines


def methods(tape) -> list[str]:
    return [r["msg"]["method"] for r in tape.records if r["kind"] == "http.request" and isinstance(r.get("msg"), dict)
            and "method" in r["msg"]]


@pytest.fixture
def recorded(demo_server, record):
    rec = record(demo_server())
    lines = anyio.run(session, rec.url)
    code, _, err = rec.stop()
    assert code == 0, err
    tape = read(rec.tape)
    assert methods(tape)[0] == "server/discover" and "initialize" not in methods(tape)  # a 2026-only tape
    return rec.tape, lines


HTTP_REFUSALS = ["refuse-discover status=400", "refuse-discover status=400 code=-32600",
                 "refuse-discover status=400 code=-32602", 'refuse-discover status=404 body="Invalid session ID"',
                 'refuse-discover status=404 body="Session not found"', "refuse-discover status=405",
                 "refuse-discover code=-32601"]


@pytest.mark.parametrize("edit", HTTP_REFUSALS)
def test_the_auto_client_falls_back_and_gets_every_recorded_answer(recorded, tmp_path, edit):
    tape, direct = recorded
    log = tmp_path / "replay.mcptape"
    with replaying(str(tape), edits=(edit,), log=str(log)) as url:
        lines = anyio.run(session, url)
    assert lines[0] == "protocol 2025-11-25"  # it fell back to the handshake …
    assert lines[1:] == direct[1:]  # … and got what the 2026-aware server answered
    played = read(log)
    assert methods(played)[:2] == ["server/discover", "initialize"]
    edits = [r for r in played.records if r["kind"] == "edit"]
    assert edits[0]["edits"] == [edit] and edits[1]["edits"] == ["derived-handshake"]
    found = [f for f in check([str(log)]) if f.severity == "error" or f.rule in NEGOTIATION]
    assert found == [], [(f.rule, f.message) for f in found]


def stdio_server(*wrapper: str):
    import sys

    from mcp import StdioServerParameters

    from ..conftest import MCPTAPE

    return StdioServerParameters(command=MCPTAPE, args=[*wrapper, "--", sys.executable, "-m",
                                                        "mcptape.demo.server", "--stdio"])


async def stdio_session(server) -> list[str]:
    async with Client(server, mode="auto") as client:
        return [f"protocol {client.protocol_version}",
                json.dumps((await client.call_tool("add", {"a": 2, "b": 3})).structured_content)]


def test_over_stdio_method_not_found_live_sends_the_auto_client_back_to_initialize(tmp_path):
    tape = tmp_path / "live.mcptape"
    lines = anyio.run(stdio_session, stdio_server("record", "-o", str(tape), "--edit",
                                                  "refuse-discover code=-32601"))
    assert lines == ["protocol 2025-11-25", '{"result": 5}']
    recorded = read(tape).records
    sent = [r["msg"].get("method") for r in recorded if r["kind"] == "stdio.line" and r["dir"] == "c2s"]
    assert sent[:2] == ["server/discover", "initialize"]
    assert [r["edits"] for r in recorded if r["kind"] == "edit"] == [["refuse-discover code=-32601"]]
    assert not [f for f in check([str(tape)]) if f.rule in NEGOTIATION or f.severity == "error"]


def test_over_stdio_a_server_that_exits_on_the_probe_leaves_no_fallback(tmp_path):
    """go-sdk #1177: the server exits on server/discover; the client cannot fall back on a dead process."""
    tape = tmp_path / "live.mcptape"
    server = stdio_server("record", "-o", str(tape), "--edit", "refuse-discover answer=exit")

    async def dies() -> None:
        with anyio.fail_after(30):  # it fails at once: a hang would end here instead, and fail the test
            await stdio_session(server)

    with pytest.raises(Exception) as failed:
        anyio.run(dies)
    assert not isinstance(failed.value, TimeoutError)
    recorded = read(tape).records
    assert [r["detail"] for r in recorded if r["kind"] == "edit"] == ["the server exited instead of answering"]
    assert any(r["kind"] == "stdio.exit" for r in recorded)
    sent = [r["msg"].get("method") for r in recorded if r["kind"] == "stdio.line" and r["dir"] == "c2s"]
    assert sent == ["server/discover"]
    assert [f.rule for f in check([str(tape)]) if f.rule in NEGOTIATION] == ["no-fallback"]  # it could not


@pytest.mark.parametrize("edit", HTTP_REFUSALS)
def test_live_the_auto_client_falls_back_on_each_refusal_met_in_the_field(demo_server, record, edit):
    rec = record(demo_server(), "--edit", edit)
    lines = anyio.run(session, rec.url)
    code, _, err = rec.stop()
    assert code == 0, err
    assert lines[0] == "protocol 2025-11-25" and lines[2] == '{"result": 5}'
    tape = read(rec.tape)
    assert methods(tape)[:2] == ["server/discover", "initialize"]
    found = [(f.rule, f.severity) for f in check([str(rec.tape)]) if f.severity != "info" or f.rule in NEGOTIATION]
    assert found == []


def test_no_answer_to_the_probe_the_auto_client_falls_back_after_its_own_timeout(recorded, tmp_path,
                                                                               short_probe_timeout):
    """The SDK's auto client gives the probe a few seconds (its own timeout, ~10 s in mcp 2.3.0, 1 s here), then falls
    back: the replay withholds the recorded answer to server/discover and serves the rest."""
    tape, direct = recorded
    log = tmp_path / "replay.mcptape"
    with replaying(str(tape), edits=("refuse-discover answer=none",), log=str(log)) as url:
        lines = anyio.run(session, url)
    assert lines[0] == "protocol 2025-11-25" and lines[1:] == direct[1:]
    played = read(log)
    assert methods(played)[:2] == ["server/discover", "initialize"]
    found = [f for f in check([str(log)]) if f.severity == "error" or f.rule in NEGOTIATION]
    assert found == [], [(f.rule, f.message) for f in found]


def test_modern_only_an_older_client_meets_a_server_of_2026_07_28_only(demo_server, record):
    """The reverse: a legacy client (the SDK in legacy mode) has no fall-forward; its initialize gets the answer
    the edit gives and no session id ever reaches it."""
    rec = record(demo_server(), "--edit", "modern-only status=400")

    async def legacy() -> None:
        with anyio.fail_after(30):
            async with Client(rec.url, mode="legacy"):
                pass

    with pytest.raises(Exception) as failed:
        anyio.run(legacy)
    assert not isinstance(failed.value, TimeoutError)
    rec.stop()
    tape = read(rec.tape)
    assert methods(tape) == ["initialize"]
    answered = [r for r in tape.records if r["kind"] == "http.response"]
    assert [r["status"] for r in answered] == [400] and not any(r.get("session") for r in answered)
    body = json.loads(answered[0]["raw"] if "raw" in answered[0] else json.dumps(answered[0]["msg"]))
    assert body["error"]["code"] == -32020


@pytest.fixture
def stdio_recorded(tmp_path):
    tape = tmp_path / "stdio.mcptape"
    assert anyio.run(stdio_session, stdio_server("record", "-o", str(tape))) == ["protocol 2026-07-28",
                                                                                '{"result": 5}']
    sent = [r["msg"].get("method") for r in read(tape).records if r["kind"] == "stdio.line" and r["dir"] == "c2s"]
    assert sent[0] == "server/discover" and "initialize" not in sent
    return tape


def replay_stdio(tape, log, *edits: str):
    from mcp import StdioServerParameters

    from ..conftest import MCPTAPE

    args = ["replay", str(tape), "--stdio", "--log", str(log)]
    for edit in edits:
        args += ["--edit", edit]
    return StdioServerParameters(command=MCPTAPE, args=args)


def test_a_2026_stdio_tape_replayed_as_an_older_server(stdio_recorded, tmp_path):
    log = tmp_path / "replay.mcptape"
    lines = anyio.run(stdio_session, replay_stdio(stdio_recorded, log, "refuse-discover code=-32601"))
    assert lines == ["protocol 2025-11-25", '{"result": 5}']
    played = read(log).records
    assert [r["edits"] for r in played if r["kind"] == "edit"] == [["refuse-discover code=-32601"],
                                                                    ["derived-handshake"]]
    assert not [f for f in check([str(log)]) if f.severity == "error" or f.rule in NEGOTIATION]


def test_a_2026_stdio_tape_replayed_as_a_server_that_exits_on_the_probe(stdio_recorded, tmp_path):
    log = tmp_path / "replay.mcptape"

    async def dies() -> None:
        with anyio.fail_after(30):
            await stdio_session(replay_stdio(stdio_recorded, log, "refuse-discover answer=exit"))

    with pytest.raises(Exception) as failed:
        anyio.run(dies)
    assert not isinstance(failed.value, TimeoutError)
    played = read(log).records
    assert [r["code"] for r in played if r["kind"] == "stdio.exit"] == [1]
    assert [f.rule for f in check([str(log)]) if f.rule in NEGOTIATION] == ["no-fallback"]


@pytest.mark.parametrize("code", [-32020, -32021])
def test_the_sdk_auto_client_falls_back_on_a_modern_error_and_check_says_so(demo_server, record, code):
    """mcp 2.3.0's auto mode falls back to initialize on any refused probe, modern errors included, where the spec
    says a modern error means a modern server: stay modern. A real finding on a real client."""
    rec = record(demo_server(), "--edit", f"refuse-discover status=400 code={code}")
    assert anyio.run(session, rec.url)[0] == "protocol 2025-11-25"
    rec.stop()
    (found,) = [f for f in check([str(rec.tape)]) if f.rule in NEGOTIATION]
    assert (found.rule, found.severity, found.blames, found.injected) == ("fallback-on-modern-error", "warning",
                                                                          "client", True)


def test_over_stdio_no_answer_to_the_probe_the_auto_client_falls_back_after_its_timeout(tmp_path, short_probe_timeout):
    tape = tmp_path / "live.mcptape"
    lines = anyio.run(stdio_session, stdio_server("record", "-o", str(tape), "--edit", "refuse-discover answer=none"))
    assert lines == ["protocol 2025-11-25", '{"result": 5}']
    recorded = read(tape).records
    assert [r["detail"] for r in recorded if r["kind"] == "edit"] == ["withheld the answer to the probe"]
    found = check([str(tape)])
    assert not [f for f in found if f.rule in NEGOTIATION]
    # the probe was never answered, by the edit's doing: whatever is said of it is blamed on nobody
    assert all((f.method, f.blames, f.injected) == ("server/discover", "none", True) for f in found
               if f.severity == "error")


def test_the_derived_session_lives_until_the_client_deletes_it(recorded, tmp_path):
    import urllib.error
    import urllib.request

    tape, _ = recorded
    log = tmp_path / "replay.mcptape"
    with replaying(str(tape), edits=("refuse-discover status=400",), log=str(log)) as url:
        anyio.run(session, url)  # falls back, works, and DELETEs its session at the end
        played = read(log).records
        minted = next(r["session"] for r in played if r["kind"] == "http.response" and r.get("session"))
        deleted = [r for r in played if r["kind"] == "http.request" and r["method"] == "DELETE"]
        assert deleted and deleted[0]["session"] == minted
        body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).encode()
        request = urllib.request.Request(url, body, {"content-type": "application/json", "mcp-session-id": minted,
                                                     "accept": "application/json, text/event-stream"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 404
