"""Gauntlet speed: a 20-run gauntlet whose runs mostly wait (an SDK client with a 1 s request timeout, under `drop`
and `delay` at each of its 10 calls) with -j 2 against -j 1, in interleaved rounds. Goal: -j 2 <= 0.6x -j 1. Then
runs per minute for a mix of faults (every fault at two positions, -j 2).

    .venv/bin/python bench/gauntlet_speed.py [--rounds 2]

The tape is recorded first through `mcptape record` between the SDK demo server and this file's client (10
`tools/call add`). Each run's time is all of it: the replay, the client process (Python and the SDK starting), the
check of its log.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

from figures import Figures, add_flag
from mcptape.capture.recording import start
from mcptape.gauntlet import Gauntlet

BIN = Path(sys.executable).parent
CALLS = 10


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def client(url: str, timeout: float | None) -> None:
    async with Client(url, mode="legacy", read_timeout_seconds=timeout) as c:
        for i in range(CALLS):
            await c.call_tool("add", {"a": i, "b": 1})


def record(tape: Path) -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "mcptape.demo.server", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("the demo server never listened") from None
            time.sleep(0.05)
    proc, ready = start([str(BIN / "mcptape"), "record", "--upstream", f"http://127.0.0.1:{port}/mcp", "--listen",
                         "127.0.0.1:0", "-o", str(tape)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                        text=True)
    try:
        if ready is None:
            raise SystemExit(f"mcptape record exited: {proc.stderr.read()}")
        url = ready.url
        anyio.run(client, url, None)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
        server.terminate()
        server.wait(30)


def timed(tape: str, faults: list[str], at: list[str] | None, jobs: int) -> tuple[float, int]:
    command = [sys.executable, __file__, "client", "{url}"]
    start = time.perf_counter()
    result = Gauntlet(tape, command, faults=faults, at=at, timeout=20).run(jobs)
    return time.perf_counter() - start, len([r for r in result.runs if r.verdict != "n/a"])


def main() -> None:
    if sys.argv[1:2] == ["client"]:
        anyio.run(client, sys.argv[2], 1.0)
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    add_flag(p)
    a = p.parse_args()
    figures = Figures(a.json)
    with tempfile.TemporaryDirectory() as scratch:
        tape = Path(scratch) / "calls.mcptape"
        record(tape)
        one, two = [], []
        for _ in range(a.rounds):
            for jobs, times in ((1, one), (2, two)):
                seconds, runs = timed(str(tape), ["drop", "delay"], [f"tools/call#{n}" for n in range(1, 11)], jobs)
                assert runs == 2 * CALLS, runs
                times.append(seconds)
        m1, m2 = statistics.median(one), statistics.median(two)
        print(f"20 waiting runs (drop, delay; client timeout 1 s), median of {a.rounds}: -j 1 {m1:.1f} s, "
              f"-j 2 {m2:.1f} s: {m2 / m1:.2f}x (goal <= 0.60x) on {os.cpu_count()} CPU(s)")
        seconds, runs = timed(str(tape), [], ["tools/call#1", "tools/call#5"], 2)
        print(f"a mix of faults (all {runs} applicable runs: every fault at 2 positions, -j 2): {seconds:.1f} s, "
              f"{runs / seconds * 60:.0f} runs per minute")
    figures.update(j1_s=m1, j2_s=m2, runs=runs, runs_per_minute=runs / seconds * 60)
    figures.emit()


if __name__ == "__main__":
    main()
