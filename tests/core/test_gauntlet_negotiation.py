"""The gauntlet's negotiation faults, in memory (issue 35): placed once, at the probe, on a tape where the client
probed; said n/a elsewhere; a cell recovers when the run's log shows the fallback and the rest as recorded."""

from __future__ import annotations

from collections import Counter

import pytest

from mcptape.gauntlet import Gauntlet, Result
from mcptape.gauntlet.faults import BY_NAME, FAULTS, not_applicable, placed
from mcptape.gauntlet.negotiation import NOT_PROBED, PROBE, probed
from mcptape.gauntlet.runner import CLEAN, NOT_APPLICABLE, RECOVERED, SURFACED, Run, baseline, classify
from mcptape.gauntlet.scorecard import text
from mcptape.model import STATELESS, STDIO
from mcptape.replay.recorded import load
from mcptape.testing.builder import Conversation, error, request

META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
RECORDED = Counter({"server/discover": 1, "tools/list": 1, "tools/call": 1})
NEGOTIATION = [f for f in FAULTS if f.probe]


def _modern(tmp_path) -> str:
    """A 2026-07-28 tape: the client probed, the server answered, stateless calls."""
    c = Conversation(transport=STATELESS, revision="2026-07-28")
    c.initialize()
    c.call("tools/list", result={"tools": []})
    c.call("tools/call", {"name": "add"})
    return c.write(tmp_path / "modern.mcptape")


def _legacy(tmp_path) -> str:
    c = Conversation()
    c.initialize()
    c.call("tools/list", result={"tools": []})
    return c.write(tmp_path / "legacy.mcptape")


def test_the_negotiation_faults_are_the_refusals_met_in_the_field():
    assert [f.edit for f in NEGOTIATION] == [
        "refuse-discover status=400", "refuse-discover status=400 code=-32600",
        "refuse-discover status=400 code=-32602",
        'refuse-discover status=404 body="Invalid session ID"', "refuse-discover status=405",
        "refuse-discover code=-32601", "refuse-discover answer=none", "refuse-discover answer=exit"]
    for fault in NEGOTIATION:
        assert "Backward Compatibility" in fault.source and fault.evidence.startswith("an initialize")
    assert "go-sdk #1177" in BY_NAME["probe-exit"].source and "csharp-sdk PR #1766" in BY_NAME["probe-404"].source


def test_a_negotiation_fault_runs_once_at_the_probe_and_the_others_at_every_position():
    runs = placed([BY_NAME["drop"], BY_NAME["probe-400"]], ["tools/list#1", "tools/call#1"])
    assert [(f.name, at) for f, at in runs] == [("drop", "tools/list#1"), ("drop", "tools/call#1"),
                                                ("probe-400", PROBE)]


def test_where_a_negotiation_fault_cannot_happen_it_says_why(tmp_path):
    era = {"session_era": False, "legacy": False}
    assert not_applicable(BY_NAME["probe-400"], **era, stdio=False, probed=False) == NOT_PROBED
    assert not_applicable(BY_NAME["probe-400"], **era, stdio=False, probed=True) is None
    assert "HTTP-only" in not_applicable(BY_NAME["probe-400"], **era, stdio=True, probed=True)
    assert not_applicable(BY_NAME["probe-32601"], **era, stdio=True, probed=True) is None
    assert not_applicable(BY_NAME["probe-silent"], **era, stdio=True, probed=True) is None
    assert not_applicable(BY_NAME["probe-exit"], **era, stdio=True, probed=True) is None
    assert "only a server the client starts" in not_applicable(BY_NAME["probe-exit"], **era, stdio=False, probed=True)
    assert probed(load(_modern(tmp_path))) and not probed(load(_legacy(tmp_path)))


def test_on_a_tape_where_the_client_did_not_probe_the_gauntlet_says_so(tmp_path):
    gauntlet = Gauntlet(_legacy(tmp_path), ["client", "{url}"], faults=["probe-400", "drop"])
    assert gauntlet.why_not == {"probe-400": NOT_PROBED, "drop": None}
    modern = Gauntlet(_modern(tmp_path), ["client", "{url}"], faults=["probe-400", "probe-exit", "drop"],
                      max_runs=3)
    assert modern.why_not["probe-400"] is None and modern.why_not["probe-exit"] is not None
    assert modern.positions == ["tools/list#1", "tools/call#1"]  # the probe's run is not taken from the budget


def _clean(tmp_path):
    c = Conversation(transport=STATELESS, revision="2026-07-28")
    c.initialize()
    c.call("tools/list", result={"tools": []})
    c.call("tools/call", {"name": "add"})
    return baseline(Run(CLEAN, "", "", exit=0, logs=[c.write(tmp_path / "clean.mcptape")]))


def _refused(status=400, reply=None) -> Conversation:
    """The replay's log: the probe refused by the edit, as the replay of a 2026-only tape answers it."""
    c = Conversation()
    c.exchange(request(c.next_id(), "server/discover", META), session=None, version_header="2026-07-28",
               headers=[("mcp-method", "server/discover")], status=status, reply=reply, injected=True)
    return c


