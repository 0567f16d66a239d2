"""Reading a tape as people do: `mcptape show` with filters, one record whole (`--record N`, `TAPE#N`), the
record-number column, colour. A real recording (SDK client and server through `mcptape record`) for what a
conversation looks like, synthetic tapes for refusals and edge cases."""

from __future__ import annotations

import json
import re

import anyio
import pytest

from mcptape.demo.client import script
from mcptape.tape.file import read

from .conftest import run_mcptape, spawn_demo, start_recording, free_port, stop
from .test_cli import one_line_error
from .core.test_lifecycle import Synth, error


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> str:
    """The demo client's script (list, add, countdown with progress, a resource) through `mcptape record`."""
    port = free_port()
    server = spawn_demo(port)
    try:
        rec = start_recording(f"http://127.0.0.1:{port}/mcp", tmp_path_factory.mktemp("show") / "run.mcptape")
        anyio.run(script, rec.url, "legacy")
        assert rec.stop()[0] == 0
    finally:
        stop(server)
    return str(rec.tape)


def shown(*args: str) -> list[str]:
    result = run_mcptape("show", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def numbers(lines: list[str]) -> list[int]:
    """The record-number column of timeline lines (the heading skipped)."""
    return [int(line.split()[0]) for line in lines[1:]]


def records_by_seq(tape: str) -> dict[int, dict]:
    return dict(enumerate(read(tape).records))


def test_every_line_carries_its_record_number(recorded):
    tape = records_by_seq(recorded)
    lines = shown(recorded)
    assert lines[0].split()[:2] == ["rec", "time"]
    assert numbers(lines) == sorted(tape)  # one line per record here (no batches), each with its seq
    for line in lines[1:]:
        seq = int(line.split()[0])
        if tape[seq]["kind"] == "http.request":
            assert f"{tape[seq]['method']} {tape[seq]['path']}" in line


def test_method_shows_the_calls_requests_answers_and_streams(recorded):
    tape = records_by_seq(recorded)
    calls = {r["exchange"] for r in tape.values()
             if r["kind"] == "http.request" and r.get("msg", {}).get("method") == "tools/call"}
    assert len(calls) == 2  # add, countdown
    picked = numbers(shown(recorded, "--method", "tools/call"))
    assert picked == sorted(seq for seq, r in tape.items() if r.get("exchange") in calls)
    text = "\n".join(shown(recorded, "--method", "tools/call"))
    assert "notifications/progress 2/3" in text and "result #" in text and "initialize" not in text
    # wildcards, and an HTTP method
    assert set(numbers(shown(recorded, "--method", "tools/*"))) > set(picked)
    deletes = numbers(shown(recorded, "--method", "DELETE"))
    assert deletes and all(tape[s]["exchange"] == tape[deletes[0]]["exchange"] for s in deletes)


def test_session_exchange_grep_and_around(recorded):
    tape = records_by_seq(recorded)
    session = next(r["session"] for r in tape.values() if r["kind"] == "http.response" and r.get("session"))
    mine = numbers(shown(recorded, "--session", session[:6]))
    # the session's records, its initialize request included (known by its answer); not the capture's own
    assert mine == sorted(s for s, r in tape.items() if "exchange" in r)
    assert shown(recorded, "--session", "nosuch")[1:] == []
    assert numbers(shown(recorded, "--exchange", "3")) == [s for s, r in tape.items() if r.get("exchange") == 3]
    grepped = numbers(shown(recorded, "--grep", r'"steps": 3'))
    assert grepped == [s for s, r in tape.items() if r.get("msg", {}).get("params", {}).get("arguments") == {"steps": 3}]
    assert numbers(shown(recorded, "--grep", "(?i)DEMO://HELLO", "--method", "resources/read"))
    assert numbers(shown(recorded, "--around", "10:2")) == [8, 9, 10, 11, 12]
    assert numbers(shown(recorded, "--around", "2")) == list(range(0, 8))  # 5 either side, from the first
    # filters combine: all must match
    assert numbers(shown(recorded, "--around", "10:30", "--exchange", "3")) == [
        s for s, r in tape.items() if r.get("exchange") == 3]


def test_filters_apply_to_json_output(recorded):
    lines = shown(recorded, "--method", "tools/call", "--format", "jsonl")
    assert "header" in json.loads(lines[0])
    picked = [json.loads(line) for line in lines[1:]]
    assert picked and all(r["seq"] == numbers(shown(recorded, "--method", "tools/call"))[i]
                          for i, r in enumerate(picked))
    doc = json.loads("\n".join(shown(recorded, "--exchange", "3", "--format", "json")))
    assert {r["exchange"] for r in doc["records"]} == {3}


def test_status_finds_the_refused_requests_and_their_session(tmp_path):
    tape = Synth(tmp_path / "t.mcptape")
    tape.call(tape.session)
    refused = tape.call(tape.session, 404, error("Session not found"))
    other = tape.initialize("s2")
    tape.call(other)
    path = tape.write()
    lines = shown(path, "--status", "404")
    assert numbers(lines) == [refused - 1, refused, refused + 1]  # the request, its 404, its end
    assert "tools/call" in lines[1] and "s1" in lines[1] and "404" in lines[2]
    assert numbers(shown(path, "--status", "4xx")) == numbers(lines)
    assert numbers(shown(path, "--status", "4xx", "--session", "s2")) == []
    # the request that opened s2 belongs to s2, though it carried no session id yet
    s2 = shown(path, "--session", "s2")
    assert "initialize" in s2[1] and all(" s2 " in line or "initialize" in line for line in s2[1:])
    one_line_error(run_mcptape("show", path, "--status", "4x"), "such as 4xx")


def test_one_record_whole(recorded, tmp_path):
    tape = records_by_seq(recorded)
    seq = next(s for s, r in tape.items() if r.get("msg", {}).get("params", {}).get("name") == "countdown")
    for args in ([f"{recorded}#{seq}"], [recorded, "--record", str(seq)]):
        lines = shown(*args)
        assert lines[0] == f"record {seq}: http.request"
        assert any(line.split() == ["session", tape[seq]["session"], "(streamable-http,", "2025-11-25)"]
                   for line in lines)
        assert any(line.strip().lower().startswith("mcp-session-id:") for line in lines)
        start = lines.index("{")
        assert json.loads("\n".join(lines[start:])) == tape[seq]["msg"]  # pretty-printed, whole
    as_json = json.loads(run_mcptape("show", f"{recorded}#{seq}", "--format", "json").stdout)
    assert as_json["seq"] == seq and as_json["msg"] == tape[seq]["msg"]
    one_line_error(run_mcptape("show", recorded, "--record", "100000"), f"its records are 0 to {len(tape) - 1}")
    one_line_error(run_mcptape("show", f"{recorded}#1", "--record", "2"), "give one")
    one_line_error(run_mcptape("show", recorded, "--record", "1", "--method", "x"), "takes no filters")


def test_a_long_sse_id_is_shortened_in_the_timeline_and_whole_in_the_record(tmp_path):
    from mcptape.tape import records
    from mcptape.wire import sse

    from .conftest import write_tape

    long_id = "3f2a1b9c-5d4e-4f60-8a7b-1c2d3e4f5a6b_0000000000000042"
    path = write_tape(tmp_path / "ids.mcptape", [
        records.http_request(0.0, 0, 0, "GET", "/mcp", [], [("last-event-id", long_id)], "s1", None, True, {}),
        records.http_response(0.0, 0, 200, "", [("content-type", "text/event-stream")], None, {}),
        records.sse_event(0.0, 0, sse.Event(id=long_id, data='{"jsonrpc": "2.0", "method": "x"}'))])
    timeline = "\n".join(shown(path))
    assert long_id not in timeline and "id=3f2a1b9c-5d…" in timeline and "Last-Event-ID: 3f2a1b9c-5d…" in timeline
    assert f"id               {long_id}" in "\n".join(shown(f"{path}#2"))


def test_usage_errors(recorded):
    one_line_error(run_mcptape("show", recorded, "--around", "x:1"), "RECORD:N")
    one_line_error(run_mcptape("show", recorded, "--grep", "("), "not a regular expression")
    one_line_error(run_mcptape("show", recorded, "--follow", "--format", "json"), "text or jsonl")
    result = run_mcptape("show", recorded, "--exchange", "999")
    assert result.returncode == 0 and "no record matches" in result.stderr


def test_a_file_whose_name_has_a_hash_is_read_as_it_is(recorded, tmp_path):
    import shutil

    odd = tmp_path / "run#3"
    shutil.copy(recorded, odd)
    assert len(shown(str(odd))) == len(read(recorded).records) + 1
    assert re.match(r"record 3: ", shown(f"{odd}#3")[0])


def on_a_terminal(*args: str, env: dict | None = None) -> str:
    """What `mcptape ARGS` prints on a pseudo-terminal (stdout and stderr are the terminal)."""
    import os
    import pty
    import subprocess

    from .conftest import MCPTAPE

    master, slave = pty.openpty()
    proc = subprocess.Popen([MCPTAPE, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            env={**os.environ, **(env or {})})
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(30) == 0, out
    return out.decode()


RED, MAGENTA, CYAN = "\x1b[31m", "\x1b[35m", "\x1b[36m"


def test_colour_on_a_terminal_off_when_piped_or_with_no_color(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    tape = Synth(tmp_path / "t.mcptape")
    refused = tape.call(tape.session, 404, error("Session not found"))
    injected = tape.call(tape.session, 401, error("Session not found"), injected=True)
    path = tape.write()
    painted = on_a_terminal("show", path)
    lines = painted.splitlines()
    assert RED in lines[refused + 1] and "404" in lines[refused + 1]  # the heading is line 0
    assert MAGENTA in lines[injected + 1] and "[injected]" in lines[injected + 1]
    assert MAGENTA in lines[injected] and "edit expire-session" in lines[injected]  # the edit record before it
    assert f"{CYAN}→" in painted  # the client's direction
    assert "\x1b[" not in on_a_terminal("show", path, env={"NO_COLOR": "1"})
    assert "\x1b[" not in on_a_terminal("show", path, "--no-color")
    assert "\x1b[" in on_a_terminal("show", path, env={"NO_COLOR": ""})  # only a non-empty value turns it off
    assert "\x1b[" in on_a_terminal("show", path, "--color", env={"NO_COLOR": "1"})  # the option wins
    assert "\x1b[" not in run_mcptape("show", path).stdout  # piped
    forced = run_mcptape("show", path, "--color").stdout
    assert RED in forced and ANSI.sub("", forced) == run_mcptape("show", path).stdout
    whole = on_a_terminal("show", f"{path}#{refused}")
    assert RED in whole.splitlines()[0] and "Session not found" in whole


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_check_colours_errors_and_warnings_on_a_terminal(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    tape = Synth(tmp_path / "t.mcptape")
    tape.call(tape.session, 401, error("Session not found"))
    tape.call(tape.session, 401, error("Session not found"))
    path = tape.write()

    def checked(*args: str, env: dict | None = None) -> str:
        import os
        import pty
        import subprocess

        from .conftest import MCPTAPE

        master, slave = pty.openpty()
        proc = subprocess.Popen([MCPTAPE, "check", path, *args], stdin=subprocess.DEVNULL, stdout=slave,
                                stderr=slave, env={**os.environ, **(env or {})})
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        assert proc.wait(30) == 1
        return out.decode()

    lines = checked().splitlines()
    assert any(line.startswith(RED) and "error   dead-session-reuse" in line for line in lines)
    assert any(line.startswith("\x1b[33mwarning") and "wrong-status-for-dead-session" in line for line in lines)
    assert "\x1b[" not in checked(env={"NO_COLOR": "1"}) and "\x1b[" not in run_mcptape("check", path).stdout


def test_filters_on_a_stdio_tape(stdio_tape):
    tape = records_by_seq(stdio_tape)
    lines = shown(stdio_tape, "--session", "stdio#1")
    assert numbers(lines) == sorted(s for s, r in tape.items() if r["kind"].startswith("stdio."))
    calls = numbers(shown(stdio_tape, "--method", "tools/call"))
    ids = {r["msg"]["id"] for r in tape.values() if r["kind"] == "stdio.line" and isinstance(r.get("msg"), dict)
           and r["msg"].get("method") == "tools/call"}
    # the requests and their answers, found by id (stdio has no exchanges)
    assert calls == sorted(s for s, r in tape.items() if r["kind"] == "stdio.line" and isinstance(r.get("msg"), dict)
                           and (r["msg"].get("method") == "tools/call"
                                or (r["dir"] == "s2c" and "method" not in r["msg"] and r["msg"].get("id") in ids)))
    assert shown(stdio_tape, "--status", "200")[1:] == []  # no HTTP here
