"""Verify speed: `mcptape.verify` re-driving the SDK server with a recorded N-call tape vs a plain SDK client making
the same calls against the same server, in interleaved rounds. Goal: verify <= 1.2x the client's time.

    .venv/bin/python bench/verify_speed.py [--calls 2000] [--rounds 5] [--json]

The tape is recorded first through `mcptape record` from the SDK client (initialize, N `tools/call add`). Verify's
time is all of it: reading the tape, the re-drive, writing the new conversation as a tape, and the diff of the two.
"""

from __future__ import annotations

import argparse
import os
import re
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

import mcptape
from figures import Figures, add_flag

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


async def calls(url: str, n: int) -> None:
    async with Client(url, mode="legacy") as client:
        for i in range(n):
            result = await client.call_tool("add", {"a": i, "b": 1})
            assert result.structured_content == {"result": i + 1}


def record(upstream: str, tape: Path, n: int) -> None:
    proc = subprocess.Popen([BIN / "mcptape", "record", "--upstream", upstream, "--listen", "127.0.0.1:0",
                             "-o", str(tape)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = None
    while url is None:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"mcptape record exited: {proc.communicate()[1]}")
        if found := re.search(r"(http://127\.0\.0\.1:\d+\S*)\s*$", line):
            url = found.group(1)
    anyio.run(calls, url, n)
    proc.send_signal(signal.SIGINT)
    proc.wait(30)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    add_flag(p)
    a = p.parse_args()
    figures = Figures(a.json)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "mcptape.demo.server", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        upstream = f"http://127.0.0.1:{port}/mcp"
        with tempfile.TemporaryDirectory() as tmp:
            tape = Path(tmp) / "calls.mcptape"
            record(upstream, tape, a.calls)
            client_times, verify_times = [], []
            for r in range(a.rounds):
                for which in (["client", "verify"] if r % 2 == 0 else ["verify", "client"]):
                    start = time.perf_counter()
                    if which == "client":
                        anyio.run(calls, upstream, a.calls)
                        client_times.append(time.perf_counter() - start)
                    else:
                        result = mcptape.verify(tape, upstream=upstream)
                        verify_times.append(time.perf_counter() - start)
                        assert result.ok, result.report()
                print(f"round {r + 1}: client {client_times[-1]:.2f}s  verify {verify_times[-1]:.2f}s", flush=True)
    finally:
        server.terminate()
        server.wait(10)
    client, verified = statistics.median(client_times), statistics.median(verify_times)
    print(f"{a.calls} calls, {a.rounds} rounds, medians: SDK client {client:.2f}s ({client / a.calls * 1e3:.2f} ms/call), "
          f"verify {verified:.2f}s ({verified / a.calls * 1e3:.2f} ms/call): {verified / client:.2f}x (goal <= 1.2x)")
    figures.update(calls=a.calls, rounds=a.rounds, client_s=client, verify_s=verified, ratio=verified / client)
    figures.emit()


if __name__ == "__main__":
    os.environ.pop("HTTP_PROXY", None)
    main()