def _classify(tmp_path, c: Conversation, name="probe-400", exit=0) -> Run:
    run = Run(BY_NAME[name], PROBE, BY_NAME[name].edit, exit=exit)
    classify(run, RECORDED, [c.write(tmp_path / "faulted.mcptape")], _clean(tmp_path))
    return run


def test_falling_back_and_going_on_is_recovered(tmp_path):
    c = _refused()
    c.initialize()
    c.call("tools/list", result={"tools": []})
    c.call("tools/call", {"name": "add"})
    run = _classify(tmp_path, c)
    assert run.verdict == RECOVERED, (run.why, run.findings)
    assert "POST initialize, POST notifications/initialized, POST tools/list, POST tools/call" in run.evidence


def test_stopping_at_the_refusal_is_surfaced_with_what_was_missing(tmp_path):
    run = _classify(tmp_path, _refused(), exit=1)
    assert run.verdict == SURFACED
    assert "no initialize after the refused server/discover" in run.why
    assert "never asked for tools/list ×1, tools/call ×1" in run.why


def test_a_get_for_http_sse_after_a_404_is_the_spec_s_other_fallback(tmp_path):
    c = _refused(status=404)
    c.exchange(method="GET", session=None, headers=[("accept", "text/event-stream")], status=405)
    run = _classify(tmp_path, c, "probe-404", exit=1)
    assert run.verdict == SURFACED and "no initialize" not in run.why  # it fell back; the replay has no SSE server
    after_a_json_error = _refused(status=200, reply=error(1, -32601, "Method not found"))
    after_a_json_error.exchange(method="GET", session=None, headers=[("accept", "text/event-stream")], status=405)
    run = _classify(tmp_path, after_a_json_error, "probe-32601", exit=1)
    assert "no initialize after the refused server/discover" in run.why  # the detection reads 400/404/405 only


def test_over_stdio_a_fallback_to_a_server_started_again_counts(tmp_path):
    first = Conversation(transport=STDIO, revision="2025-11-25")
    first.line("c2s", request(first.next_id(), "server/discover", META))
    first.edit(["refuse-discover answer=exit"], "the server exits", request_id=1)
    first.exit(1)
    second = Conversation(transport=STDIO, revision="2025-11-25", t=10.0)
    second.initialize()
    second.call("tools/list", result={"tools": []})
    second.call("tools/call", {"name": "add"})
    run = Run(BY_NAME["probe-exit"], PROBE, BY_NAME["probe-exit"].edit, exit=0)
    classify(run, RECORDED, [first.write(tmp_path / "log-1.mcptape"), second.write(tmp_path / "log-2.mcptape")])
    assert run.verdict == RECOVERED, (run.why, run.findings)


@pytest.mark.parametrize("fault, columns", [("probe-400", [PROBE]), ("drop", [PROBE, "tools/list#1"])])
def test_the_scorecard_gives_the_probe_a_column_of_its_own(fault, columns):
    """A column per position some run is at: the probe's, and the positions of the other faults run."""
    result = Result("t.mcptape", ["client"], False, 5.0, ["tools/list#1"])
    result.runs = [Run(BY_NAME[fault], PROBE if fault == "probe-400" else "tools/list#1", "", RECOVERED, "ok"),
                   Run(BY_NAME["probe-exit"], PROBE, "", NOT_APPLICABLE, "only a server the client starts")]
    lines = text(result, ()).splitlines()
    assert lines[2].split() == ["fault", *columns]
    assert lines[3].split() == [fault, "recovered"] and lines[4].split() == ["probe-exit", "n/a"]


def test_after_the_fallback_the_era_s_own_requests_and_counts_are_not_expected(tmp_path):
    """The Inspector CLI on 2026-07-28 opens subscriptions/listen and lists tools twice; fallen back, it sends no
    subscriptions/listen (an older server has none) and lists once: the conversation went on."""
    c = _refused()
    c.initialize()
    c.call("tools/list", result={"tools": []})
    c.call("tools/call", {"name": "add"})
    run = Run(BY_NAME["probe-400"], PROBE, BY_NAME["probe-400"].edit, exit=0)
    recorded = RECORDED + Counter({"subscriptions/listen": 1, "tools/list": 1})
    classify(run, recorded, [c.write(tmp_path / "faulted.mcptape")])
    assert run.verdict == RECOVERED, run.why
    expire = Run(BY_NAME["expire-session"], "tools/list#1", "", exit=0)  # other faults still count every request
    classify(expire, recorded, [c.write(tmp_path / "faulted.mcptape")])
    assert "never asked for" in expire.why and "subscriptions/listen ×1" in expire.why


def test_the_pytest_marker_places_a_negotiation_fault_at_the_probe_once():
    from mcptape.testing.gauntlet import cells

    mark = pytest.mark.mcptape_gauntlet(faults=["drop", "probe-400"], at=["tools/list#1", "tools/call#1"]).mark
    assert [(c.fault.name, c.at, c.edit) for c in cells(None, mark)] == [
        ("drop", "tools/list#1", "drop at=tools/list#1"), ("drop", "tools/call#1", "drop at=tools/call#1"),
        ("probe-400", PROBE, "refuse-discover status=400")]
