"""What a user sees when they get something wrong: one line, exit 2, nothing created, no traceback."""

from __future__ import annotations

import socket

import anyio
import pytest

from mcptape.demo.client import script
from mcptape.tape.file import read

from .conftest import free_port, run_mcptape, write_tape


def one_line_error(result, contains: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcptape: ") and contains in lines[0], result.stderr


def test_record_refusals(tmp_path, demo_server):
    upstream = demo_server()
    out = str(tmp_path / "t.mcptape")
    one_line_error(run_mcptape("record", "-o", out), "--upstream URL")
    one_line_error(run_mcptape("record", "--mode", "regular", "--upstream", upstream, "-o", out), "takes no --upstream")
    one_line_error(run_mcptape("record", "--upstream", "ftp://x/mcp", "-o", out), "http:// or https://")
    one_line_error(run_mcptape("record", "--upstream", upstream, "--listen", "nonsense", "-o", out), "HOST:PORT")
    one_line_error(run_mcptape("record", "--upstream", f"http://127.0.0.1:{free_port()}/mcp", "-o", out),
                   "cannot reach upstream")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        one_line_error(run_mcptape("record", "--upstream", upstream, "--listen", f"127.0.0.1:{port}", "-o", out),
                       "already in use")
    one_line_error(run_mcptape("record", "--upstream", upstream, "-o", str(tmp_path / "no" / "t.mcptape")),
                   "existing directory")
    assert not (tmp_path / "t.mcptape").exists()
    (tmp_path / "t.mcptape").write_bytes(b"keep me")
    one_line_error(run_mcptape("record", "--upstream", upstream, "-o", out), "already exists")
    one_line_error(run_mcptape("record", "--upstream", upstream, "-o", out, "--append", "--force"), "contradict")
    assert (tmp_path / "t.mcptape").read_bytes() == b"keep me"


def test_append_continues_a_tape_with_new_exchange_numbers(demo_server, record, tmp_path):
    upstream = demo_server()
    tape = tmp_path / "both.mcptape"
    for args in ((), ("--append",)):
        rec = record(upstream, *args, tape=tape)
        anyio.run(script, rec.url, "legacy")
        assert rec.stop()[0] == 0
    records = read(tape).records
    assert [r["kind"] for r in records].count("capture.start") == 2
    starts = [r["exchange"] for r in records if r["kind"] == "http.request"]
    assert len(starts) == len(set(starts)) and starts == sorted(starts)


def test_show_timeline_reads_like_the_conversation(demo_server, record):
    rec = record(demo_server())
    anyio.run(script, rec.url, "legacy")
    rec.stop()
    result = run_mcptape("show", str(rec.tape))
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert any("POST /mcp" in line and "initialize #1" in line and "→" in line for line in lines)
    assert any("tools/call" in line for line in lines)
    assert any("←" in line and "notifications/progress" in line for line in lines)
    assert any("DELETE /mcp" in line for line in lines)
    assert lines[-1].strip().endswith("-- recording stopped (stopped)")


def test_addons_and_help():
    listed = run_mcptape("addons")
    assert listed.returncode == 0 and listed.stdout.strip().endswith("record.py")
    one_line_error(run_mcptape("addons", "nope"), "no addon named")
    for command in ("record", "show", "import", "addons"):
        result = run_mcptape(command, "--help")
        assert result.returncode == 0 and "Example" in result.stdout
    one_line_error(run_mcptape("show", "/nonexistent.mcptape"), "cannot open")


@pytest.mark.parametrize("flag", ["--format=xml"])
def test_usage_errors_exit_2(tmp_path, flag):
    assert run_mcptape("show", str(tmp_path / "x"), flag).returncode == 2


def _many_findings(path) -> str:
    from mcptape.tape import records

    # far more output than a pipe holds: the writer meets the closed pipe
    return write_tape(path, [records.stdio_line(float(i), records.S2C, b"not json") for i in range(5000)])


@pytest.mark.parametrize("command", [["check"], ["diff", "EMPTY"]])
def test_a_reader_that_leaves_early_does_not_change_the_exit_code(tmp_path, command):
    """`mcptape check tape | head -1` under pipefail: the findings still exit 1, quietly."""
    import subprocess

    from .conftest import MCPTAPE

    tape = _many_findings(tmp_path / "many.mcptape")
    if command[0] == "diff":
        command = ["diff", write_tape(tmp_path / "empty.mcptape", [])]
    proc = subprocess.Popen([MCPTAPE, *command, tape], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does
    _, err = proc.communicate(timeout=60)
    assert first and proc.returncode == 1, (first, err)
    assert b"Traceback" not in err and b"Broken pipe" not in err, err
