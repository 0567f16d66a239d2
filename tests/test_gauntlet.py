"""`mcptape gauntlet`: real clients (the official SDK's, and a small one that recovers) against replays of a tape
recorded between the SDK demo server and client, one fault each; plus the catalogue and scorecard in process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcptape.demo.client import script
from mcptape.edits import parse
from mcptape.gauntlet import FAULTS, Gauntlet, positions
from mcptape.gauntlet.faults import BY_NAME, not_applicable, pick
from mcptape.gauntlet.client import expand
from mcptape.replay.recorded import load

from .conftest import MCPTAPE, free_port, spawn_demo, start_recording, stop, wait_until

CLIENT = [sys.executable, str(Path(__file__).with_name("gauntlet_client.py"))]
SDK_CLIENT = [sys.executable, "-m", "mcptape.demo.client"]  # mode="legacy": the session era, no re-initialize


def _record(path: Path, mode: str, *flags: str) -> str:
    """The demo client's conversation with the SDK demo server (started with `flags`), recorded in that client
    mode."""
    port = free_port()
    server = spawn_demo(port, *flags)
    try:
        recording = start_recording(f"http://127.0.0.1:{port}/mcp", path)
        try:
            anyio.run(script, recording.url, mode)
        finally:
            recording.stop()
    finally:
        stop(server)
    return str(path)


@pytest.fixture(scope="module")
def tape(tmp_path_factory) -> str:
    """Streamable HTTP with a session (the session era)."""
    return _record(tmp_path_factory.mktemp("gauntlet") / "demo.mcptape", "legacy")


def cell(result, fault: str, at: str = "tools/call#1"):
    return next(r for r in result.runs if r.fault.name == fault and r.at == at)


# -- the catalogue, in process -------------------------------------------------------------------------------------


def test_every_fault_is_an_edit_with_its_expectation_and_source():
    for fault in FAULTS:
        edit = parse(fault.text("tools/call#2", 5))
        assert edit.action in fault.edit and str(edit.at) == ("server/discover#1" if fault.probe else "tools/call#2")
        assert fault.recovered and fault.source
    assert parse(BY_NAME["delay"].text("ping", 5)).options["seconds"] > 5  # longer than the run's timeout
    assert [f.name for f in pick(["drop", "expire-session"])] == ["expire-session", "drop"]  # catalogue order
    with pytest.raises(ValueError, match="unknown fault 'nope'"):
        pick(["nope"])


def test_what_applies_follows_the_era_and_the_transport():
    session = BY_NAME["expire-session"]
    assert not_applicable(session, session_era=True, legacy=False, stdio=False) is None
    assert "stateless" in not_applicable(session, session_era=False, legacy=False, stdio=False)
    assert "legacy" in not_applicable(session, session_era=False, legacy=True, stdio=False)
    assert "HTTP-only" in not_applicable(session, session_era=True, legacy=False, stdio=True)
    assert "Last-Event-ID" in not_applicable(BY_NAME["close-stream"], session_era=False, legacy=True, stdio=False)
    for name in ("drop", "malformed", "duplicate", "delay"):
        assert not_applicable(BY_NAME[name], session_era=True, legacy=False, stdio=True) is None


def test_positions_are_the_requests_after_the_handshake(tape):
    assert positions(load(tape)) == ["tools/list#1", "tools/call#1", "tools/call#2", "resources/read#1"]
    assert BY_NAME["close-stream"].text("tools/call#2", 5, after=2) == "close-stream after=2 at=tools/call#2"


def test_the_client_command_is_expanded():
    server = ["python", "-m", "mcptape", "replay", "t.mcptape", "--stdio"]
    assert expand(["c", "--url={url}", "{server}"], "http://h/mcp", None) == ["c", "--url=http://h/mcp", "{server}"]
    assert expand(["c", "{server}", "x"], None, server) == ["c", *server, "x"]


def test_a_stateless_tape_says_the_session_faults_are_not_applicable(tmp_path):
    stateless = _record(tmp_path / "stateless.mcptape", "2026-07-28")
    result = Gauntlet(stateless, ["true", "{url}"], faults=["expire-session", "close-stream"],
                      at=["tools/call#1"]).run(jobs=1)
    assert [(r.verdict, r.why) for r in result.runs] == [
        ("n/a", "no sessions: the tape's traffic is stateless"),
        ("n/a", "streams of this era do not resume (no Last-Event-ID)")]



# -- real clients --------------------------------------------------------------------------------------------------


def test_the_sdk_client_fails_expire_session_and_a_recovering_client_recovers(tape):
    sdk = Gauntlet(tape, [*SDK_CLIENT, "{url}"], faults=["expire-session"], at=["tools/call#1"], timeout=20).run(2)
    run = cell(sdk, "expire-session")
    assert run.verdict == "failed", (run.why, run.output)
    assert {"no-reinitialize", "dead-session-reuse"} <= {f.rule for f in run.findings}
    assert all(f.blames == "client" for f in run.findings)

    careful = Gauntlet(tape, [*CLIENT, "{url}", "--reinit"], faults=["expire-session", "restart-server"],
                       at=["tools/call#1"], timeout=20).run(2)
    assert [(r.verdict, r.fault.name) for r in careful.runs] == [("recovered", "expire-session"),
                                                                 ("recovered", "restart-server")], careful.runs


def test_a_client_without_timeouts_hangs_under_drop_and_one_with_them_surfaces(tape):
    waits = Gauntlet(tape, [*CLIENT, "{url}"], faults=["drop"], at=["tools/call#1"], timeout=3).run(1)
    assert cell(waits, "drop").verdict == "hung"
    gives_up = Gauntlet(tape, [*CLIENT, "{url}", "--timeout", "1"], faults=["drop"], at=["tools/call#1"],
                        timeout=20).run(1)
    run = cell(gives_up, "drop")
    assert run.verdict == "surfaced" and "timed out" in run.output, (run.why, run.output)
    assert "never cancelled" not in run.why  # the SDK sent notifications/cancelled: the log shows it


def test_a_stdio_client_gets_a_verdict_under_drop_and_malformed(tape):
    result = Gauntlet(tape, [*CLIENT, "--timeout", "2", "--", "{server}"], faults=["drop", "malformed", "status-429"],
                      at=["tools/call#1"], timeout=20).run(2)
    assert result.stdio
    assert cell(result, "drop").verdict == "surfaced", cell(result, "drop")
    assert cell(result, "malformed").verdict in ("surfaced", "recovered"), cell(result, "malformed")
    assert cell(result, "status-429").verdict == "n/a" and "HTTP-only" in cell(result, "status-429").why


def test_the_cli_scorecard_fails_and_its_command_reproduces_the_cell(tape, tmp_path):
    done = subprocess.run([MCPTAPE, "gauntlet", tape, "--faults", "expire-session,drop", "--at", "tools/call#1",
                           "--timeout", "6", "-j", "2", "--format", "json", "--", *SDK_CLIENT, "{url}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    verdicts = {r["fault"]: r for r in report["runs"]}
    assert verdicts["expire-session"]["verdict"] == "failed" and verdicts["drop"]["verdict"] == "hung"
    command = verdicts["expire-session"]["reproduce"]
    assert command == f"mcptape replay {tape} --edit 'expire-session at=tools/call#1'"

    # by hand: serve the replay the command names (with a log), run the client against it, check the log
    log = tmp_path / "by-hand.mcptape"
    replay = subprocess.Popen(["bash", "-c", f"exec {command.replace('mcptape', MCPTAPE, 1)} --log {log}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = replay.stdout.readline().split(" at ")[1].split()[0]
        client = subprocess.run([*SDK_CLIENT, url], capture_output=True, text=True, timeout=60)
        assert "Session not found" in client.stdout
    finally:
        stop(replay, signal.SIGINT)
    checked = subprocess.run([MCPTAPE, "check", str(log)], capture_output=True, text=True)
    assert "no-reinitialize" in checked.stdout and "dead-session-reuse" in checked.stdout

    md = subprocess.run([MCPTAPE, "gauntlet", tape, "--faults", "expire-session", "--at", "tools/call#1",
                         "--format", "md", "--fail-on", "never", "--", *SDK_CLIENT, "{url}"],
                        capture_output=True, text=True, timeout=120)
    assert md.returncode == 0 and "| `expire-session` | ❌ failed |" in md.stdout and command in md.stdout


def test_bad_usage_is_one_line(tape):
    for args, said in ((["--faults", "nope"], "unknown fault 'nope'"), (["--at", "nonsense"], "not a selector"),
                       (["--fail-on", "recovered"], "--fail-on"), ([], "give the client command")):
        done = subprocess.run([MCPTAPE, "gauntlet", tape, *args, *(["--", "true"] if args else [])],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_stopping_the_gauntlet_leaves_no_process_behind(tape, tmp_path):
    """Each client starts a child and both wait for ever; the gauntlet is stopped mid-run."""
    client = ("import os, subprocess, sys, time; child = subprocess.Popen(['sleep', '600']); "
              f"open(os.path.join({str(tmp_path)!r}, f'{{os.getpid()}}-{{child.pid}}'), 'w').close(); time.sleep(600)")
    gauntlet = subprocess.Popen([MCPTAPE, "gauntlet", tape, "--faults", "drop,reset,duplicate", "--timeout", "300",
                                 "-j", "2", "--", sys.executable, "-c", client, "{url}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = wait_until(lambda: list(tmp_path.iterdir()), 60, "the first client (the clean run) to start")
    pids = [int(p) for f in started for p in f.name.split("-")]
    gauntlet.send_signal(signal.SIGTERM)
    assert gauntlet.wait(30) != 0

    def gone(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"  # a zombie whose parent is gone is reaped

    wait_until(lambda: all(gone(pid) for pid in pids), 10, "every client and child to be gone")
    assert len(list(tmp_path.iterdir())) == 1  # no client started after the stop


# -- in pytest -----------------------------------------------------------------------------------------------------


def test_the_pytest_marker_runs_a_test_once_per_fault_and_position(pytester, tape):
    pytester.makepyfile(test_app=f"""
        import anyio, pytest
        from mcp import MCPError
        from mcptape.demo.client import script

        @pytest.mark.mcptape({tape!r})
        @pytest.mark.mcptape_gauntlet(faults=["expire-session", "duplicate", "close-stream"], at=["tools/call#1"])
        def test_client(mcptape, mcptape_gauntlet):
            try:
                anyio.run(script, mcptape.url, "legacy")
                code = 0
            except Exception:
                code = 1
            run = mcptape_gauntlet.classify(code)
            print("VERDICT", mcptape_gauntlet.fault.name, run.verdict, sorted(f.rule for f in run.findings))
    """)
    result = pytester.runpytest_subprocess("-s", "-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, skipped=1)  # close-stream: the tape's streams carry no event ids
    out = result.stdout.str()
    assert "VERDICT expire-session failed ['dead-session-reuse', 'no-reinitialize']" in out
    assert "VERDICT duplicate recovered []" in out
    assert "test_client[expire-session@tools/call#1]" in "\n".join(
        pytester.runpytest_subprocess("--collect-only", "-q").stdout.lines)


def test_the_docs_and_help_list_every_fault():
    section = (Path(__file__).resolve().parent.parent / "docs" / "gauntlet.md").read_text()
    assert all(f"| `{fault.name}` |" in section for fault in FAULTS)
    shown = " ".join(subprocess.run([MCPTAPE, "gauntlet", "--help"], capture_output=True, text=True).stdout.split())
    assert all(fault.name in shown.replace("- ", "-") for fault in FAULTS), shown


def test_a_retry_after_429_or_503_is_scored_by_its_retry_after(tape):
    patient = Gauntlet(tape, [*CLIENT, "{url}", "--retry", "1.2"], faults=["status-429", "status-503"],
                       at=["tools/call#1"], timeout=20).run(2)
    assert [r.verdict for r in patient.runs] == ["recovered", "recovered"], patient.runs
    hasty = Gauntlet(tape, [*CLIENT, "{url}", "--retry", "0"], faults=["status-429"], at=["tools/call#1"],
                     timeout=20).run(1)
    run = cell(hasty, "status-429")
    assert run.verdict == "failed" and run.why.startswith("retry-before-retry-after"), run.why
