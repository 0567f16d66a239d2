"""What a newcomer meets in the first hour, in one style: mistakes are one line (`mcptape: <what>, <where>: <what
to do>`, exit 2), `--help` says each command's first sentence whole, findings and logs say what happened in words
that fit it (a replay log's first line, a hang-up after the answer, a reuse within a second, the clause a 401's
finding rests on, a JSON pointer that is a pointer)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mcptape.tape import records
from mcptape.wire import sse

from ..conftest import run_mcptape, write_tape

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"


def one_line(done, *says: str) -> str:
    assert done.returncode == 2 and done.stdout == "", done
    [line] = done.stderr.splitlines()
    assert line.startswith("mcptape: ") and all(s in line for s in says), line
    return line


def test_click_usage_errors_are_one_line_naming_the_command_and_its_help(tmp_path):
    one_line(run_mcptape("check", str(CASSETTES) + "/"), "is a directory, in mcptape check: see mcptape check --help")
    one_line(run_mcptape("diff", "a.mcptape"), "Missing argument 'TAPE_B', in mcptape diff: see mcptape diff --help")
    one_line(run_mcptape("nosuch"), "No such command 'nosuch', in mcptape: see mcptape --help")


def test_an_empty_file_is_said_to_be_empty_by_every_command(tmp_path):
    empty = tmp_path / "empty.mcptape"
    empty.write_bytes(b"")
    for argv in (["check"], ["show"], ["report"], ["export", "--format", "json"], ["replay"], ["import"]):
        extra = ["-o", str(tmp_path / "x.mcptape")] if argv == ["import"] else []
        one_line(run_mcptape(*argv, str(empty), *extra, stdin=-3), f"{empty}: the file is empty")


def test_help_gives_each_command_its_first_sentence_whole():
    shown = run_mcptape("--help").stdout
    commands = " ".join(shown.split("Commands:", 1)[1].split())
    assert "..." not in commands
    assert "Drive a live server with the client side of TAPE and say what changed:" in commands
    assert "Run a client once per fault and position against the tape's replay; score how it recovers." in commands


def _answered_then_hung_up(tmp_path) -> str:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add"}}
    return write_tape(tmp_path / "hangup.mcptape", [
        records.capture_start(0.0, "t", {"replay": "run.mcptape"}, {}),
        records.http_request(0.1, 0, 0, "POST", "/mcp", [], [], "s1", "2025-11-25", True, {"msg": request}),
        records.http_response(0.2, 0, 200, "OK", [("content-type", "text/event-stream")], "s1", {}),
        records.sse_event(0.3, 0, sse.Event(data=json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}))),
        records.end(0.4, 0, records.CLIENT_DISCONNECTED),
        records.http_request(0.5, 1, 0, "POST", "/mcp", [], [], "s1", "2025-11-25", True, {"msg": {**request, "id": 2}}),
        records.http_response(0.6, 1, 200, "OK", [("content-type", "text/event-stream")], "s1", {}),
        records.end(0.7, 1, records.CLIENT_DISCONNECTED)])


def test_show_names_a_replay_log_and_leaves_a_hang_up_after_the_answer_uncoloured(tmp_path):
    tape = _answered_then_hung_up(tmp_path)
    shown = run_mcptape("show", tape, "--color").stdout.splitlines()
    assert "-- replay of run.mcptape started" in shown[1] and "()" not in shown[1]
    [answered] = [line for line in shown if "(after its answer)" in line]
    assert "\x1b[" not in answered.split("end client-disconnected")[1] and "\x1b[33m" not in answered
    [unanswered] = [line for line in shown if "client-disconnected" in line and line != answered]
    assert "\x1b[33m" in unanswered  # a hang-up before the answer still stands out


def test_dead_session_reuse_says_within_ms_and_a_401_rests_on_what_the_spec_says_of_the_client():
    done = run_mcptape("check", str(CASSETTES / "session-not-found-401.mcptape"), "--format", "json")
    [reuse] = [f for f in json.loads(done.stdout)["findings"] if f["rule"] == "dead-session-reuse"]
    assert re.search(r", within \d+ ms$", reuse["message"]) and "over 0.0s" not in reuse["message"]
    assert "MUST start a new session" in reuse["spec"] and "MUST respond to requests" not in reuse["spec"]
    assert "401, 400" in reuse["spec"] and reuse["blames"] == "client"


def test_unredacted_pointer_is_always_a_json_pointer():
    done = run_mcptape("check", str(CASSETTES / "cancelled-call.mcptape"), "--require-redacted", "--format", "json")
    found = json.loads(done.stdout)["unredacted"]
    assert found and all(u["pointer"].startswith("/") for u in found)
    [header] = [u for u in found if u["record"] is None]
    assert header["pointer"] == "/redaction" and "without body redaction" in header["detail"]
