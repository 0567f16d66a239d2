"""The official conformance suite (@modelcontextprotocol/conformance) as a peer of `check`: its server scenarios
drive the TypeScript reference server (server-everything, Streamable HTTP) through `mcptape record`, its client
scenarios serve the MCP Inspector's CLI through `mcptape record --mode regular`, and `check` reads the tapes. What
the suite sends right and the peer answers right gives no finding at warning or above; what either does wrong,
check names, in agreement with the suite's own verdicts:

- dns-rebinding-protection sends initialize with a foreign Host and Origin (evil.example.com) on purpose; a server
  that answers it 2xx fails the suite's check and breaks origin-validated (recorded behind mcptape, which presents
  the upstream's Host, the tape shows a loopback Host and the foreign Origin).
- server-sse-multiple-streams POSTs three raw tools/list (ids 1000-1002) with `MCP-Protocol-Version: 2025-03-26`
  on a session that negotiated 2025-11-25: a true break of the version header clause by the suite's own client
  (protocol-version-mismatch, which warns).
- the client scenario `initialize`'s test server answers every message but initialize and tools/list with 200 and
  `{"jsonrpc": "2.0", "result": {}}`, `notifications/initialized` included: a notification answered with a body
  (notification-202) and a response without an id (orphan-response). `sse-retry` closes a tools/call stream after
  its priming event and answers on the client's resuming GET (Last-Event-ID): correct, and silent.
"""

from __future__ import annotations

import re
import subprocess

from mcptape.check import run
from mcptape.check.verdicts import Verdict

from ..node_peers import inspector_home, kill_group, node_peers, tail, ts_server  # noqa: F401  (a fixture)

# a few seconds' worth: the handshake, a list, several streams at once, and the scenario that sends bad traffic
SCENARIOS = ("server-initialize", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection")
SUITE_CLIENT_IDS = {1000, 1001, 1002}  # server-sse-multiple-streams' raw POSTs
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


# client scenario -> what the Inspector CLI is asked (its server's tool for sse-retry is test_reconnection)
CLIENT_SCENARIOS = {"initialize": "--method tools/list",
                    "sse-retry": "--method tools/call --tool-name test_reconnection"}


def run_suite(argvs: dict[str, list[str]], cwd, **env: str) -> dict[str, str]:
    """Each scenario's conformance command, all at once (each is its own session); what each printed."""
    peers = node_peers()
    started = {name: subprocess.Popen([str(peers.node), str(peers.conformance), *argv], cwd=cwd,
                                      env=peers.env(NO_COLOR="1", **env), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      start_new_session=True)
               for name, argv in argvs.items()}
    said = {}
    try:
        for name, proc in started.items():
            said[name] = _ANSI.sub("", proc.communicate(timeout=120)[0])
    finally:
        for proc in started.values():
            if proc.poll() is None:
                kill_group(proc)
    return said


def test_the_conformance_suite_through_record_and_check(ts_server, record, tmp_path):
    # the suite's DNS rebinding scenario sends a foreign Host and Origin: let them through to the server, whose
    # answer is what is judged
    rec = record(ts_server("streamableHttp"), "--allow-host", "*", "--allow-origin", "*")
    said = run_suite({name: ["server", "--url", rec.url, "--scenario", name] for name in SCENARIOS}, tmp_path)
    assert rec.stop()[0] == 0
    for name in SCENARIOS[:-1]:  # the server passes these: their traffic is the conformant part
        assert re.search(r"Passed: \d+/\d+, 0 failed", said[name]), f"{name}:\n{tail(said[name])}"
    rebinding = said["dns-rebinding-protection"]
    accepted = re.search(r"localhost-host-rebinding-rejected\s*\]\s*FAILURE", rebinding) is not None
    assert accepted or re.search(r"localhost-host-rebinding-rejected\s*\]\s*SUCCESS", rebinding), tail(rebinding)

    outcome = run([str(rec.tape)], requirements=True)
    loud = [f for f in outcome.findings if f.severity in ("error", "warning")]
    origin = [f for f in loud if f.rule == "origin-validated"]
    version = [f for f in loud if f.rule == "protocol-version-mismatch"]
    assert [f for f in loud if f not in origin and f not in version] == []  # no false alarm
    # the suite's verdict and check's agree: a server that served the foreign Origin is named, once, as the server
    assert [(f.method, f.blames) for f in origin] == ([("initialize", "server")] if accepted else [])
    assert {f.request_id for f in version} == SUITE_CLIENT_IDS and {f.blames for f in version} == {"client"}

    verdicts = {row.requirement.id: row.verdict for row in outcome.rows}
    assert {r for r, v in verdicts.items() if v in (Verdict.FAIL, Verdict.WARN)} == (
        {"origin-validated", "protocol-version-mismatch"} if accepted else {"protocol-version-mismatch"})
    exercised = {"post-accept-both", "notification-202", "session-id-visible-ascii", "initialize-request-fields",
                 "initialized-sent", "request-id-type", "response-result-or-error", "get-accept-sse"}
    assert {r for r in exercised if verdicts[r] != Verdict.PASS} == set()


def test_the_conformance_suite_serving_the_inspector_through_record_and_check(record, tmp_path):
    peers = node_peers()
    rec = record(None, "--mode", "regular")  # the suite's servers listen on ports it picks: the client's proxy
    inspector = f"{peers.node} {peers.inspector_cli} --format json --transport http"
    said = run_suite({name: ["client", "--scenario", name, "--command", f"{inspector} {ask}"]
                      for name, ask in CLIENT_SCENARIOS.items()}, tmp_path,
                     HTTP_PROXY=rec.url, http_proxy=rec.url, NO_PROXY="", no_proxy="", HOME=str(inspector_home()))
    assert rec.stop()[0] == 0
    for name, out in said.items():
        # sse-retry also times the reconnect against the stream's close as its server saw it: through a proxy on a
        # loaded machine that clock can read a few ms off either way (-46 ms seen); the traffic is judged below
        timing = name == "sse-retry" and re.search(r"reconnected too (early|late)", out)
        assert "OVERALL: PASSED" in out or timing, f"{name}:\n{tail(out)}"

    outcome = run([str(rec.tape)], requirements=True)
    loud = [f for f in outcome.findings if f.severity in ("error", "warning")]
    # the initialize scenario's server, answering notifications/initialized: one answer, two clauses it breaks
    assert sorted((f.rule, f.blames) for f in loud) == [("notification-202", "server"), ("orphan-response", "server")]
    assert len({f.record for f in loud}) == 1
    verdicts = {row.requirement.id: row.verdict for row in outcome.rows}
    # sse-retry: the closed stream was resumed, and its answer came on the resuming GET, as it may
    assert verdicts["no-resume-after-close"] == verdicts["response-on-get-stream"] == Verdict.PASS
