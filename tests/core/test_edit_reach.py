"""edits.reach, in memory: a method no MCP revision has and the tape never carried is refused, naming the closest
method; a position past what the tape recorded is a warning; initialize and server/discover always pass. The
commands that call it: tests/peers/test_edit_reach.py."""

from __future__ import annotations

import pytest

from mcptape.edits import EditError, parse, reach


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


