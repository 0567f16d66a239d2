"""The model hands out typed, frozen facts: what it noticed on a record, and each call's outcome, decided once."""

from __future__ import annotations

import pytest

from mcptape.facts import (DuplicateRequest, LateResponse, Malformed, OrphanResponse, Outcome, ProgressAfterResponse,
                           ResponseOnGetStream, SessionTransition)
from mcptape.model import OPENED, REFUSED, STDIO, SUPERSEDED, Model, Observer
from mcptape.tape import records
from mcptape.testing.builder import Conversation, notification, result


class Watch(Observer):
    def __init__(self) -> None:
        self.facts: list = []
        self.outcomes: dict = {}

    def noted(self, seen, model):
        self.facts += [(seen.seq, fact) for fact in seen.notes]

    def call(self, call, model):
        self.outcomes[call.method if call.method != "tools/call" else call.request["params"]["name"]] = call.outcome


def watch(*tapes: Conversation) -> Watch:
    w = Watch()
    model = Model([w])
    for tape in tapes:
        list(model.feed_tape(tape.name, tape.records))
    list(model.finish())
    return w


def test_each_call_ends_with_one_outcome():
    tape = Conversation()
    tape.initialize()
    tape.call("tools/call", {"name": "ok"})
    tape.call("tools/call", {"name": "failed"}, result={"content": [], "isError": True})
    tape.call("tools/call", {"name": "error"}, error=(-32602, "bad"))
    tape.call("tools/call", {"name": "refused"}, status=401, reply=None)
    cancelled = tape.request("tools/call", {"name": "cancelled"}, status=200, events=[])
    tape.notify("notifications/cancelled", {"requestId": cancelled})
    tape.request("tools/call", {"name": "waiting"})
    assert watch(tape).outcomes == {
        "initialize": Outcome.RESULT, "ok": Outcome.RESULT, "failed": Outcome.TOOL_ERROR, "error": Outcome.ERROR,
        "refused": Outcome.REJECTED, "cancelled": Outcome.CANCELLED, "waiting": Outcome.UNANSWERED}
    assert [o for o in Outcome if o.answered] == [Outcome.RESULT, Outcome.TOOL_ERROR, Outcome.ERROR]


def test_what_the_model_notices_comes_as_frozen_facts():
    tape = Conversation(transport=STDIO)
    tape.initialize()
    tape.call("tools/list", id=5)
    tape.line(records.S2C, result(5))  # answered again
    tape.call("tools/list", id=5)  # the id used again
    tape.line(records.S2C, result(77))  # nobody asked
    tape.call("tools/call", {"name": "slow", "_meta": {"progressToken": 1}})
    tape.line(records.S2C, notification("notifications/progress", {"progressToken": 1, "progress": 1}))
    tape.line(records.S2C, raw=b"not json")
    tape.exit(0)
    kinds = [(seq, type(fact)) for seq, fact in watch(tape).facts]
    assert [k for _, k in kinds] == [SessionTransition, LateResponse, DuplicateRequest, OrphanResponse,
                                     ProgressAfterResponse, Malformed, SessionTransition]
    facts = [fact for _, fact in watch(tape).facts]
    opened, late, duplicate, orphan, progress, malformed, ended = facts
    assert opened.step.kind == OPENED and opened.session.transport == STDIO and ended.step.kind == "ended"
    assert late.call.id == 5 and late.call.outcome is Outcome.RESULT and duplicate.earlier.id == 5
    assert orphan.msg["id"] == 77 and progress.call.method == "tools/call" and malformed.problem
    for fact in facts:
        with pytest.raises(AttributeError):  # frozen
            setattr(fact, fact.__struct_fields__[0], None)


def test_an_answer_on_the_standalone_stream_and_a_superseded_session():
    tape = Conversation()
    tape.initialize()
    id_ = tape.request("tools/call", {"name": "slow"}, status=200, events=[], end=records.COMPLETE)
    tape.server_says(result(id_))
    tape.call("tools/list", status=404, reply=None)
    tape.initialize()
    facts = [fact for _, fact in watch(tape).facts]
    assert any(isinstance(f, ResponseOnGetStream) and f.msg["id"] == id_ for f in facts)
    steps = [f.step.kind for f in facts if isinstance(f, SessionTransition)]
    assert steps[0] == OPENED and steps[1] == REFUSED and steps[2:] == [SUPERSEDED, OPENED]


@pytest.mark.parametrize("transport", ["stdio", "streamable-http", "http+sse"])
def test_each_record_comes_with_its_message_read_once(transport):
    """Seen.msg is the record's message (or batch), the one view every observer reads; None when it has none."""

    class Messages(Observer):
        def __init__(self) -> None:
            self.seen: list = []

        def record(self, seen, model):
            self.seen.append((seen.msg, seen.record.get("msg")))

    tape = Conversation(transport=transport)
    tape.initialize()
    tape.call("tools/call", {"name": "ok"})
    tape.raw({"kind": records.STDIO_STDERR, "t": 1.0, "line": "log"})
    w = Messages()
    list(Model([w]).feed_tape(tape.name, tape.records))
    assert len(w.seen) == len(tape.records)
    assert all(mine is theirs for mine, theirs in w.seen)
    assert any(mine is not None for mine, _ in w.seen) and any(mine is None for mine, _ in w.seen)
