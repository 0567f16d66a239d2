"""The conversation builder states a conversation in a few lines, for every transport, and the model reads what
it wrote as the recorder's own records: sessions opened, calls settled, refusals and edits where they happened."""

from __future__ import annotations

import pytest

from mcptape.model import LEGACY_SSE, OPENED, STATELESS, STDIO, STREAMABLE, Model, Observer
from mcptape.tape import records
from mcptape.tape.file import Reader
from mcptape.testing.builder import Conversation, Event


class Calls(Observer):
    def __init__(self) -> None:
        self.settled = []

    def call(self, call, model):
        self.settled.append((call.method, call.answered, call.session.transport, call.session.version))


def settle(conversation: Conversation) -> tuple[Model, list]:
    watcher = Calls()
    model = Model([watcher])
    list(model.feed_tape(conversation.name, conversation.records))
    list(model.finish())
    return model, watcher.settled


@pytest.mark.parametrize("transport, revision", [(STREAMABLE, "2025-11-25"), (STREAMABLE, "2025-03-26"),
                                                 (LEGACY_SSE, "2024-11-05"), (STDIO, "2025-06-18"),
                                                 (STATELESS, "2026-07-28")])
def test_each_transport_opens_a_session_and_settles_its_calls_with_no_finding(transport, revision):
    tape = Conversation(transport=transport, revision=revision)
    tape.initialize(capabilities={"tools": {}})
    tape.call("tools/list", result={"tools": []})
    tape.call("tools/call", {"name": "add", "arguments": {"a": 1}}, result={"content": []})
    model, settled = settle(tape)
    handshake = "server/discover" if transport == STATELESS else "initialize"
    assert settled == [(handshake, True, transport, revision), ("tools/list", True, transport, revision),
                       ("tools/call", True, transport, revision)]
    assert tape.findings() == []
    if transport != STATELESS:
        (session,) = model.sessions.values()
        assert session.opened is not None and session.opened.kind == OPENED


def test_a_request_left_unanswered_stays_open_and_a_streamed_answer_with_event_ids_settles():
    tape = Conversation()
    tape.initialize()
    tape.call("tools/call", {"name": "slow"}, stream=True, event_ids=True,
              before=[{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": 1}}])
    pending = tape.request("tools/call", {"name": "never"})
    events = [r for r in tape.records if r["kind"] == records.SSE_EVENT]
    assert [e["id"] for e in events] == ["1", "2"]
    model, settled = settle(tape)
    assert ("tools/call", True, STREAMABLE, "2025-11-25") in settled
    assert ("tools/call", False, STREAMABLE, "2025-11-25") in settled  # settled at the end, unanswered
    assert pending == 3


def test_a_refused_session_reused_is_judged_and_an_injected_refusal_is_not_blamed_on_the_server():
    tape = Conversation()
    tape.initialize()
    tape.call("tools/call", {"name": "a"}, status=404, reply=None)
    tape.call("tools/call", {"name": "a"}, status=404, reply=None)
    assert tape.rules() == ["dead-session-reuse", "no-reinitialize"]
    injected = Conversation()
    injected.initialize()
    gone = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Session not found"}}
    injected.call("tools/call", {"name": "a"}, status=401, reply=gone, injected=True)
    injected.call("tools/call", {"name": "a"}, status=401, reply=gone, injected=True)
    found = injected.findings()
    assert {f.rule: f.blames for f in found} == {"wrong-status-for-dead-session": "none",
                                                 "dead-session-reuse": "client"}
    assert all(f.injected for f in found)


def test_written_to_a_file_it_reads_back_record_for_record(tmp_path):
    tape = Conversation(transport=STDIO)
    tape.initialize()
    tape.call("ping")
    tape.stderr("ready")
    tape.eof()
    tape.exit(0)
    assert list(Reader(tape.write(tmp_path / "t.mcptape"))) == tape.records


def test_several_conversations_are_one_history():
    first, later = Conversation(name="first"), Conversation(name="later")
    first.initialize("session-aaaaaaaaaaaaaaaa")
    for id_ in (10, 11):  # the same client goes on with its ids
        later.call("tools/list", session="session-aaaaaaaaaaaaaaaa", status=404, reply=None, id=id_)
    assert [(f.rule, f.record) for f in first.findings(later)] == [("dead-session-reuse", 4), ("no-reinitialize", 4)]
    assert later.rules()[0] == "capture-incomplete"  # alone, the tape begins mid-session


def test_raw_events_and_records_are_written_as_given():
    tape = Conversation()
    tape.initialize()
    number = tape.exchange(method="GET", headers=[("accept", "text/event-stream")], events=[Event(data="hi")],
                           end=records.CLIENT_DISCONNECTED)
    kinds = [(r["kind"], r.get("exchange")) for r in tape.records[-3:]]
    assert kinds == [(records.HTTP_RESPONSE, number), (records.SSE_EVENT, number), (records.END, number)]
    assert tape.records[-2]["data"] == "hi"
