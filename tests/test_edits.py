"""Edits: faults injected into a replay (and into live traffic) on demand, and visible as injected in the log."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import anyio
import pytest
from mcp import Client, MCPError

from mcptape.edits import EditError, parse
from mcptape.replay import replaying
from mcptape.tape.file import read

from .conftest import (INIT, INITIALIZED, MCPTAPE, LineClient, call, free_port, run_mcptape, spawn_demo,
                       start_recording, stop)
from .test_replay import HEADERS, post

def _record(tmp, name: str, *flags: str):
    """A real session (SDK client and server, through `mcptape record`): initialize, tools/list, add, countdown
    (progress), resources/read."""
    from mcptape.demo.client import script

    port = free_port()
    server = spawn_demo(port, *flags)
    rec = start_recording(f"http://127.0.0.1:{port}/mcp", tmp / name)
    try:
        anyio.run(script, rec.url, "legacy")
    finally:
        stop(rec.proc)
        stop(server)
    return str(rec.tape)


@pytest.fixture(scope="module")
def tapes(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("edits")
    return {"sse": _record(tmp, "sse.mcptape", "--event-store"), "plain": _record(tmp, "plain.mcptape"),
            "json": _record(tmp, "json.mcptape", "--json")}


def open_session(url: str) -> str:
    status, headers, _ = post(url, INIT)
    assert status == 200
    session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    assert post(url, INITIALIZED, session)[0] == 202
    return session


def logged(log) -> tuple[list[dict], list[dict]]:
    """(edit records, records marked injected) of a replay log."""
    records = read(log).records
    return [r for r in records if r["kind"] == "edit"], [r for r in records if r.get("injected")]


def findings(log) -> list[dict]:
    out = run_mcptape("check", str(log), "--format", "json", "--fail-on", "never")
    return json.loads(out.stdout)["findings"]


# -- the language ---------------------------------------------------------------------------------------------------


def test_edits_parse_like_a_shell_line():
    edit = parse('expire-session status=401 body="Unauthorized: Session not found" at=post:3')
    assert (edit.action, str(edit.at), edit.times, edit.options) == (
        "expire-session", "post:3", 1, {"status": 401, "body": "Unauthorized: Session not found"})
    assert str(parse("drop at=tools/call times=all").at) == "tools/call#1"
    assert parse("drop at=tools/call times=all").times is None
    assert parse("delay seconds=1.5 at=after:10m").at.value == 600
    assert parse("status code=429 header='Retry-After: 7' at=id:abc").options["headers"] == [("Retry-After", "7")]
    with pytest.raises(EditError, match="choose from expire-session"):
        parse("expire at=post:1")


@pytest.mark.parametrize("edit, says", [
    ("explode at=post:1", "unknown action 'explode' (choose from expire-session, restart-server"),
    ("drop", "at=SELECTOR is required (post:N, METHOD#N, id:X, after:DURATION, session:N)"),
    ("drop at=post:x", "at='post:x': post: takes a number from 1"),
    ("drop at=tools/call#2 body=x", "drop takes no 'body' (it takes at, times)"),
    ("status at=post:1", "status needs code="),
    ("status code=999 at=post:1", "code='999': expected an HTTP status from 100 to 599"),
    ("malformed kind=garbled at=post:1", "kind='garbled': expected truncate or not-json or wrong-id"),
    ("drop at=post:1 times=0", "times='0': expected a positive number or 'all'"),
    ('status code=401 body="open at=post:1', "No closing quotation"),
    ("drop at=after:soon", "after: takes a duration like 500ms, 30s, 10m or 1h"),
])
def test_a_wrong_edit_is_one_line_naming_the_bad_part(tapes, edit, says):
    out = run_mcptape("replay", tapes["sse"], "--edit", edit)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and says in out.stderr and "Traceback" not in out.stderr


def test_http_only_edits_are_refused_on_stdio(tapes):
    for edit, says in [("status code=401 at=tools/call", "status is HTTP-only; on stdio use drop, delay, error"),
                       ("drop at=post:3", "at=post:3 is HTTP-only")]:
        out = run_mcptape("replay", tapes["sse"], "--stdio", "--edit", edit)
        assert out.returncode == 2 and says in out.stderr


def test_edits_from_a_file(tapes, tmp_path):
    path = tmp_path / "edits.txt"
    path.write_text("# seed 001\nexpire-session status=401 at=post:3\n\nexplode at=post:1\n")
    out = run_mcptape("replay", tapes["sse"], "--edits", str(path))
    assert out.returncode == 2 and f"{path}:4: edit 'explode at=post:1': unknown action" in out.stderr


def test_a_plan_becomes_one_effect_and_one_log_line_wherever_it_is_applied():
    """edits/effects.py turns a plan into what to do and what the edit record says, for the replays, the proxy
    and the stdio wrapper alike (in process: no peers)."""
    from mcptape import edits

    request, answer = call(2, "add", {"a": 2, "b": 3}), {"jsonrpc": "2.0", "id": 2, "result": {}}

    def plan(*texts: str, session: str = "s1") -> tuple[edits.Editor, edits.Plan]:
        editor = edits.Editor([parse(text) for text in texts])
        return editor, editor.plan(0.0, request, "POST", session)

    _, first = plan("delay seconds=0.5 at=tools/call", "error code=-32001 at=tools/call")
    assert edits.hold(first) == edits.Hold(0.5, detail="delayed the response by 0.5 s")
    error = edits.instead(first)
    assert (error.status, error.detail) == (200, "answered with a JSON-RPC error instead")
    assert json.loads(error.body)["error"]["code"] == -32001 and not edits.delivers(first)
    assert edits.instead(first, channel=True) is None  # on a legacy channel the error replaces the final response
    assert edits.announce(first, " (on the session's SSE channel)").detail == \
        "delay 0.5 s, answer JSON-RPC error -32001 (on the session's SSE channel)"
    editor, expired = plan("expire-session at=tools/call")
    assert (edits.instead(expired).status, edits.instead(expired).detail) == (404, "answered HTTP 404 instead")
    dead = edits.instead(editor.plan(0.1, request, "POST", "s1"))
    assert dead.detail == "answered HTTP 404 instead: the session is dead"
    assert edits.instead(plan("reset at=tools/call")[1]) == edits.Reset(detail="reset the connection")
    editor, twice = plan("duplicate at=tools/call", "malformed kind=not-json at=tools/call")
    assert edits.delivers(twice) and edits.instead(twice) is None
    assert edits.edit_events([{"msg": answer}], twice, 2, "").detail == \
        "sent the final response malformed (not-json); sent the final response twice"
    assert edits.edit_body(editor, twice, request, answer) == edits.Rewrite(  # JSON-framed: it cannot be sent twice
        b"mcptape: this is not JSON", detail="sent the response malformed (not-json)")
    assert editor.unfired() == ["edit 'duplicate at=tools/call' never fired: the answer to tools/call #2 add is "
                                "JSON-framed, not an SSE stream"]
    editor, dropped = plan("drop at=tools/call")
    assert not edits.delivers(dropped)
    assert edits.edit_body(editor, dropped, request, answer) == edits.Withhold(
        detail="withheld the response; the request stays open", withheld=(answer,))
    assert edits.edit_events([{"msg": answer}], dropped, 2, "").detail == "withheld the final response"
    assert edits.edit_events([{"msg": answer}], plan("delay seconds=1 at=tools/call")[1], 2, "").detail == \
        "nothing to change on this answer"


# -- sessions -------------------------------------------------------------------------------------------------------


def test_an_sdk_client_after_an_injected_expiry_keeps_the_dead_session(tapes, tmp_path):
    log = tmp_path / "log.mcptape"
    seen: list[str] = []

    async def run() -> None:
        async with Client(url, mode="legacy") as client:
            seen.append("tools " + str(len((await client.list_tools()).tools)))
            seen.append("add " + json.dumps((await client.call_tool("add", {"a": 2, "b": 3})).structured_content))
            for _ in range(2):  # the second tools/call, then a resource read: both on the dead session
                try:
                    await client.call_tool("countdown", {"steps": 3})
                except MCPError as e:
                    seen.append(f"error {e.error.message}")

    with replaying(tapes["sse"], log=str(log), edits=("expire-session at=tools/call#2",)) as url:
        anyio.run(run)
    assert seen == ["tools 8", 'add {"result": 5}', "error Session not found", "error Session not found"]

    edits, injected = logged(log)
    assert [e["detail"] for e in edits] == ["answered HTTP 404 instead"] + [
        "answered HTTP 404 instead: the session is dead"] * (len(edits) - 1)
    requests = {r["exchange"]: r for r in read(log).records if r["kind"] == "http.request"}
    refused = [requests[r["exchange"]] for r in injected if r["kind"] == "http.response"]
    assert all(r["status"] == 404 for r in injected if r["kind"] == "http.response")
    # both calls, and the client's closing DELETE, went out with the dead id
    assert [r["method"] for r in refused] == ["POST", "POST", "DELETE"]
    [get] = [r["exchange"] for r in requests.values() if r["method"] == "GET"]
    ended = [r for r in read(log).records if r["kind"] == "end" and r["exchange"] == get]
    assert ended and ended[0]["t"] <= refused[1]["t"]  # its GET stream ended with the session, as on a server
    by_rule = {f["rule"]: f for f in findings(log)}
    assert by_rule["dead-session-reuse"]["injected"] and by_rule["no-reinitialize"]["injected"]
    assert by_rule["dead-session-reuse"]["severity"] == "error"
    assert "orphan-response" not in by_rule  # the 404's null-id body answered no request: it is no orphan


def test_a_client_that_reinitializes_gets_a_new_session_and_the_rest_of_the_tape(tapes, tmp_path):
    log = tmp_path / "log.mcptape"
    with replaying(tapes["sse"], log=str(log), edits=("expire-session at=tools/call#2",)) as url:
        session = open_session(url)
        assert post(url, call(2, "add", {"a": 2, "b": 3}), session)[2][-1]["result"]["structuredContent"] == \
            {"result": 5}
        status, _, messages = post(url, call(3, "countdown", {"steps": 3}), session)
        assert status == 404 and messages[0]["error"]["message"] == "Session not found"
        fresh = open_session(url)
        assert fresh != session
        status, _, messages = post(url, call(4, "countdown", {"steps": 3}), fresh)
        assert status == 200 and messages[-1]["id"] == 4  # the injected 404 did not use up the recorded answer
        assert messages[-1]["result"]["content"][0]["text"] == "counted down from 3"
    rules = {f["rule"] for f in findings(log)}
    assert "dead-session-reuse" not in rules and "no-reinitialize" not in rules


def test_a_session_the_client_ended_is_not_blamed_on_an_earlier_edit(tapes, tmp_path):
    """An injected error on a live session does not make its later death an edit's doing: here the client ended it
    with DELETE and went on using it, all on its own."""
    log = tmp_path / "log.mcptape"
    with replaying(tapes["sse"], log=str(log), edits=("error code=-32001 message=busy at=tools/call#1",)) as url:
        session = open_session(url)
        assert post(url, call(2, "add", {"a": 2, "b": 3}), session)[2][-1]["error"]["message"] == "busy"
        request = urllib.request.Request(url, method="DELETE", headers={"Mcp-Session-Id": session})
        assert urllib.request.urlopen(request).status == 200
        assert post(url, call(3, "add", {"a": 2, "b": 3}), session)[0] == 404
    reuse = [f for f in findings(log) if f["rule"] == "dead-session-reuse"]
    assert len(reuse) == 1 and reuse[0]["injected"] is False


def test_restart_server_kills_every_session(tapes):
    with replaying(tapes["sse"], edits=("restart-server status=401 body='Unauthorized: Session not found' "
                                        "at=tools/call#1",)) as url:
        first, second = open_session(url), open_session(url)
        status, headers, _ = post(url, call(2, "add", {"a": 2, "b": 3}), second)
        assert status == 401
        assert post(url, call(3, "add", {"a": 2, "b": 3}), first)[0] == 401  # also gone
        third = open_session(url)
        assert post(url, call(4, "add", {"a": 2, "b": 3}), third)[0] == 200
    with replaying(tapes["sse"], edits=("expire-session status=410 at=tools/call",)) as url:
        status, _, messages = post(url, call(2, "add", {"a": 2, "b": 3}), open_session(url))
        assert status == 410 and messages[0]["error"]["message"] == "Session not found"  # says why, any status


# -- answers ----------------------------------------------------------------------------------------------------


def test_status_error_and_delay(tapes):
    edits = ("status code=401 at=tools/list", "status code=429 at=tools/call#1 body='slow down'",
             "error code=-32001 message='quota exceeded' at=tools/call#2", "delay seconds=0.3 at=resources/read")
    with replaying(tapes["sse"], edits=edits) as url:
        session = open_session(url)
        status, headers, body = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session)
        assert status == 401 and 'Bearer error="invalid_token"' in headers["WWW-Authenticate"]
        request = urllib.request.Request(url, data=json.dumps(call(3, "add", {"a": 2, "b": 3})).encode(),
                                         headers={**HEADERS, "Mcp-Session-Id": session})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request)
        assert refused.value.code == 429 and refused.value.headers["Retry-After"] == "1"
        assert refused.value.read() == b"slow down"
        status, _, messages = post(url, call(4, "countdown", {"steps": 3}), session)
        assert messages == [{"jsonrpc": "2.0", "id": 4, "error": {"code": -32001, "message": "quota exceeded"}}]
        start = time.monotonic()
        status, _, messages = post(url, {"jsonrpc": "2.0", "id": 5, "method": "resources/read",
                                         "params": {"uri": "demo://hello"}}, session)
        assert time.monotonic() - start >= 0.3 and messages[-1]["id"] == 5  # late, but the recorded answer


def raw_sse(url: str, msg: dict, session: str) -> tuple[bytes, str | None]:
    """POST over a socket; (the body bytes that came before the stream ended or stalled, how it ended)."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    body = json.dumps(msg).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n"
            f"MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    with socket.create_connection((host, int(port)), timeout=1.0) as s:
        s.sendall(head + body)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                return data, "stalled"
            except ConnectionResetError:
                return data, "reset"
            if not chunk:
                return data, "closed"
            data += chunk
            if data.endswith(b"\r\n0\r\n\r\n"):
                return data, "complete"


