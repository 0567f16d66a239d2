"""How the gauntlet judges a cell, in memory (issue 36): the clean run's findings are the baseline, a request the
client sends whatever the answers (its standalone GET stream) racing an injected 404 is not dead-session reuse, and
one that waits for an answer is."""

from __future__ import annotations

from collections import Counter

from mcptape.gauntlet.faults import BY_NAME
from mcptape.gauntlet.judging import baseline, classify
from mcptape.gauntlet.verdicts import CLEAN, Run
from mcptape.testing.builder import Conversation

RECORDED = Counter({"tools/list": 1, "tools/call": 1})


def _clean(tmp_path, version_header=True):
    c = Conversation()
    c.initialize("s1")
    c.exchange(method="GET", events=[], end=None, **({} if version_header else {"version_header": None}))
    c.call("tools/list")
    c.call("tools/call", {"name": "add"})
    return baseline(Run(CLEAN, "", "", exit=0, logs=[c.write(tmp_path / "clean.mcptape")]))


def _faulted(tmp_path, on_dead_session, version_header=True) -> Run:
    """expire-session at tools/list#1: the 404 is injected; then what the client sent on the dead session; then it
    opens a new session and goes on as recorded."""
    c = Conversation()
    c.initialize("s1")
    c.call("tools/list", status=404, reply=None, injected=True)
    on_dead_session(c)
    c.initialize("s2")
    c.exchange(method="GET", events=[], end=None, **({} if version_header else {"version_header": None}))
    c.call("tools/list")
    c.call("tools/call", {"name": "add"})
    run = Run(BY_NAME["expire-session"], "tools/list#1", "expire-session at=tools/list#1", exit=0)
    classify(run, RECORDED, [c.write(tmp_path / "faulted.mcptape")], _clean(tmp_path, version_header))
    return run


def test_a_standalone_get_racing_the_404_is_in_flight_not_reuse(tmp_path):
    run = _faulted(tmp_path, lambda c: c.exchange(method="GET", session="s1", status=404, end=None))
    assert run.verdict == "recovered", (run.why, run.findings)
    assert any(d.startswith("dead-session-reuse: only requests the client sends whatever") for d in run.discounted)


def test_a_request_waiting_for_an_answer_on_the_dead_session_is_reuse(tmp_path):
    run = _faulted(tmp_path, lambda c: c.call("tools/call", {"name": "add"}, session="s1", status=404, reply=None))
    assert run.verdict == "failed" and "dead-session-reuse" in run.why, (run.why, run.discounted)


def test_a_finding_of_the_clean_run_is_not_counted_in_the_cell(tmp_path):
    run = _faulted(tmp_path, lambda c: None, version_header=False)
    assert run.verdict == "recovered", (run.why, run.findings)
    assert any(d.startswith("protocol-version-mismatch: the clean run shows it too") for d in run.discounted)
