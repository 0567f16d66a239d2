"""Overhead of `mcptape record -- CMD` on a stdio server: messages/s through the wrapper vs a direct pipe.

    .venv/bin/python bench/stdio_relay.py [--messages 5000] [--rounds 5] [--json]

The server is a minimal echo (one JSON-RPC result line per request line), so the relay's own cost is what shows;
a real server's work would hide it. Two patterns: ping-pong (send, wait for the answer, repeat: latency-bound) and
pipelined (send everything, then read: throughput-bound). Rounds alternate direct and wrapped in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from figures import Figures, add_flag

ECHO = (
    "import sys\n"
    "out = sys.stdout.buffer\n"
    "for line in sys.stdin.buffer:\n"
    "    i = line[line.index(b'\"id\":') + 5:line.index(b',', line.index(b'\"id\":'))]\n"
    "    out.write(b'{\"jsonrpc\":\"2.0\",\"id\":' + i + b',\"result\":{\"ok\":true}}\\n')\n"
    "    out.flush()\n"
)
MCPTAPE = str(Path(sys.executable).parent / "mcptape")


def request(i: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"n":%d}}}\n' % (i, i)


def ping_pong(argv: list[str], n: int) -> float:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    start = time.perf_counter()
    for i in range(n):
        proc.stdin.write(request(i))
        proc.stdout.readline()
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    return n / elapsed


def pipelined(argv: list[str], n: int) -> float:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    start = time.perf_counter()
    writer = threading.Thread(target=lambda: (proc.stdin.write(b"".join(request(i) for i in range(n))), proc.stdin.close()))
    writer.start()
    for _ in range(n):
        proc.stdout.readline()
    elapsed = time.perf_counter() - start
    writer.join()
    proc.wait()
    return n / elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=5000)
    p.add_argument("--rounds", type=int, default=5)
    add_flag(p)
    a = p.parse_args()
    figures = Figures(a.json)
    figures.update(rounds=a.rounds, messages=a.messages)
    server = [sys.executable, "-c", ECHO]
    results: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for pattern, run in (("ping-pong", ping_pong), ("pipelined", pipelined)):
                for path in ("direct", "mcptape"):
                    argv = server if path == "direct" else [MCPTAPE, "record", "-o", f"{tmp}/{pattern}-{r}.mcptape",
                                                            "--", *server]
                    results.setdefault((pattern, path), []).append(run(argv, a.messages))
    print(f"{a.rounds} alternating rounds x {a.messages} requests, echo server; median messages/s (request+answer)")
    for pattern in ("ping-pong", "pipelined"):
        direct = statistics.median(results[(pattern, "direct")])
        wrapped = statistics.median(results[(pattern, "mcptape")])
        print(f"  {pattern:10} direct {direct:9.0f}/s   mcptape {wrapped:9.0f}/s   ratio {wrapped / direct:.2f}")
        figures.update({f"{pattern.replace('-', '_')}_direct": direct, f"{pattern.replace('-', '_')}_mcptape": wrapped})
    figures.emit()


if __name__ == "__main__":
    main()
