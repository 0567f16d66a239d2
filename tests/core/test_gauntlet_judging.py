"""How the gauntlet judges a cell, in memory (issue 36): the clean run's findings are the baseline, a request the
client sends whatever the answers (its standalone GET stream) racing an injected 404 is not dead-session reuse, and
one that waits for an answer is."""

from __future__ import annotations

from collections import Counter

from mcptape.gauntlet.faults import BY_NAME
from mcptape.gauntlet.judging import baseline, classify
from mcptape.gauntlet.verdicts import CLEAN, Run
from mcptape.model import STDIO
from mcptape.testing.builder import Conversation, request

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


def _dropped(tmp_path, cancels: bool) -> Run:
    """drop at tools/call#1 over stdio: the answer is withheld; the client cancels the request (or not) and goes on."""
    c = Conversation(transport=STDIO)
    c.initialize()
    c.call("tools/list")
    asked = c.request("tools/call", {"name": "add"})
    c.edit(["drop at=tools/call#1"], "dropped the answer", request_id=asked)
    if cancels:
        c.notify("notifications/cancelled", {"requestId": asked, "reason": "timed out"})
    c.call("tools/call", {"name": "add"})
    run = Run(BY_NAME["drop"], "tools/call#1", "drop at=tools/call#1", exit=0)
    classify(run, RECORDED, [c.write(tmp_path / "dropped.mcptape")])
    return run


def test_a_dropped_answer_the_client_cancels_is_recovered_and_one_it_never_cancels_is_not(tmp_path):
    assert _dropped(tmp_path, cancels=True).verdict == "recovered"
    run = _dropped(tmp_path, cancels=False)
    assert run.verdict == "surfaced" and "the request was never cancelled" in run.why, run.why


def _reset(tmp_path, again: dict | None) -> Run:
    """reset at tools/call#1: the connection is cut before any answer; the client sends `again`, if anything."""
    c = Conversation()
    c.initialize("s1")
    c.call("tools/list")
    number = c.exchange(request(9, "tools/call", {"name": "add", "_meta": {"progressToken": 1}}), status=None, end=None)
    c.edit(["reset at=tools/call#1"], "reset the connection", exchange=number)
    if again is not None:
        c.call("tools/call", again)
    run = Run(BY_NAME["reset"], "tools/call#1", "reset at=tools/call#1", exit=0)
    classify(run, RECORDED, [c.write(tmp_path / "reset.mcptape")])
    return run


def test_the_same_request_sent_again_is_a_resend_whatever_its_meta_and_another_one_is_not(tmp_path):
    run = _reset(tmp_path, {"name": "add", "_meta": {"progressToken": 2}})  # the one "same request" rule (match.py)
    assert run.verdict == "recovered", (run.why, run.findings)
    run = _reset(tmp_path, {"name": "subtract"})
    assert run.verdict == "surfaced" and "tools/call never sent again" in run.why, run.why
