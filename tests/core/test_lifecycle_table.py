"""lifecycle.py's table: the states a session moves between and the steps that move it, on its own and as the model
asks it (a session opens once, dies once, ends once; only a dead one is superseded)."""

from __future__ import annotations

from mcptape.facts import SessionTransition
from mcptape.lifecycle import (DEATHS, DELETED, ENDED, EXPIRED, OPENED, REFUSED, SUPERSEDED, TABLE, Life, State,
                               Transition)
from mcptape.model import STDIO, Model, Observer
from mcptape.testing.builder import Conversation


def test_every_state_is_reached_and_superseded_and_ended_are_final():
    reached = {State.NEW} | set(TABLE.values())
    assert reached == set(State)
    assert not [key for key in TABLE if key[0] in (State.SUPERSEDED, State.ENDED)]
    assert {step for _, step in TABLE} == {OPENED, *DEATHS, ENDED, SUPERSEDED}


def test_a_session_dies_once_and_keeps_the_status_it_goes_on_being_refused_with():
    life = Life()
    assert life.take(Transition(OPENED, 1, 1.0, 200))
    assert not life.take(Transition(OPENED, 2, 2.0, 200))  # opened once
    assert not life.take(Transition(SUPERSEDED, 3, 3.0))  # not dead: nothing to supersede
    assert life.answer("DELETE", 200, False, {}) == DELETED
    assert life.take(Transition(DELETED, 4, 4.0, 200)) and life.refused_with is None
    assert life.answer("POST", 404, False, {}) is None and life.refused_with == 404  # dead already: a status kept
    assert not life.take(Transition(REFUSED, 5, 5.0, 404))  # dies once
    assert life.take(Transition(SUPERSEDED, 6, 6.0)) and life.state is State.SUPERSEDED
    assert (life.opened.seq, life.dead.kind, life.superseded.seq) == (1, DELETED, 6)


def test_what_an_answer_says_of_a_live_session():
    said = {"msg": {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Session not found"}}}
    assert Life().answer("POST", 404, False, {}) == REFUSED
    assert Life().answer("POST", 404, True, {}) == EXPIRED  # an edit's answer
    assert Life().answer("POST", 401, False, said) == REFUSED
    assert Life().answer("POST", 401, False, {}) is None  # credentials, not the session
    unknown = Life()
    unknown.met(started=True)
    assert unknown.unknown and unknown.answer("POST", 401, False, {}) == REFUSED  # an id it never issued
    midway = Life()
    midway.met(started=False)
    assert midway.midway and not midway.unknown


class Steps(Observer):
    def __init__(self) -> None:
        self.steps: list[tuple[str, str]] = []

    def noted(self, seen, model):
        self.steps += [(f.session.short, f.step.kind) for f in seen.notes if isinstance(f, SessionTransition)]


def steps(tape: Conversation) -> list[tuple[str, str]]:
    watcher = Steps()
    model = Model([watcher])
    list(model.feed_tape(tape.name, tape.records))
    list(model.finish())
    return watcher.steps


def test_the_model_notes_each_step_the_table_takes_and_no_other():
    tape = Conversation()
    tape.initialize("first-session-0123456789")
    tape.call("tools/list", status=404, reply=None)
    tape.call("tools/list", status=404, reply=None)  # refused again: no second death
    tape.initialize("second-session-0123456789")
    tape.exchange(method="DELETE")
    assert steps(tape) == [("first-se", OPENED), ("first-se", REFUSED), ("first-se", SUPERSEDED),
                           ("second-s", OPENED), ("second-s", DELETED)]
    stdio = Conversation(transport=STDIO)
    stdio.initialize()
    stdio.initialize()  # a second handshake in the same process opens nothing new
    stdio.exit(0)
    stdio.exit(0)
    assert steps(stdio) == [("stdio#1", OPENED), ("stdio#1", ENDED)]
