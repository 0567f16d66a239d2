"""Edits that cannot fire are caught before the run, by every command that takes edits on a tape (replay over
HTTP and stdio, the `edits` dry run, the gauntlet: exit 2, one line naming the closest method) and by the pytest
marker (the test fails at setup); a position past the tape is a warning. edits.reach itself: tests/core."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from ..conftest import run_mcptape

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
EXPIRED = str(CASSETTES / "expired-session-404.mcptape")


@pytest.mark.parametrize("argv", [
    ["edits", EXPIRED, "--edit", "expire-session at=tools/cal#1"],
    ["replay", EXPIRED, "--edit", "expire-session at=tools/cal#1"],
    ["replay", str(CASSETTES / "cancelled-call.mcptape"), "--stdio", "--edit", "drop at=tools/cal"],
    ["gauntlet", str(CASSETTES / "resumed-stream.mcptape"), "--faults", "drop", "--at", "tools/cal#1", "--",
     "true", "{url}"],
], ids=["edits", "replay", "replay-stdio", "gauntlet"])
def test_every_command_refuses_it_at_the_start(argv):
    done = run_mcptape(*argv, stdin=-3)  # -3: subprocess.DEVNULL
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.strip().splitlines() == [
        f"mcptape: edit '{argv[argv.index('--edit') + 1] if '--edit' in argv else 'drop at=tools/cal#1'}': no MCP "
        f"revision has the method 'tools/cal', in at=tools/cal#1: did you mean tools/call?"]


def test_the_dry_run_warns_about_a_position_past_the_tape():
    done = run_mcptape("edits", EXPIRED, "--edit", "drop at=tools/call#9")
    assert done.returncode == 0
    assert ("mcptape: warning: edit 'drop at=tools/call#9': at=tools/call#9 is past what the tape recorded "
            "(3 tools/call message(s))") in done.stderr


def test_the_pytest_marker_fails_the_test_naming_the_closest_method(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (pytester.path / "cassettes" / "test_app").mkdir(parents=True)
    shutil.copy(EXPIRED, pytester.path / "cassettes" / "test_app" / "test_x.mcptape")
    pytester.makepyfile(test_app=textwrap.dedent("""
        import pytest

        @pytest.mark.mcptape(edits=["drop at=tools/cal#1"])
        def test_x(mcptape):
            mcptape.url
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)  # at setup, before the test body runs
    assert "no MCP revision has the method 'tools/cal', in at=tools/cal#1: did you mean tools/call?" in \
        result.stdout.str()


def test_the_pytest_marker_warns_about_a_position_past_the_tape_as_the_test_starts(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (pytester.path / "cassettes" / "test_app").mkdir(parents=True)
    shutil.copy(EXPIRED, pytester.path / "cassettes" / "test_app" / "test_x.mcptape")
    pytester.makepyfile(test_app=textwrap.dedent("""
        import pytest

        @pytest.mark.mcptape(edits=["drop at=tools/call#9"])
        def test_x(mcptape):
            mcptape.url
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, warnings=2)  # past the tape (at the start), never fired (at the end)
    assert "at=tools/call#9 is past what the tape recorded (3 tools/call message(s))" in result.stdout.str()