def events(data: bytes) -> list[str]:
    return [line[6:].decode() for line in data.split(b"\n") if line.startswith(b"data: ")]


def test_stream_edits(tapes, tmp_path):
    log = tmp_path / "log.mcptape"
    edits = ("drop at=tools/call#1", "drop-event n=2 at=tools/call#2", "duplicate at=tools/call#3",
             "malformed kind=wrong-id at=tools/call#4", "malformed kind=truncate at=tools/call#5", "reset at=id:9")
    with replaying(tapes["sse"], log=str(log), edits=edits) as url:
        session = open_session(url)
        data, ended = raw_sse(url, call(2, "add", {"a": 2, "b": 3}), session)
        assert ended == "stalled" and '"id":2' not in data.decode()  # no final response, the stream stays open
        data, ended = raw_sse(url, call(3, "countdown", {"steps": 3}, token="p"), session)
        progress = [json.loads(e)["params"]["progress"] for e in events(data) if "notifications/progress" in e]
        assert ended == "complete" and len(events(data)) == 7 and progress == [2, 3]  # event 2 was progress 1
        data, ended = raw_sse(url, call(4, "add", {"a": 2, "b": 3}), session)
        finals = [e for e in events(data) if '"result"' in e]
        assert len(finals) == 2 and finals[0] == finals[1]
        wrong = json.loads(events(raw_sse(url, call(5, "add", {"a": 2, "b": 3}), session)[0])[-1])
        assert wrong["id"] == "mcptape-wrong-id-5"
        cut = events(raw_sse(url, call(6, "add", {"a": 2, "b": 3}), session)[0])[-1]
        with pytest.raises(ValueError):
            json.loads(cut)
        assert raw_sse(url, call(9, "add", {"a": 2, "b": 3}), session)[1] in ("reset", "closed")
        # the dropped call is answered when the client retries it: the drop did not use up the recorded answer
        assert post(url, call(10, "add", {"a": 2, "b": 3}), session)[2][-1]["result"]["structuredContent"] == \
            {"result": 5}
    edits_logged, injected = logged(log)
    details = [e["detail"] for e in edits_logged]
    assert details[0] == "withheld the final response"
    assert edits_logged[0]["withheld"][0]["result"]["structuredContent"] == {"result": 5}
    assert details[1:] == ["dropped SSE event 2", "sent the final response twice",
                           "sent the final response malformed (wrong-id)", "sent the final response malformed "
                           "(truncate)", "reset the connection"]
    assert {r["exchange"] for r in injected} >= {e["exchange"] for e in edits_logged}
    blamed = [f for f in findings(log) if f["severity"] in ("error", "warning")]
    assert any(f["rule"] == "unanswered-request" and f["request_id"] == 9 for f in blamed)  # the reset one
    assert all(f["injected"] for f in blamed), [f for f in blamed if not f["injected"]]


