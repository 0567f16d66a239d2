"""Edits that cannot fire are caught before the run (edits.reach): a method no MCP revision has and the tape never
carried is refused, naming the closest method (replay, `edits`, gauntlet, the pytest marker: exit 2 or a failed
test); a position past what the tape recorded is a warning; initialize and server/discover always pass."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from mcptape.edits import EditError, parse, reach

from .conftest import run_mcptape

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"
EXPIRED = str(CASSETTES / "expired-session-404.mcptape")


def sent(*messages: tuple[str | None, dict]) -> list[tuple[float, dict, str | None, str | None]]:
    """A client's messages as (HTTP method, message), over one session, one a second."""
    return [(float(i), msg, http, "s1") for i, (http, msg) in enumerate(messages)]


CONVERSATION = sent(("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize"}),
                    ("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
                    ("GET", None),
                    ("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}),
                    ("POST", {"jsonrpc": "2.0", "id": 3, "method": "x-vendor/sync"}))


def test_a_method_no_revision_has_is_refused_naming_the_closest():
    with pytest.raises(EditError, match=r"no MCP revision has the method 'tools/cal'.*did you mean tools/call\?"):
        reach([parse("expire-session at=tools/cal#1")], CONVERSATION)
    with pytest.raises(EditError, match="did you mean notifications/cancelled"):
        reach([parse("drop at=notifications/canceled")], CONVERSATION)


def test_what_the_tape_carried_or_any_revision_defines_passes():
    # a vendor's own method, in the tape; a method of some revision, not in the tape: a warning, not a refusal
    assert reach([parse("drop at=x-vendor/sync"), parse("drop at=tools/call#1")], CONVERSATION) == []
    [warning] = reach([parse("drop at=resources/read")], CONVERSATION)
    assert "past what the tape recorded (0 resources/read message(s))" in warning


def test_initialize_and_server_discover_are_always_selectable():
    assert reach([parse("drop at=initialize#3"), parse("drop at=server/discover#2")], CONVERSATION) == []


def test_positions_past_the_tape_are_warnings():
    warnings = reach([parse("drop at=tools/call#2"), parse("drop at=post:5"), parse("drop at=session:2"),
                      parse("drop at=id:9"), parse("drop at=post:4"), parse("drop at=after:1h")], CONVERSATION)
    assert [w.split(" is past")[0] for w in warnings] == [
        "edit 'drop at=tools/call#2': at=tools/call#2", "edit 'drop at=post:5': at=post:5",
        "edit 'drop at=session:2': at=session:2", "edit 'drop at=id:9': at=id:9"]
    assert "(1 tools/call message(s))" in warnings[0] and "(4 POST(s))" in warnings[1]


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
