"""Overhead of `mcptape record -- CMD` on a stdio server: messages/s through the wrapper vs a direct pipe.

    .venv/bin/python bench/stdio_relay.py [--messages 5000] [--rounds 5] [--json]

The server is a minimal echo (one JSON-RPC result line per request line), so the relay's own cost is what shows;
a real server's work would hide it. Two patterns: ping-pong (send, wait for the answer, repeat: latency-bound) and
pipelined (send everything, then read: throughput-bound). Rounds alternate direct and wrapped in the same run.
A third: one 100 MB line without a newline (tests/long_line_server.py), the time until the client has all of it and
the wrapper's peak resident memory. Goals: the long line <= 2x a direct pipe, the wrapper < 200 MB.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from figures import Figures, add_flag

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.hostile_inputs import resident_kb  # noqa: E402

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


def started(argv: list[str]) -> tuple[subprocess.Popen, float]:
    """The process, once it answered a first request, and how long that took: the clock of a pattern starts after
    it, so the figures compare relays, not start-ups (mcptape's imports take ~0.2 s, as long as thousands of
    messages; the start-up is its own figure)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    proc.stdin.write(request(-1))
    proc.stdout.readline()
    return proc, time.perf_counter() - start


def ping_pong(argv: list[str], n: int) -> tuple[float, float]:
    proc, start_up = started(argv)
    start = time.perf_counter()
    for i in range(n):
        proc.stdin.write(request(i))
        proc.stdout.readline()
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    return n / elapsed, start_up


def pipelined(argv: list[str], n: int) -> tuple[float, float]:
    proc, start_up = started(argv)
    start = time.perf_counter()
    writer = threading.Thread(target=lambda: (proc.stdin.write(b"".join(request(i) for i in range(n))), proc.stdin.close()))
    writer.start()
    for _ in range(n):
        proc.stdout.readline()
    elapsed = time.perf_counter() - start
    writer.join()
    proc.wait()
    return n / elapsed, start_up


def long_line(argv: list[str]) -> tuple[float, float, float, float]:
    """Seconds until the client read the whole line, the same from its first byte (the relay without mcptape's
    start-up, ~0.25 s of imports), the peak resident MB of what it ran (sampled), and the CPU seconds it used (the
    wrapper's include its start-up and its tape writer: a steadier figure than time on a busy machine)."""
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, bufsize=0)
    start, peak = time.perf_counter(), [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], resident_kb(proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    proc.stdout.read(1)
    first = time.perf_counter()
    while proc.stdout.read(1 << 20):
        pass
    end = time.perf_counter()
    proc.wait()
    sampler.join()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return end - start, end - first, peak[0] / 1024, used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=5000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--line-mb", type=int, default=100)
    add_flag(p)
    a = p.parse_args()
    figures = Figures(a.json)
    figures.update(rounds=a.rounds, messages=a.messages)
    server = [sys.executable, "-c", ECHO]
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for pattern, run in (("ping-pong", ping_pong), ("pipelined", pipelined)):
                for path in ("direct", "mcptape"):
                    argv = server if path == "direct" else [MCPTAPE, "record", "-o", f"{tmp}/{pattern}-{r}.mcptape",
                                                            "--", *server]
                    results.setdefault((pattern, path), []).append(run(argv, a.messages))
    print(f"{a.rounds} alternating rounds x {a.messages} requests, echo server; median messages/s (request+answer) "
          "from the first answer on; ratio: the median of the rounds' ratios")
    for pattern in ("ping-pong", "pipelined"):
        direct, wrapped = ([rate for rate, _ in results[(pattern, path)]] for path in ("direct", "mcptape"))
        ratio = statistics.median(w / d for w, d in zip(wrapped, direct))
        print(f"  {pattern:10} direct {statistics.median(direct):9.0f}/s   mcptape {statistics.median(wrapped):9.0f}/s"
              f"   ratio {ratio:.2f}")
        key = pattern.replace("-", "_")
        figures.update({f"{key}_direct": statistics.median(direct), f"{key}_mcptape": statistics.median(wrapped),
                        f"{key}_ratio": ratio})
    start_ups = {path: statistics.median(s for (_, p), runs in results.items() if p == path for _, s in runs)
                 for path in ("direct", "mcptape")}
    print(f"  start to the first answer: direct {start_ups['direct'] * 1000:.0f} ms   mcptape "
          f"{start_ups['mcptape'] * 1000:.0f} ms")
    figures.update(start_direct_ms=start_ups["direct"] * 1000, start_mcptape_ms=start_ups["mcptape"] * 1000)
    long_server = [sys.executable, str(Path(__file__).resolve().parent.parent / "tests" / "long_line_server.py"),
                   str(a.line_mb * 1_000_000), "no-newline"]
    runs: dict[str, list[tuple[float, float, float, float]]] = {"direct": [], "mcptape": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            runs["direct"].append(long_line(long_server))
            runs["mcptape"].append(long_line([MCPTAPE, "record", "-o", f"{tmp}/long-{r}.mcptape", "--", *long_server]))
    (direct, direct_flow), (wrapped, wrapped_flow) = (
        (statistics.median(r[0] for r in runs[path]), statistics.median(r[1] for r in runs[path]))
        for path in ("direct", "mcptape"))
    peak = max(r[2] for r in runs["mcptape"])
    cpu = {path: statistics.median(r[3] for r in runs[path]) for path in ("direct", "mcptape")}
    print(f"  one {a.line_mb} MB line, no newline: direct {direct:.2f} s   mcptape {wrapped:.2f} s   ratio "
          f"{wrapped / direct:.2f}; from the first byte {direct_flow:.2f} s vs {wrapped_flow:.2f} s, ratio "
          f"{wrapped_flow / direct_flow:.2f} (goal <= 2); wrapper and server peak {peak:.0f} MB (goal < 200); CPU "
          f"direct {cpu['direct']:.2f} s, mcptape {cpu['mcptape']:.2f} s (with its start-up)")
    figures.update(long_line_direct_s=direct, long_line_mcptape_s=wrapped, long_line_direct_flow_s=direct_flow,
                   long_line_mcptape_flow_s=wrapped_flow, long_line_peak_mb=peak, long_line_direct_cpu_s=cpu["direct"],
                   long_line_mcptape_cpu_s=cpu["mcptape"])
    figures.emit()


if __name__ == "__main__":
    main()