@pytest.mark.parametrize("tape", ["sse", "plain"])
def test_close_stream_and_an_sdk_client_that_resumes(tapes, tmp_path, tape):
    """The stream ends after two events without the final response; the SDK client resumes it with
    Last-Event-ID and gets its result. A tape without event ids gets them made up (and a priming event)."""
    log = tmp_path / "log.mcptape"
    progress: list[float] = []

    async def run() -> str:
        async def on_progress(value, total, message) -> None:
            progress.append(value)

        async with Client(url, mode="legacy") as client:
            result = await client.call_tool("countdown", {"steps": 3}, progress_callback=on_progress)
            return result.content[0].text

    with replaying(tapes[tape], log=str(log), edits=("close-stream after=2 at=tools/call",)) as url:
        text = anyio.run(run)
    assert text == "counted down from 3" and progress == [1.0, 2.0, 3.0]
    records = read(log).records
    resumes = [r for r in records if r["kind"] == "http.request" and r["method"] == "GET"
               and any(k.lower() == "last-event-id" for k, _ in r["headers"])]
    assert len(resumes) == 1
    notes = logged(log)[0][0]["detail"]
    assert "closed the stream after 2 events" in notes
    assert ("added them and a priming event" in notes) == (tape == "plain")


def test_json_framed_answers_refuse_stream_edits_and_unfired_edits_are_reported(tapes):
    proc = subprocess.Popen([MCPTAPE, "replay", tapes["json"], "--edit", "duplicate at=tools/call",
                             "--edit", "drop at=ping"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().split(" at ")[1].split()[0]
        session = open_session(url)
        status, headers, messages = post(url, call(2, "add", {"a": 2, "b": 3}), session)
        assert {k.lower(): v for k, v in headers.items()}["content-type"] == "application/json"
        assert len(messages) == 1 and messages[0]["id"] == 2  # answered once, as recorded
    finally:
        stop(proc, signal.SIGINT)
    err = proc.stderr.read()
    assert "warning: edit 'duplicate at=tools/call' never fired: the answer to tools/call" in err
    assert "is JSON-framed, not an SSE stream" in err
    assert "warning: edit 'drop at=ping' never fired\n" in err


# -- stdio ----------------------------------------------------------------------------------------------------------


def test_stdio_edits(stdio_tape, tmp_path):
    log = tmp_path / "log.mcptape"
    client = LineClient([MCPTAPE, "replay", stdio_tape, "--stdio", "--log", str(log),
                         "--edit", "drop at=tools/call#1", "--edit", "error code=-32001 message=nope at=tools/call#2",
                         "--edit", "duplicate at=id:5", "--edit", "malformed kind=not-json at=id:6",
                         "--edit", "delay seconds=0.2 at=resources/read", "--edit", "drop at=prompts/get"])
    client.send(INIT)
    assert client.receive()["id"] == 1
    client.send(INITIALIZED)
    client.send(call(2, "add", {"a": 2, "b": 3}))
    assert client.lines(0.5) == []  # dropped: nothing is written
    client.send(call(3, "add", {"a": 2, "b": 3}))
    assert client.receive() == {"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "nope"}}
    client.send(call(4, "add", {"a": 2, "b": 3}))
    assert client.receive()["result"]["structuredContent"] == {"result": 5}  # the recorded answer, still unused
    client.send(call(5, "add", {"a": 2, "b": 3}))
    twice = client.lines(2.0, 2)
    assert len(twice) == 2 and twice[0] == twice[1] and json.loads(twice[0])["id"] == 5
    client.send(call(6, "add", {"a": 2, "b": 3}))
    assert client.lines(10, 1) == [b"mcptape: this is not JSON"]
    start = time.monotonic()
    client.send({"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": "demo://hello"}})
    assert client.receive()["id"] == 7 and time.monotonic() - start >= 0.2
    client.proc.stdin.close()
    assert client.proc.wait(20) == 0
    assert "warning: edit 'drop at=prompts/get' never fired" in client.proc.stderr.read().decode()
    edits, injected = logged(log)
    assert [e["detail"] for e in edits] == [
        "withheld the final response", "answered with a JSON-RPC error instead",
        "sent the final response twice", "sent the final response malformed (not-json)",
        "delayed the response by 0.2 s"]
    assert [r["dir"] for r in injected if r["kind"] == "stdio.line"] == ["s2c"] * 4


def test_the_dry_run_lists_where_each_edit_fires(tapes):
    out = run_mcptape("edits", tapes["sse"], "--edit", "expire-session at=tools/call#2",
                      "--edit", "status code=401 at=post:3", "--edit", "drop at=ping")
    assert out.returncode == 0
    fired = [line for line in out.stdout.splitlines() if line.startswith("record")]
    assert "POST tools/list" in fired[0] and "tools/call" in fired[1] and "countdown" in fired[1]
    assert "-> answer HTTP 401" in out.stdout and "-> answer HTTP 404 (the session is dead)" in out.stdout
    assert "DELETE" in fired[-1]
    assert out.stderr.splitlines() == [  # said before the dry run (edits.reach), then after it
        "mcptape: warning: edit 'drop at=ping': at=ping#1 is past what the tape recorded (0 ping message(s)); it "
        "fires only if the client sends more than the tape holds", "mcptape: warning: edit 'drop at=ping' never fired"]
    stdio = run_mcptape("edits", tapes["sse"], "--edit", "explode at=ping")
    assert stdio.returncode == 2 and "unknown action 'explode'" in stdio.stderr


# -- live traffic ---------------------------------------------------------------------------------------------------


@pytest.fixture
def live(tmp_path, demo_server):
    """`mcptape record --edit …` in front of a real SDK server: yields start(*edits, flags=()) -> Recording."""
    procs = []

    def start(*edits: str, flags: tuple[str, ...] = ("--event-store",)):
        args = [a for e in edits for a in ("--edit", e)]
        rec = start_recording(demo_server(*flags), tmp_path / f"live{len(procs)}.mcptape", *args)
        procs.append(rec.proc)
        return rec

    yield start
    for proc in procs:
        stop(proc)


def test_live_seed_001_a_stale_session_answered_401_from_the_third_post(live):
    rec = live('expire-session status=401 body="Unauthorized: Session not found" at=post:3')
    seen: list[str] = []

    async def run() -> None:
        async with Client(rec.url, mode="legacy") as client:  # POST 1 initialize, POST 2 initialized
            for _ in range(2):  # POST 3 and 4: refused, the client keeps its session id
                try:
                    await client.list_tools()
                    seen.append("ok")
                except Exception as e:
                    seen.append(type(e).__name__)

    anyio.run(run)
    code, _, err = rec.stop()
    assert code == 0 and "ok" not in seen and len(seen) == 2, (seen, err)
    tape = read(rec.tape)
    requests = {r["exchange"]: r for r in tape.records if r["kind"] == "http.request"}
    refused = [r for r in tape.records if r["kind"] == "http.response" and r.get("injected")]
    assert [(r["status"], r["raw"]) for r in refused[:2]] == [(401, b"Unauthorized: Session not found")] * 2
    assert [requests[r["exchange"]]["msg"]["method"] for r in refused[:2]] == ["tools/list"] * 2
    by_rule = {f["rule"]: f for f in findings(rec.tape)}
    assert by_rule["wrong-status-for-dead-session"]["injected"]  # never blamed on the real server
    assert by_rule["dead-session-reuse"]["severity"] == "error"


def test_live_drop_leaves_a_client_with_a_timeout_hanging_seed_000(live):
    rec = live("drop at=tools/call#1")
    outcome: list[str] = []

    async def run() -> None:
        async with Client(rec.url, mode="legacy") as client:
            try:
                await client.call_tool("add", {"a": 2, "b": 3}, read_timeout_seconds=1.0)
                outcome.append("answered")
            except MCPError as e:
                outcome.append(f"error {e.error.message}")
            result = await client.call_tool("add", {"a": 1, "b": 1})  # the server was fine all along
            outcome.append(json.dumps(result.structured_content))

    anyio.run(run)
    rec.stop()
    assert outcome[0].startswith("error") and "imed out" in outcome[0] and outcome[1] == '{"result": 2}'
    edits = [r for r in read(rec.tape).records if r["kind"] == "edit"]
    assert edits[-1]["detail"] == "withheld the final response"
    assert edits[-1]["withheld"][0]["result"]["structuredContent"] == {"result": 5}
    # the client gave up and cancelled; the stream an edit held open is not blamed on the real server
    by_rule = {f["rule"]: f for f in findings(rec.tape)}
    assert by_rule["cancelled-without-response"]["injected"] and by_rule["dangling-stream"]["injected"]


def test_live_answers_and_stream_edits(live):
    rec = live("status code=503 at=tools/list", "error code=-32001 message=nope at=tools/call#1",
               "drop-event n=1 at=tools/call#2", "duplicate at=tools/call#3", "malformed kind=wrong-id at=tools/call#4",
               "delay seconds=0.3 at=tools/call#5", "reset at=tools/call#6")
    url = rec.url
    session = open_session(url)
    status, headers, _ = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session)
    assert status == 503 and headers["Retry-After"] == "1"
    assert post(url, call(3, "add", {"a": 2, "b": 3}), session)[2] == [
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "nope"}}]
    whole = events(raw_sse(url, call(4, "add", {"a": 2, "b": 3}), session)[0])
    assert json.loads(whole[-1])["id"] == 4 and whole[0] != ""  # the priming event (event 1) was dropped
    finals = [e for e in events(raw_sse(url, call(5, "add", {"a": 2, "b": 3}), session)[0]) if '"result"' in e]
    assert len(finals) == 2 and finals[0] == finals[1]
    assert json.loads(events(raw_sse(url, call(6, "add", {"a": 2, "b": 3}), session)[0])[-1])["id"] == \
        "mcptape-wrong-id-6"
    start = time.monotonic()
    assert post(url, call(7, "add", {"a": 2, "b": 3}), session)[2][-1]["id"] == 7
    assert time.monotonic() - start >= 0.3
    assert raw_sse(url, call(8, "add", {"a": 2, "b": 3}), session)[1] in ("reset", "closed")
    code, _, err = rec.stop()
    assert code == 0, err
    edits = [r for r in read(rec.tape).records if r["kind"] == "edit"]
    assert len({text for r in edits for text in r["edits"]}) == 7 and all(r["injected"] for r in edits)
    assert [r["detail"] for r in edits if "withheld" in r] == ["dropped SSE event 1"]


