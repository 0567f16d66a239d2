"""The rough edges a new user hit, each as they would expect it: what a refusal suggests exists, help that reads as
written, edits files with comments, findings that cite one record for one event, misses said as pointers."""

from __future__ import annotations

import subprocess

from mcptape.tape.file import read

from .conftest import MCPTAPE, run_mcptape
from .test_cli import one_line_error


def test_import_and_replay_log_suggest_the_force_they_have(stdio_tape, tmp_path):
    exported = tmp_path / "run.jsonl"
    exported.write_text(run_mcptape("show", stdio_tape, "--format", "jsonl").stdout)
    out = tmp_path / "run.mcptape"
    out.write_bytes(b"keep me")
    refused = run_mcptape("import", str(exported), "-o", str(out))
    one_line_error(refused, "--force")
    assert "--append" not in refused.stderr and out.read_bytes() == b"keep me"
    assert run_mcptape("import", str(exported), "-o", str(out), "--force").returncode == 0
    assert len(read(out).records) == len(read(stdio_tape).records)

    log = tmp_path / "log.mcptape"
    log.write_bytes(b"an old log")
    one_line_error(run_mcptape("replay", stdio_tape, "--stdio", "--log", str(log)), "--force")
    assert log.read_bytes() == b"an old log"
    done = subprocess.run([MCPTAPE, "replay", stdio_tape, "--stdio", "--log", str(log), "--force"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert read(log).header["kind"] == "header"  # a new tape replaced the old file


def test_record_help_keeps_the_live_edit_example_as_written():
    lines = run_mcptape("record", "--help").stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "mcptape record --upstream http://127.0.0.1:8000/mcp -o run" in line)
    assert lines[at].rstrip().endswith("\\")
    assert lines[at + 1].strip() == ("--edit 'expire-session status=401 body=\"Unauthorized: Session not found\" "
                                     "at=post:3'")
    assert any("mcptape help edits" in line for line in lines)


def test_the_edit_language_is_in_the_help():
    from mcptape.edits.language import ACTIONS, SELECTORS, STDIO_ACTIONS

    for args in (["edits", "--help"], ["help", "edits"]):
        result = run_mcptape(*args)
        assert result.returncode == 0, result.stderr
        for action in ACTIONS:
            assert f"\n  {action}" in result.stdout, (args, action)
        for selector in SELECTORS.split(", "):
            assert f"\n  {selector}" in result.stdout, (args, selector)
        assert ", ".join(STDIO_ACTIONS) in result.stdout
    assert run_mcptape("help", "show").stdout.startswith("Usage: mcptape show")
    one_line_error(run_mcptape("help", "nope"), "topics: edits")


def test_an_edits_file_takes_trailing_comments(stdio_tape, tmp_path):
    faults = tmp_path / "faults.txt"
    faults.write_text("# the faults of issue 7\n"
                      "drop at=tools/call#1   # the first call hangs\n"
                      "error message=\"# not a comment\" at=tools/call#2 #second\n")
    result = run_mcptape("edits", stdio_tape, "--edits", str(faults))
    assert result.returncode == 0, result.stderr
    assert "    drop at=tools/call#1\n" in result.stdout
    assert "    error message=\"# not a comment\" at=tools/call#2\n" in result.stdout
    assert "the first call hangs" not in result.stdout


def test_record_verbose_shows_mitmproxys_log(demo_server, record):
    import anyio

    from mcptape.demo.client import script

    upstream = demo_server()
    errs = {}
    for args in ((), ("--verbose",)):
        rec = record(upstream, *args)
        anyio.run(script, rec.url, "legacy")
        code, _, errs[args] = rec.stop()
        assert code == 0
    assert "client connect" in errs[("--verbose",)] and "server connect" in errs[("--verbose",)]
    assert "client connect" not in errs[()]


def test_the_two_findings_of_one_session_death_cite_the_same_record(tmp_path):
    from .core.test_lifecycle import Synth, by_rule, error

    tape = Synth(tmp_path / "t.mcptape")
    died = tape.call(tape.session, 404, error("Session not found"))
    again = tape.call(tape.session, 404, error("Session not found")) - 1  # its request
    tape.call(tape.session, 404, error("Session not found"))
    found = tape.findings()
    reuse, lost = by_rule(found, "dead-session-reuse"), by_rule(found, "no-reinitialize")
    assert reuse["record"] == lost["record"] == again  # the first request the dead session carried
    assert reuse["transition"]["record"] == lost["transition"]["record"] == died
    assert f"record {died}" in lost["message"] and f"at record {died}" in reuse["message"]


def test_show_says_what_a_text_body_says_and_spells_a_null_id(tmp_path):
    import json

    from mcptape.tape import records

    from .conftest import write_tape

    post = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
    refused = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Bad"}}).encode()
    path = write_tape(tmp_path / "legacy.mcptape", [
        records.http_request(0.0, 0, 0, "POST", "/messages/", [], [], "abc", None, True, records.body(post)),
        records.http_response(0.0, 0, 202, "Accepted", [("content-type", "text/plain")], None,
                              records.body(b"Accepted")),
        records.http_request(0.0, 1, 0, "POST", "/mcp", [], [], "abc", None, True, records.body(b"{")),
        records.http_response(0.0, 1, 400, "", [("content-type", "application/json")], None,
                              records.body(refused))])
    assert "not JSON" in read(path).records[1]["problem"]  # as the recorder keeps it
    lines = run_mcptape("show", path).stdout.splitlines()
    assert lines[2].endswith("202 text/plain  'Accepted'")
    assert "!" not in lines[2]
    assert lines[4].endswith("400 application/json  error #null -32600 Bad")
    assert "! not JSON" in lines[3]  # a request body must be JSON-RPC: that stays a problem


def test_a_replay_miss_names_the_pointer_ignore_takes(stdio_tape):
    import json
    import re

    def ask(*options: str) -> tuple[list[dict], str]:
        lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                     "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "add", "arguments": {"a": 2, "b": 7}}}]
        done = subprocess.run([MCPTAPE, "replay", stdio_tape, "--stdio", *options], capture_output=True, text=True,
                              input="".join(json.dumps(m) + "\n" for m in lines), timeout=60)
        return [json.loads(line) for line in done.stdout.splitlines()], done.stderr

    answers, _ = ask()
    message = answers[1]["error"]["message"]
    pointer = re.search(r"differs at (\S+?)\)", message).group(1)
    assert pointer == "/params/arguments/b", message
    answers, err = ask("--ignore", pointer)  # pasted as it was said
    assert "result" in answers[1] and "0 request(s) unmatched" in err


def test_replay_and_edits_say_a_tape_is_truncated(stdio_tape, tmp_path):
    torn = tmp_path / "torn.mcptape"
    data = open(stdio_tape, "rb").read()
    torn.write_bytes(data[:-5])  # the last record torn, as a recorder killed mid-write leaves it
    count = len(read(stdio_tape).records) - 1
    said = "tape is truncated (torn record at byte"
    for args in (["replay", str(torn), "--stdio"], ["edits", str(torn), "--edit", "drop at=tools/call#1"],
                 ["show", str(torn)]):
        done = subprocess.run([MCPTAPE, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert said in done.stderr and f"the {count} complete records before it" in done.stderr, (args, done.stderr)
    intact = run_mcptape("edits", stdio_tape, "--edit", "drop at=tools/call#1")
    assert "truncated" not in intact.stderr


def test_diff_names_the_tool_and_session_and_says_what_is_in_one_tape_only(tmp_path):
    from .test_diff import ADD, session

    a, b = tmp_path / "a.mcptape", tmp_path / "b.mcptape"
    session(a, [ADD])
    session(b, [ADD, {"name": "countdown", "arguments": {"steps": 1}}])
    result = run_mcptape("diff", str(a), str(b))
    assert result.returncode == 1
    assert ("only-in-b            session 1 (stdio#1) tools/call (2nd) countdown: result in b, no such call in a"
            in result.stdout.splitlines()), result.stdout
    assert "null" not in result.stdout
