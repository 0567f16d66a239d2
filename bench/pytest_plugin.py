"""The pytest plugin's cost: per test, with the `mcptape` fixture replaying a session, against a plain test and
against mcp-cassette's `mcp_cassette` fixture replaying the same session; and the plugin's load cost on a suite
that does not use it (the same suite with and without `-p no:mcptape`).

    .venv/bin/python bench/pytest_plugin.py [--tests 200] [--rounds 5] [--no-competitor] [--json]

mcp-cassette (PyPI) goes into a venv of its own, made on first use in the temporary directory (competitor.py). Each
tool runs twice: the fixture alone, its replay server started (`mcptape.url`, `mcp_cassette.server_url(...)`):
set-up and tear-down; then with the same short session driven by the same stdlib client (initialize, initialized,
one tools/call), which both tools record once from the SDK demo server and replay in every test, with the server
stopped. Per-test cost is the median over the tests after the first of pytest's own setup + call + teardown
durations. Goals: <= 10 ms per test and <= 0.5x mcp-cassette's; plugin load <= 5 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import competitor
from figures import Figures, add_flag

HERE = Path(sys.executable).parent

DRIVE = '''
import http.client, json, re

def drive(url):
    """A minimal MCP client: initialize, initialized, one tools/call, over one keep-alive connection."""
    host, port, path = re.match(r"http://([^:/]+):(\\d+)(/\\S*)", url).groups()
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(msg):
        conn.request("POST", path, json.dumps(msg), headers)
        response = conn.getresponse()
        body = response.read()
        return response, body

    response, body = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    assert response.status == 200, (response.status, body)
    session = response.getheader("mcp-session-id")
    if session:
        headers["Mcp-Session-Id"] = session
    headers["MCP-Protocol-Version"] = "2025-11-25"
    post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    response, body = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "add", "arguments": {"a": 2, "b": 3}}})
    assert response.status == 200 and b'"result"' in body, (response.status, body)
    conn.close()
'''

TIMES = '''
import json, os

durations = {}

def pytest_runtest_logreport(report):
    durations[report.nodeid] = durations.get(report.nodeid, 0.0) + report.duration

def pytest_sessionfinish(session):
    if os.environ.get("BENCH_TIMES"):
        with open(os.environ["BENCH_TIMES"], "w") as f:
            json.dump(list(durations.values()), f)
'''


# what loading the plugin adds to a run once pytest itself is imported
IMPORT = "import time, pytest; t = time.perf_counter(); import mcptape.testing.plugin; print(time.perf_counter() - t)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def suite(folder: Path, body: str, tests: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conftest.py").write_text(TIMES)
    (folder / "drive.py").write_text(DRIVE)
    (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (folder / "test_suite.py").write_text("import pytest\nfrom drive import drive\n\n" + "\n".join(
        textwrap.dedent(body).replace("NAME", f"test_{n:04d}") for n in range(tests)))
    return folder


def run(python: Path, folder: Path, *args: str, env: dict | None = None) -> tuple[float, list[float]]:
    """CPU time of the run (user + system: steadier than wall time on a shared machine), and each test's setup +
    call + teardown."""
    times = folder / "times.json"
    environ = {**os.environ, **(env or {}), "BENCH_TIMES": str(times), "PYTHONPATH": str(folder)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=folder,
                            env=environ, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        raise SystemExit(f"bench: pytest failed in {folder}:\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
    return cpu, json.loads(times.read_text())


def per_test(times: list[float]) -> float:
    return statistics.median(times[1:])  # after the first test (its one-time start-up is not per-test)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tests", type=int, default=200)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--no-competitor", action="store_true")
    add_flag(p)
    a = p.parse_args()
    figures = Figures(a.json)
    ours = HERE / "python"
    work = Path(tempfile.mkdtemp(prefix="mcptape-bench-"))
    port = free_port()
    server = subprocess.Popen([str(ours), "-m", "mcptape.demo.server", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    upstream = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        plain = suite(work / "plain", "def NAME():\n    pass\n", a.tests)
        # each tool twice: the fixture alone (its replay server started: set-up + tear-down), then driving the session
        mine = suite(work / "mcptape", f"""
            @pytest.mark.mcptape("session", upstream={upstream!r})
            def NAME(mcptape):
                drive(mcptape.url)
            """, a.tests)
        mine_bare = suite(work / "mcptape-bare", f"""
            @pytest.mark.mcptape({str(mine / 'cassettes' / 'test_suite' / 'session.mcptape')!r})
            def NAME(mcptape):
                mcptape.url
            """, a.tests)
        run(ours, mine, "--mcptape-record-mode=once", "-k", "test_0000")  # record the session once
        theirs_python = None if a.no_competitor else competitor.python()
        theirs = theirs_bare = None
        if theirs_python is not None:
            theirs = suite(work / "mcp-cassette", f"""
                @pytest.mark.mcp_cassette(cassette={str(work / 'session.mcp.json')!r}, mode="none")
                def NAME(mcp_cassette):
                    drive(mcp_cassette.server_url({upstream!r}))
                """, a.tests)
            theirs_bare = suite(work / "mcp-cassette-bare", f"""
                @pytest.mark.mcp_cassette(cassette={str(work / 'session.mcp.json')!r}, mode="none")
                def NAME(mcp_cassette):
                    mcp_cassette.server_url({upstream!r})
                """, a.tests)
            run(theirs_python, theirs, "-k", "test_0000", env={"MCP_CASSETTE_MODE": "once"})
        server.terminate()
        server.wait()  # every replay below runs with no server

        rows: dict[str, list[float]] = {"plain": [], "mcptape fixture": [], "mcp-cassette fixture": [],
                                        "mcptape + session": [], "mcp-cassette + session": []}
        loads: dict[str, list[float]] = {"with": [], "without": [], "import": []}
        for _ in range(a.rounds):  # interleaved, so the machine's swings hit every variant alike
            rows["plain"].append(per_test(run(ours, plain)[1]))
            rows["mcptape fixture"].append(per_test(run(ours, mine_bare)[1]))
            rows["mcptape + session"].append(per_test(run(ours, mine)[1]))
            if theirs is not None:
                rows["mcp-cassette fixture"].append(per_test(run(theirs_python, theirs_bare)[1]))
                rows["mcp-cassette + session"].append(per_test(run(theirs_python, theirs)[1]))
            for _ in range(3):
                loads["with"].append(run(ours, plain)[0])
                loads["without"].append(run(ours, plain, "-p", "no:mcptape")[0])
            loads["import"].append(float(subprocess.run([str(ours), "-c", IMPORT], capture_output=True,
                                                        text=True, check=True).stdout))
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait()
    med = {k: statistics.median(v) * 1000 for k, v in rows.items() if v}
    print(f"per test (setup + call + teardown, median of {a.rounds} rounds x {a.tests} tests, after the first):")
    for name, ms in med.items():
        print(f"  {name:24} {ms:7.2f} ms")
    fixture = med["mcptape fixture"] - med["plain"]
    figures.update(tests=a.tests, rounds=a.rounds, mcptape_fixture_over_plain_ms=fixture,
                   **{re.sub(r"[ +-]+", "_", name) + "_ms": ms for name, ms in med.items()})
    print(f"  the mcptape fixture over a plain test: {fixture:.2f} ms (goal <= 10)")
    if "mcp-cassette fixture" in med:
        theirs_fixture = med["mcp-cassette fixture"] - med["plain"]
        figures["mcp_cassette_fixture_over_plain_ms"] = theirs_fixture
        print(f"  mcptape / mcp-cassette, fixture: {fixture / theirs_fixture:.2f}x (goal <= 0.5); with the session: "
              f"{med['mcptape + session'] / med['mcp-cassette + session']:.2f}x")
    load = (statistics.median(loads["with"]) - statistics.median(loads["without"])) * 1000
    spread = (max(loads["without"]) - min(loads["without"])) * 1000
    print(f"plugin load: importing it {statistics.median(loads['import']) * 1000:.2f} ms (goal <= 5); a suite of "
          f"{a.tests} plain tests with it vs -p no:mcptape: {load:+.1f} ms CPU of "
          f"{statistics.median(loads['without']) * 1000:.0f} ms (medians of {len(loads['with'])} runs each; runs "
          f"spread by {spread:.0f} ms, so the import is the measure)")
    figures.update(import_ms=statistics.median(loads["import"]) * 1000, suite_load_ms=load, suite_spread_ms=spread)
    shutil.rmtree(work, ignore_errors=True)
    figures.emit()


if __name__ == "__main__":
    main()