def test_live_refuses_what_it_cannot_do_faithfully(tmp_path):
    out = run_mcptape("record", "--upstream", "http://127.0.0.1:9/mcp", "-o", str(tmp_path / "x.mcptape"),
                      "--edit", "close-stream after=1 at=tools/call")
    assert out.returncode == 2 and "close-stream is not applied to live traffic" in out.stderr
    out = run_mcptape("record", "-o", str(tmp_path / "y.mcptape"), "--edit", "status code=401 at=tools/call",
                      "--", "true")
    assert out.returncode == 2 and "status is HTTP-only; on stdio use drop, delay, error" in out.stderr
    assert not (tmp_path / "x.mcptape").exists() and not (tmp_path / "y.mcptape").exists()


def test_live_stdio_edits(tmp_path):
    """The wrapper in front of a real stdio server: the server answers everything; the client gets what the
    edits say. A delayed answer does not hold up the answers after it."""
    tape = tmp_path / "live.mcptape"
    client = LineClient([MCPTAPE, "record", "-o", str(tape), "--edit", "drop at=tools/call#1",
                         "--edit", "error code=-32001 message=nope at=tools/call#2", "--edit", "duplicate at=id:5",
                         "--edit", "malformed kind=wrong-id at=id:6", "--edit", "delay seconds=0.5 at=id:7",
                         "--", sys.executable, "-m", "mcptape.demo.server", "--stdio"])
    client.send(INIT)
    assert client.receive()["id"] == 1
    client.send(INITIALIZED)
    client.send(call(2, "add", {"a": 2, "b": 3}))
    assert client.lines(0.5) == []  # the server answered; the client never hears of it
    client.send(call(3, "add", {"a": 2, "b": 3}))
    assert client.receive() == {"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "nope"}}
    client.send(call(5, "add", {"a": 2, "b": 3}))
    twice = client.lines(5, 2)
    assert len(twice) == 2 and twice[0] == twice[1] and json.loads(twice[0])["id"] == 5
    client.send(call(6, "add", {"a": 2, "b": 3}))
    assert client.receive()["id"] == "mcptape-wrong-id-6"
    client.send(call(7, "add", {"a": 2, "b": 3}))
    client.send(call(8, "add", {"a": 1, "b": 1}))
    assert [m["id"] for m in (client.receive(), client.receive())] == [8, 7]
    client.proc.stdin.close()
    assert client.proc.wait(20) == 0
    records = read(tape).records
    edits = [r for r in records if r["kind"] == "edit"]
    assert edits[0]["detail"] == "withheld the final response" and edits[0]["withheld"][0]["id"] == 2
    injected = [r["msg"]["id"] for r in records if r["kind"] == "stdio.line" and r.get("injected")]
    assert injected == [3, 5, 5, "mcptape-wrong-id-6", 7]
    answered = [r["msg"].get("id") for r in records if r["kind"] == "stdio.line" and r["dir"] == "s2c"
                and isinstance(r.get("msg"), dict)]
    assert 2 not in answered and answered[-2:] == [8, 7]  # the tape says what the client got, in its order
    # the real server answered 2 and 6: what the client never got (or got with a wrong id) rests on the edits
    blamed = [f for f in findings(tape) if f["severity"] in ("error", "warning")]
    assert {f["request_id"] for f in blamed if f["rule"] == "unanswered-request"} == {2, 6}
    assert all(f["injected"] for f in blamed), [f for f in blamed if not f["injected"]]



def test_selectors_count_as_the_client_sent(tapes):
    """On the recorded session: POST 1 initialize, 2 initialized, 3 tools/list, 4 add (id 3), 5 countdown (id 4),
    6 resources/read."""
    out = run_mcptape("edits", tapes["sse"], "--edit", "delay seconds=1 at=session:1", "--edit", "drop at=id:4",
                      "--edit", "error at=post:4 times=2", "--edit", "duplicate at=tools/call times=all",
                      "--edit", "reset at=after:1h")
    fired: dict[str, list[str]] = {}
    where = ""
    for line in out.stdout.splitlines():
        if line.startswith("record"):
            where = line.split(None, 2)[2]
        elif line.startswith("    ") and not line.strip().startswith("->"):
            fired.setdefault(line.strip(), []).append(where)
    [first] = fired["delay seconds=1 at=session:1"]
    assert first.startswith("POST notifications/initialized  [session ")
    assert [w.split()[1] for w in fired["error at=post:4 times=2"]] == ["tools/call", "tools/call"]
    assert [w.split()[1:3] for w in fired["drop at=id:4"]] == [["tools/call", "#4"]]
    assert len(fired["duplicate at=tools/call times=all"]) == 2
    assert "reset at=after:1h" not in fired and "edit 'reset at=after:1h' never fired" in out.stderr
    assert "-> answer JSON-RPC error -32603\n" in out.stdout  # the error replaces the answer: nothing else applies


class LegacyChannel:
    """A raw 2024-11-05 client: the GET channel read on a thread, POSTs to the endpoint it announced."""

    def __init__(self, url: str) -> None:
        import http.client
        import queue
        import threading
        from urllib.parse import urljoin, urlsplit

        split = urlsplit(url)
        self.conn = http.client.HTTPConnection(split.hostname, split.port, timeout=30)
        self.conn.request("GET", split.path, headers={"Accept": "text/event-stream"})
        self.response = self.conn.getresponse()
        self.messages: queue.Queue = queue.Queue()
        endpoint = self._next_event()
        assert endpoint.startswith("event: endpoint"), endpoint
        self.post_url = urljoin(url, endpoint.split("data: ", 1)[1].strip())
        threading.Thread(target=self._read, daemon=True).start()

    def _next_event(self) -> str:
        lines = []
        while (line := self.response.readline()) and line.strip():
            lines.append(line.decode().rstrip("\r\n"))
        return "\n".join(lines)

    def _read(self) -> None:
        try:
            while event := self._next_event():
                data = [line[6:] for line in event.splitlines() if line.startswith("data: ")]
                if data:
                    self.messages.put(data[0])
        except (OSError, ValueError, AttributeError):
            return  # closed by close(): http.client then fails in several ways

    def post(self, msg: dict) -> int:
        request = urllib.request.Request(self.post_url, data=json.dumps(msg).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as response:
            return response.status

    def next(self, timeout: float = 10) -> str:
        return self.messages.get(timeout=timeout)

    def close(self) -> None:
        self.conn.sock.shutdown(socket.SHUT_RDWR)  # wakes the reader (a plain close would wait for its lock)
        self.conn.close()


LEGACY_EDITS = ("drop at=tools/call#1", "duplicate at=tools/call#2", "malformed kind=wrong-id at=tools/call#3",
                "drop-event n=1 at=tools/call#4", "delay seconds=0.4 at=tools/call#5",
                "error code=-32001 message=nope at=tools/call#6")


def _legacy_conversation(url: str, edited: bool) -> None:
    """A raw client's conversation on a legacy channel; with the edits, what each one makes of its answer."""
    import queue

    channel = LegacyChannel(url)
    assert channel.post(INIT) == 202
    assert json.loads(channel.next())["id"] == 1
    channel.post(INITIALIZED)
    channel.post(call(2, "add", {"a": 2, "b": 3}))
    if not edited:
        assert json.loads(channel.next())["id"] == 2
    channel.post(call(3, "add", {"a": 2, "b": 3}))
    first = channel.next()
    assert json.loads(first)["id"] == 3  # with the edits, 2 never came
    if edited:
        assert json.loads(channel.next()) == json.loads(first)
    channel.post(call(4, "add", {"a": 2, "b": 3}))
    assert json.loads(channel.next())["id"] == ("mcptape-wrong-id-4" if edited else 4)
    channel.post(call(5, "countdown", {"steps": 2}, token="p"))
    rest = [json.loads(channel.next())]
    while rest[-1].get("id") != 5:
        rest.append(json.loads(channel.next()))
    progress = [m["params"]["progress"] for m in rest if m.get("method") == "notifications/progress"]
    assert progress == ([2] if edited else [1, 2])  # on a channel a call's own messages count: progress, answer
    started = time.monotonic()
    channel.post(call(6, "add", {"a": 1, "b": 1}))
    assert json.loads(channel.next())["id"] == 6 and (not edited or time.monotonic() - started >= 0.4)
    channel.post(call(7, "add", {"a": 1, "b": 2}))
    answer = json.loads(channel.next())
    assert answer["id"] == 7 and ("error" in answer) == edited
    with pytest.raises(queue.Empty):
        channel.next(timeout=0.3)  # and nothing else: 2's answer stayed withheld
    channel.close()


def _legacy_edits_logged(tape) -> None:
    records = read(tape).records
    details = [r["detail"] for r in records if r["kind"] == "edit"]
    assert "withheld the final response" in details and "dropped SSE event 1" in details
    assert "answered with a JSON-RPC error instead" in details
    withheld = next(r for r in records if r["kind"] == "edit" and r["detail"] == "withheld the final response")
    assert withheld["withheld"][0]["id"] == 2  # the server's answer, kept in the tape
    blamed = [f for f in findings(tape) if f["severity"] in ("error", "warning")]
    assert all(f["injected"] for f in blamed), [f for f in blamed if not f["injected"]]


@pytest.mark.parametrize("where", ["live", "replay"])
def test_event_edits_on_a_legacy_channel(tmp_path, demo_server, where):
    """2024-11-05 HTTP+SSE (the SDK's legacy server): each POST is accepted (202) and its answer comes back on the
    session's channel, changed there as the edit says. Live, the server sees every request."""
    tape = tmp_path / "run.mcptape"
    edits = [arg for edit in LEGACY_EDITS for arg in ("--edit", edit)]
    rec = start_recording(demo_server("--sse"), tape, *(edits if where == "live" else ()))
    try:
        _legacy_conversation(rec.url, edited=where == "live")
    finally:
        stop(rec.proc)
    if where == "live":
        return _legacy_edits_logged(tape)
    log = tmp_path / "log.mcptape"
    with replaying(str(tape), log=str(log), edits=LEGACY_EDITS) as url:
        _legacy_conversation(url, edited=True)
    _legacy_edits_logged(log)


def test_close_stream_is_refused_up_front_on_a_legacy_tape(tmp_path, demo_server):
    rec = start_recording(demo_server("--sse"), tmp_path / "legacy.mcptape")
    try:
        channel = LegacyChannel(rec.url)
        channel.post(INIT)
        channel.next()
        channel.close()
    finally:
        stop(rec.proc)
    result = run_mcptape("replay", str(rec.tape), "--edit", "close-stream after=1 at=tools/call#1")
    assert result.returncode == 2 and "2024-11-05 has no Last-Event-ID resume" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
