"""Records no mcptape writes, from a stranger's tape, through every command in-process: each gives a result or one
line naming the record (exit 2), never an internal error. Found by fuzzing (issue 54)."""

from __future__ import annotations

import json
import urllib.request
from decimal import Decimal

import pytest
from click.testing import CliRunner

from mcptape.cli import main
from mcptape.tape import records
from mcptape.tape.file import OPENED

from ..conftest import write_tape

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def line(**fields) -> dict:
    return {"kind": "stdio.line", "t": 1.0, "dir": "c2s", "msg": PING, **fields}


def answer(value) -> dict:
    return line(dir="s2c", msg={"jsonrpc": "2.0", "id": 1, "result": {"x": [value]}})


HOSTILE = {  # name: (the record, what the line names)
    "kind-map": ({"kind": {"a": 1}, "t": 1.0}, 'unknown kind {"a": 1}'),
    "headers-int": (line(headers=5), "stdio.line field headers must be a list of [name, value] pairs"),
    "t-2**62": (line(t=1 << 62), "stdio.line field t must be a time"),
    "t-decimal-nan": (line(t=Decimal("NaN")), "stdio.line field t must be a time"),
    "t-4000-digits": (line(t=int("9" * 4000)), "stdio.line field t must be a time"),
    "msg-nan": (answer(float("nan")), "stdio.line field msg holds a number JSON cannot write (nan)"),
    "msg-decimal-nan": (answer(Decimal("NaN")), "stdio.line field msg holds a number JSON cannot write (NaN)"),
    "msg-bytes": (answer(b"\xff"), "stdio.line field msg holds bytes"),
    # found by tests/fuzz_commands.py: a field of another kind, or bytes where no kind has them
    "session-of-another-kind": (line(session=-2**63), "stdio.line field session must be a string or null"),
    "status-decimal-nan": ({"kind": "http.response", "t": 1.0, "exchange": 0, "dir": "s2c", "status": Decimal("NaN"),
                            "reason": "", "headers": [], "session": None}, "http.response field status must be"),
    "text-of-another-kind": (line(text=5), "stdio.line field text must be"),
    "bytes-in-a-flag": (line(partial=b"\x00\xff"), "stdio.line field partial must be"),
    "raw-that-is-a-map": ({"kind": "stdio.eof", "t": 1.0, "dir": "c2s", "raw": {}}, "stdio.eof field raw must be"),
    "mcp-bytes": ({"kind": "stdio.eof", "t": 1.0, "dir": "c2s", "mcp": b"\x00"}, "stdio.eof field mcp must be"),
}
COMMANDS = [["show"], ["show", "--record", "1"], ["show", "--format", "json"], ["show", "--format", "jsonl"],
            ["check"], ["check", "--format", "json"], ["report", "--format", "json"], ["report", "--format", "html"],
            ["report", "--format", "md"], ["export", "--format", "json"], ["diff", "TAPE"],
            ["edits", "--edit", "drop at=tools/call"]]


@pytest.mark.parametrize("name", HOSTILE)
def test_every_command_gives_a_result_or_names_the_record(tmp_path, name):
    record, named = HOSTILE[name]
    tape = write_tape(tmp_path / "t.mcptape", [records.stdio_line(0.5, records.C2S, b'{"jsonrpc":"2.0","method":"x"}'),
                                               record])
    for command in COMMANDS:
        OPENED.clear()  # (a failing command looks through the tapes the process opened: this command's only)
        result = CliRunner().invoke(main, [command[0], tape, *(tape if a == "TAPE" else a for a in command[1:])])
        assert "internal error" not in result.output and "Traceback" not in result.output, (command, result.output)
        assert result.exit_code in (0, 1, 2) and not isinstance(result.exception, Exception), (command, result)
        if result.exit_code == 2:
            assert result.stderr.startswith(f"mcptape: {tape}#1: the record does not fit the tape format: {named}")
            assert result.stderr.count("\n") == 1, (command, result.stderr)


# -- replay: an answer JSON cannot write goes out as a JSON-RPC error, not as a crash or a 500 ----------------------

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "0"}}}
INIT_RESULT = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                                     "serverInfo": {"name": "s", "version": "0"}}}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}}
UNWRITABLE = {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "x": float("nan")}}
SERVED = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": "mcptape: the recorded answer cannot be "
                                                                           "written as JSON (it holds a NaN, an "
                                                                           "infinity or bytes)"}}


def stdio_tape(path, answer: dict) -> str:
    """initialize, then a tools/call answered with `answer`, over stdio (tests/test_hostile_input.py's verify too)."""
    return write_tape(path, [{"kind": "stdio.line", "t": t, "dir": d, "msg": m} for t, d, m in (
        (1.0, "c2s", INIT), (1.1, "s2c", INIT_RESULT), (2.0, "c2s", CALL), (2.1, "s2c", answer))])


