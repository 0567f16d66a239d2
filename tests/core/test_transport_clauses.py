"""The transport clauses beyond their break-and-keep pair (test_requirements.py): the end of a session with DELETE,
the legacy channel's endpoint event, and which Origin a server on loopback must refuse."""

from __future__ import annotations

import pytest

from mcptape.model import LEGACY_SSE
from mcptape.testing.builder import Conversation, Event, notification, request, result

EVIL = [("host", "127.0.0.1:3001"), ("origin", "http://evil.example.com")]


def _rules(tape: Conversation) -> list[tuple[str, str, str]]:
    return [(f.rule, f.severity, f.blames) for f in tape.findings()]


# -- DELETE ------------------------------------------------------------------------------------------------------

def test_a_server_that_accepted_delete_and_keeps_serving_the_id_is_named_and_so_is_the_client_reusing_it():
    tape = Conversation()
    tape.initialize()
    tape.exchange(method="DELETE", status=200)
    tape.call("tools/list", result={"tools": []})  # the same session id, served
    assert sorted(_rules(tape)) == [("dead-session-reuse", "error", "client"),
                                    ("wrong-status-for-dead-session", "warning", "server")]


def test_after_an_accepted_delete_a_404_for_the_id_blames_only_the_client_that_reused_it():
    tape = Conversation()
    tape.initialize()
    tape.exchange(method="DELETE", status=204)
    tape.call("tools/list", status=404, reply=None)
    assert _rules(tape) == [("dead-session-reuse", "error", "client")]


def test_delete_answered_405_leaves_the_session_alive_and_nobody_is_blamed():
    tape = Conversation()
    tape.initialize()
    tape.exchange(method="DELETE", status=405)  # the server MAY refuse to let clients terminate sessions
    tape.call("tools/list", result={"tools": []})
    assert _rules(tape) == []


@pytest.mark.parametrize("revision", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_delete_without_a_session_id_is_a_warning_that_blames_the_client(revision):
    tape = Conversation(revision=revision)
    tape.initialize()
    tape.exchange(method="DELETE", session=None, status=400, reply=None)
    assert _rules(tape) == [("delete-with-session", "warning", "client")]


# -- the legacy channel ------------------------------------------------------------------------------------------

def _legacy(revision: str = "2024-11-05") -> Conversation:
    tape = Conversation(transport=LEGACY_SSE, revision=revision)
    tape.initialize()
    return tape


def test_a_message_streamed_before_the_endpoint_event_is_named():
    tape = Conversation(transport=LEGACY_SSE)
    tape.exchange(method="GET", path="/sse", session=None, headers=[("accept", "text/event-stream")],
                  events=[Event(msg=notification("notifications/message", {"level": "info", "data": "hi"})),
                          Event(event="endpoint", data="/messages?sessionId=s1")], end=None)
    assert ("sse-endpoint-event", "error", "server") in _rules(tape)


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-06-18", "2025-11-25"])
def test_a_legacy_channel_of_any_revision_is_judged_and_a_correct_one_is_silent(revision):
    tape = _legacy(revision)
    tape.call("tools/list", result={"tools": []})
    assert _rules(tape) == []
    tape.exchange(request(90, "ping"), method="PUT", path="/messages", query=[("sessionId", tape.session)],
                  status=202)
    assert ("sse-post-to-endpoint", "error", "client") in _rules(tape)


def test_an_absolute_endpoint_url_is_compared_by_its_path():
    tape = Conversation(transport=LEGACY_SSE)
    tape.open_legacy_channel(endpoint="http://127.0.0.1:3001/messages?sessionId={session}")
    tape.call("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}},
              result={"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "t", "version": "1"}})
    tape.notify("notifications/initialized")
    assert _rules(tape) == []


# -- Origin ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("headers, fires", [
    (EVIL, True),
    ([("host", "localhost:3001"), ("origin", "null")], True),  # a sandboxed page or a file: foreign too
    ([("host", "127.0.0.1:3001"), ("origin", "http://localhost:6274")], False),  # a local page (the Inspector)
    ([("host", "127.0.0.1:3001")], False),  # no Origin: not a browser
    ([("host", "mcp.example.com"), ("origin", "https://app.example.com")], False),  # not on loopback: its own list
    ([("origin", "http://evil.example.com")], False),  # no Host: where the server is, the tape does not say
])
def test_which_origin_a_server_on_loopback_must_refuse(headers, fires):
    tape = Conversation()
    tape.initialize()
    tape.call("tools/list", result={"tools": []}, headers=headers)
    assert (("origin-validated", "error", "server") in _rules(tape)) is fires


def test_a_foreign_origin_refused_with_403_is_silent_and_the_legacy_channel_opening_is_judged_too():
    tape = Conversation()
    tape.initialize()
    tape.call("tools/list", status=403, reply=None, headers=EVIL)
    assert "origin-validated" not in {rule for rule, _, _ in _rules(tape)}
    legacy = Conversation(transport=LEGACY_SSE)
    legacy.exchange(method="GET", path="/sse", session=None, headers=[("accept", "text/event-stream"), *EVIL],
                    events=[Event(event="endpoint", data="/messages?sessionId=s1")], end=None)
    assert ("origin-validated", "error", "server") in _rules(legacy)


def test_an_answer_an_edit_made_up_is_never_blamed_on_the_server():
    tape = Conversation()
    tape.initialize()
    tape.call("tools/list", result={"tools": []}, headers=EVIL, injected=True)
    assert [(f.rule, f.blames) for f in tape.findings()] == [("origin-validated", "none")]


def test_the_answer_of_a_foreign_request_matches_its_own_exchange():
    tape = Conversation()
    tape.initialize()
    foreign = tape.request("tools/list", headers=EVIL)  # still open
    tape.call("ping")
    tape.server_says(result(foreign, {"tools": []}))
    assert "origin-validated" not in {rule for rule, _, _ in _rules(tape)}
