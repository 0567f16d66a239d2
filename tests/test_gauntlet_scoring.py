"""The gauntlet scores only what the fault caused (issue 36): each test is the regression test of one of the
defects the issue lists, with real clients (the official SDK's, through tests/gauntlet_client.py, and small raw
ones) against replays of tapes recorded between the SDK demo server and client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcptape.gauntlet import Gauntlet, positions
from mcptape.gauntlet.faults import NO_EVENT_IDS
from mcptape.replay.recorded import load

from .conftest import MCPTAPE, wait_until
from .test_gauntlet import CLIENT, SDK_CLIENT, _record, cell


@pytest.fixture(scope="module")
def tape(tmp_path_factory) -> str:
    """Streamable HTTP with a session (2025-11-25), no SSE event ids."""
    return _record(tmp_path_factory.mktemp("scoring") / "demo.mcptape", "legacy")


@pytest.fixture(scope="module")
def resumable(tmp_path_factory) -> str:
    """The same, from a server with an event store: SSE event ids and priming events."""
    return _record(tmp_path_factory.mktemp("scoring") / "resumable.mcptape", "legacy", "--event-store")


@pytest.fixture(scope="module")
def stateless(tmp_path_factory) -> str:
    """2026-07-28, probed by the SDK's auto mode (server/discover first)."""
    return _record(tmp_path_factory.mktemp("scoring") / "stateless.mcptape", "auto")


def test_1_a_finding_of_the_clean_run_is_the_baseline_not_the_cells(tape):
    result = Gauntlet(tape, [*CLIENT, "{url}", "--strip-header", "mcp-protocol-version"], faults=["duplicate"],
                      at=["tools/call#1"], timeout=30).run(1)
    run = cell(result, "duplicate")
    assert run.verdict == "recovered", (run.why, run.findings)
    assert "protocol-version-mismatch" in {f.rule for f in result.baseline.findings}
    assert any("baseline" in d and d.startswith("protocol-version-mismatch") for d in run.discounted)


