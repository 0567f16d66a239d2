"""Records no mcptape writes, from a stranger's tape, through every command in-process: each gives a result or one
line naming the record (exit 2), never an internal error. Found by fuzzing (issue 54)."""

from __future__ import annotations

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
}
COMMANDS = [["show"], ["show", "--record", "1"], ["show", "--format", "json"], ["show", "--format", "jsonl"],
            ["check"], ["check", "--format", "json"], ["report", "--format", "json"], ["report", "--format", "html"],
            ["export", "--format", "json"], ["diff", "TAPE"]]


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
