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