def test_2_per_run_meta_is_ignored_and_a_per_run_argument_is_a_miss_until_ignored(tape):
    done = subprocess.run([MCPTAPE, "gauntlet", tape, "--faults", "duplicate", "--at", "tools/call#2", "--timeout",
                           "30", "--format", "json", "--fail-on", "never", "--", *CLIENT, "{url}", "--stamp"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    run = report["runs"][0]
    # the per-run _meta stamp matches (metadata, not the request); the per-run threadId argument does not, so the
    # client's add call fails and it never reaches tools/call#2: the cell says why
    assert run["verdict"] == "not-reached" and "the replay had no answer for" in run["why"], run
    assert any("tools/call" in m and "/params/arguments/threadId" in m for m in run["misses"]), run["misses"]
    assert report["baseline"]["misses"] and report["misses"] == []  # the clean run misses it too: said once
    ignored = Gauntlet(tape, [*CLIENT, "{url}", "--stamp"], faults=["duplicate"], at=["tools/call#2"], timeout=30,
                       ignore=["/params/arguments/threadId"]).run(1)
    assert cell(ignored, "duplicate", "tools/call#2").verdict == "recovered", cell(ignored, "duplicate",
                                                                                   "tools/call#2")
    assert not ignored.baseline.misses


def test_3_close_stream_cuts_after_an_event_id_so_the_sdk_client_resumes(tape, resumable):
    result = Gauntlet(resumable, [*CLIENT, "{url}"], faults=["close-stream"], at=["tools/call#2"], timeout=30).run(1)
    run = cell(result, "close-stream", "tools/call#2")
    assert run.verdict == "recovered", (run.why, run.output)
    assert "Last-Event-ID" in run.evidence, run.evidence
    plain = Gauntlet(tape, [*CLIENT, "{url}"], faults=["close-stream"], at=["tools/call#2"]).run(1)
    assert cell(plain, "close-stream", "tools/call#2").why == NO_EVENT_IDS


def test_4_a_finding_resting_on_what_mcptape_injected_is_not_the_clients(resumable):
    result = Gauntlet(resumable, [*SDK_CLIENT, "{url}"], faults=["malformed"], at=["tools/call#1"], timeout=30).run(1)
    run = cell(result, "malformed")
    assert run.verdict != "failed" and not run.findings, (run.verdict, run.why)
    assert any(d.startswith("no-resume-after-close: rests on what mcptape injected") for d in run.discounted)


def test_5_a_client_that_cannot_start_is_an_error_and_exit_2(tape):
    done = subprocess.run([MCPTAPE, "gauntlet", tape, "--faults", "drop", "--at", "tools/call#1", "--format", "json",
                           "--", "/nonexistent/client", "{url}"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    report = json.loads(done.stdout)
    assert report["baseline"]["verdict"] == "error" and "cannot start" in report["baseline"]["why"]
    assert [r["verdict"] for r in report["runs"]] == ["error"]


def test_5_the_stdio_replay_is_the_installed_mcptape_whatever_the_current_directory(tape, tmp_path):
    shadow = tmp_path / "mcptape"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise SystemExit('a mcptape/ folder of the current directory')\n")
    (shadow / "__main__.py").write_text("raise SystemExit('a mcptape/ folder of the current directory')\n")
    for _ in range(2):  # the second time into the same --logs folder
        done = subprocess.run([MCPTAPE, "gauntlet", tape, "--faults", "drop", "--at", "tools/call#1", "--format",
                               "json", "--fail-on", "never", "--logs", str(tmp_path / "logs"), "--", *CLIENT,
                               "--timeout", "2", "--", "{server}"],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["runs"][0]["verdict"] == "surfaced", report["runs"][0]
        assert report["baseline"]["verdict"] == "recovered", report["baseline"]


# A client that gives up on a call by closing its connection, and sends no notifications/cancelled.
LEAVER = r"""
import json, sys, httpx2 as httpx
url = sys.argv[1]
h = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
def post(c, msg, **kw):
    return c.post(url, content=json.dumps(msg), headers=h, **kw)
with httpx.Client(timeout=10) as c:
    r = post(c, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
             "capabilities": {}, "clientInfo": {"name": "mcp", "version": "1"}}})
    h["mcp-session-id"] = r.headers["mcp-session-id"]; h["mcp-protocol-version"] = "2025-11-25"
    post(c, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    post(c, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    try:
        post(c, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                 "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}, timeout=1)
    except httpx.TimeoutException:
        sys.exit("gave up on tools/call")
"""


def test_6_a_disconnect_is_no_cancellation_before_2026_07_28(tape):
    result = Gauntlet(tape, [sys.executable, "-c", LEAVER, "{url}"], faults=["drop"], at=["tools/call#1"],
                      timeout=30).run(1)
    run = cell(result, "drop")
    assert run.verdict == "surfaced" and "never cancelled" in run.why, (run.why, run.output)
    sdk = Gauntlet(tape, [*CLIENT, "{url}", "--timeout", "1"], faults=["drop"], at=["tools/call#1"], timeout=30).run(1)
    assert "never cancelled" not in cell(sdk, "drop").why  # it sent notifications/cancelled


def test_6_on_2026_07_28_closing_the_stream_cancels_and_the_replay_sees_it_during_a_delay(stateless):
    result = Gauntlet(stateless, [*CLIENT, "{url}", "--mode", "2026-07-28", "--timeout", "1"],
                      faults=["drop", "delay"], at=["tools/call#1"], timeout=20).run(2)
    for fault in ("drop", "delay"):
        run = cell(result, fault)
        assert run.verdict == "surfaced" and "never cancelled" not in run.why, (fault, run.why, run.output)


def test_7_positions_skip_the_2026_07_28_probe(stateless):
    assert positions(load(stateless))[:1] == ["tools/list#1"]
    assert "server/discover#1" not in Gauntlet(stateless, ["true", "{url}"]).positions


def _ours(marker: str) -> dict[int, str]:
    """Live processes whose command line holds `marker` (a path of this test's own): pid -> command line, read
    once (a process may be gone a moment later)."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().decode(errors="replace") if proc.name.isdigit() else ""
            if marker in command and (proc / "stat").read_text().split()[2] != "Z":
                found[int(proc.name)] = command
        except OSError:
            pass
    return found


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_8_a_signal_stops_every_client_and_replay_and_prints_the_runs_done(tape, tmp_path, sig, code):
    copy = tmp_path / "stopped.mcptape"  # a path of this test's own, to find its processes by
    copy.write_bytes(Path(tape).read_bytes())
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    logs = tmp_path / "logs"
    gauntlet = subprocess.Popen([MCPTAPE, "gauntlet", str(copy), "--faults", "drop,duplicate", "--at", "tools/call#1",
                                 "--timeout", "300", "-j", "2", "--logs", str(logs), "--format", "json", "--",
                                 *CLIENT, "--", "{server}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "TMPDIR": str(scratch)})

    def commands() -> list[str]:
        return list(_ours(str(copy)).values())

    def duplicate_done() -> bool:  # its client finished the conversation and is gone; the drop run waits for ever
        out = list(logs.glob("*-duplicate-*/client.out"))
        return bool(out) and "resource ok" in out[0].read_text() and not any("duplicate at=" in c for c in
                                                                              commands())

    wait_until(lambda: duplicate_done() and any("drop at=" in c for c in commands()), 120,
               "the duplicate run to finish while the drop run's client and stdio replay wait")
    gauntlet.send_signal(sig)
    out, err = gauntlet.communicate(timeout=60)
    assert gauntlet.returncode == code, err
    report = json.loads(out)
    assert report["stopped"] is True
    assert [(r["fault"], r["verdict"]) for r in report["runs"]] == [("duplicate", "recovered")]
    wait_until(lambda: not _ours(str(copy)), 10, "every client and stdio replay to be gone")
    assert list(scratch.iterdir()) == []  # the temporary folder too


def test_9_a_request_racing_the_fault_as_in_the_clean_run_is_not_dead_session_reuse(tape):
    command = [*CLIENT, "{url}", "--reinit", "--late-get", "0.3"]
    verdicts = []
    for _ in range(2):
        result = Gauntlet(tape, command, faults=["expire-session"], at=["tools/list#1"], timeout=30).run(1)
        run = cell(result, "expire-session", "tools/list#1")
        assert "late GET: 404" in run.output, run.output  # the GET left on the dead session
        verdicts.append((run.verdict, run.why))
    assert verdicts[0] == verdicts[1] and verdicts[0][0] == "recovered", verdicts


# -- the TypeScript SDK client (scoreboard/clients/ts_client.cjs, the SDK the node peers install) -------------------


def _ts_client() -> tuple[list[str], dict]:
    from .node_peers import node_peers

    peers = node_peers()
    sdk = Path(peers.inspector_cli).parents[4] / "sdk"  # node_modules/@modelcontextprotocol/sdk
    client = Path(__file__).resolve().parent.parent / "scoreboard" / "clients" / "ts_client.cjs"
    return [str(peers.node), str(client)], {"MCPTAPE_TS_SDK": str(sdk)}


def test_3_and_4_the_typescript_sdk_client_resumes_a_cut_stream_and_is_not_blamed_for_a_malformed_one(resumable,
                                                                                                    monkeypatch):
    ts, env = _ts_client()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = Gauntlet(resumable, [*ts, "streamable", "{url}", "--timeout", "3000"],
                      faults=["close-stream", "malformed"], at=["tools/call#2"], timeout=30).run(2)
    assert result.baseline.verdict == "recovered", (result.baseline.why, result.baseline.output)
    resumed = cell(result, "close-stream", "tools/call#2")
    assert resumed.verdict == "recovered" and "Last-Event-ID" in resumed.evidence, (resumed.why, resumed.output)
    malformed = cell(result, "malformed", "tools/call#2")
    assert malformed.verdict != "failed" and not malformed.findings, (malformed.why, malformed.discounted)


def test_5_the_typescript_sdk_client_gets_the_installed_stdio_replay(tape, tmp_path, monkeypatch):
    ts, env = _ts_client()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "mcptape").mkdir()
    (tmp_path / "mcptape" / "__init__.py").write_text("raise SystemExit('not this one')\n")
    monkeypatch.chdir(tmp_path)
    result = Gauntlet(tape, [*ts, "stdio", "--timeout", "2000", "--", "{server}"], faults=["drop"], at=["tools/call#1"],
                      timeout=30).run(1)
    assert result.baseline.verdict == "recovered", (result.baseline.why, result.baseline.output)
    assert cell(result, "drop").verdict == "surfaced", cell(result, "drop")