def test_replay_over_stdio_answers_what_json_cannot_write_with_an_error(tmp_path):
    from io import BytesIO

    from mcptape.replay.recorded import load
    from mcptape.replay.serve import Replayer
    from mcptape.replay.stdio import serve

    tape = stdio_tape(tmp_path / "t.mcptape", UNWRITABLE)
    out = BytesIO()
    serve(Replayer(load(tape)), BytesIO(f"{json.dumps(INIT)}\n{json.dumps({**CALL, 'id': 7})}\n".encode()), out)
    assert json.loads(out.getvalue().splitlines()[-1]) == SERVED


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_replay_over_http_answers_what_json_cannot_write_with_an_error(tmp_path, stream):
    from mcptape.replay import replaying

    json_headers = [("content-type", "application/json")]
    tape = write_tape(tmp_path / "t.mcptape", [
        records.http_request(1.0, 0, 0, "POST", "/mcp", [], json_headers, None, None, True, {"msg": INIT}),
        records.http_response(1.1, 0, 200, "OK", [*json_headers, ("mcp-session-id", "s1")], "s1",
                              {"msg": INIT_RESULT}),
        records.http_request(2.0, 1, 0, "POST", "/mcp", [], json_headers, "s1", "2025-11-25", True, {"msg": CALL}),
        *([records.http_response(2.1, 1, 200, "OK", [("content-type", "text/event-stream")], "s1", {}),
           {"kind": "sse.event", "t": 2.1, "exchange": 1, "dir": "s2c", "msg": UNWRITABLE}] if stream else
          [records.http_response(2.1, 1, 200, "OK", json_headers, "s1", {"msg": UNWRITABLE})])])
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def post(url: str, message: dict, session: str | None = None):
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                   **({"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"} if session else {})}
        return opener.open(urllib.request.Request(url, json.dumps(message).encode(), headers), timeout=10)

    with replaying(tape) as url:
        session = post(url, INIT).headers["mcp-session-id"]
        answer = post(url, {**CALL, "id": 7}, session)
        body = answer.read().decode()
    assert answer.status == 200
    assert json.loads(body.removeprefix("data: ") if stream else body) == SERVED


# -- import: what no recorder writes is refused in one line, not written into a tape that breaks later --------------

def _har(url: str) -> dict:
    request = {"method": "POST", "url": url, "headers": [{"name": "content-type", "value": "application/json"}],
               "postData": {"mimeType": "application/json", "text": json.dumps(PING)}}
    return {"log": {"entries": [{"startedDateTime": "2024-01-01T00:00:00Z", "time": 1, "request": request,
                                 "response": {"status": 200, "headers": [], "content": {"text": "{}"}}}]}}


@pytest.mark.parametrize("document, named", [
    ('{"mcptape": 1, "header": {"kind": "header", "format": 1}, "records": [{"kind": "stdio.line", '
     '"t": 1e999999999999, "dir": "c2s", "msg": {}}]}', "record 0: stdio.line field t must be a time"),
    (json.dumps(_har("http://[::1/x")), "entry 0: url 'http://[::1/x' is not a URL (Invalid IPv6 URL)"),
], ids=["t-1e999999999999", "har-url"])
def test_import_refuses_in_one_line(tmp_path, document, named):
    source = tmp_path / "in.json"
    source.write_text(document)
    result = CliRunner().invoke(main, ["import", str(source), "-o", str(tmp_path / "out.mcptape")])
    assert result.exit_code == 2 and result.stderr.startswith(f"mcptape: {source}: {named}"), result.output
    assert result.stderr.count("\n") == 1 and not (tmp_path / "out.mcptape").exists()


def test_found_by_fuzzing_a_status_that_is_a_decimal_nan_and_a_number_for_a_session(tmp_path):
    """tests/fuzz_commands.py found these: check compared an answered request's status (decimal.InvalidOperation
    was no error that names the record), and `edits` cut the session of a stdio line (a field stdio lines do not
    have, so the kind's own shape did not check it)."""
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    http = write_tape(tmp_path / "http.mcptape", [
        records.http_request(1.0, 0, 0, "POST", "/mcp", [], [], None, None, True, records.body(ping)),
        {"kind": "http.response", "t": 1.0, "exchange": 0, "dir": "s2c", "status": Decimal("NaN"), "reason": "",
         "headers": [], "session": None}])
    stdio = write_tape(tmp_path / "stdio.mcptape", [line(msg=CALL, session=7)])
    for tape, command, named in ((http, ["check"], "#1: the record does not fit the tape format: http.response "
                                                   "field status must be an integer"),
                                 (stdio, ["edits", "--edit", "drop at=tools/call"], "#0: the record does not fit "
                                  "the tape format: stdio.line field session must be a string or null")):
        OPENED.clear()
        result = CliRunner().invoke(main, [command[0], tape, *command[1:]])
        assert result.exit_code == 2 and result.stderr.startswith(f"mcptape: {tape}{named}"), result.output
