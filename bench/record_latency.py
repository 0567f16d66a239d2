"""Added latency of `mcptape record` per MCP request, against bare mitmdump in reverse mode and a direct connection.

    .venv/bin/python bench/record_latency.py [--rounds 15] [--calls 40] [--text-bytes N]

One demo SDK server (stateless, SSE responses: every call goes through the SSE stream tap). Four paths to it:
direct, bare `mitmdump --mode reverse:…`, `mcptape record` (redaction on, the default) and `mcptape record
--no-redact`. Rounds are interleaved in a shuffled order so drift on the machine hits all alike. Reported: median
latency per path, the latency each proxy adds over direct, and the ratio mcptape/mitmdump with redaction on and off
(goal: <= 1.00 with it on), and the CPU each proxy process spent per call (from /proc: on a loaded machine a steadier
figure than latency, and the one the recorder's own work shows in). `--text-bytes N` calls `start_thread` with N
bytes of prose instead of `add`, so the redactor has a body to read. `--before DIR` adds a fifth path, `mcptape
record` run from the source tree DIR (say, `git worktree add DIR main`), in the same interleaved rounds: a change's
before and after measured in one run. Never run in CI; never a pass/fail.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import Figures, add_flag
from mcptape.tape.file import Reader

BIN = Path(sys.executable).parent
CALL = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-11-25"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int) -> None:
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


PROSE = ("The quarterly report covers revenue, churn and the roadmap; see https://example.com/reports?page=2 for the "
         "charts. Token counts and max_tokens settings are listed per model. ")


def start_thread(size: int) -> str:
    message = (PROSE * (size // len(PROSE) + 1))[:size]
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "start_thread", "arguments": {"message": message}}})


def timed_calls(port: int, calls: int) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        conn.request("POST", "/mcp", body=CALL, headers=HEADERS)
        response = conn.getresponse()
        body = response.read()
        out.append(time.perf_counter() - start)
        assert response.status == 200 and b'"result"' in body, (response.status, body[:200])
    conn.close()
    return out


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=40)
    p.add_argument("--text-bytes", type=int, default=0)
    p.add_argument("--before", metavar="DIR", help="also time `mcptape record` from this source tree")
    add_flag(p)
    a = p.parse_args()
    figures = Figures(a.json)
    global CALL
    if a.text_bytes:
        CALL = start_thread(a.text_bytes)
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            up = free_port()
            procs.append(subprocess.Popen([sys.executable, "-m", "mcptape.demo.server", "--port", str(up), "--stateless"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_for(up)
            dump = free_port()
            procs.append(subprocess.Popen(
                [str(BIN / "mitmdump"), "-q", "--listen-host", "127.0.0.1", "-p", str(dump),
                 "--mode", f"reverse:http://127.0.0.1:{up}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            paths = {"direct": up, "mitmdump": dump}
            pids = {"direct": procs[0].pid, "mitmdump": procs[1].pid}  # direct: the server's own CPU
            recorders = [("mcptape", []), ("no-redact", ["--no-redact"])] + ([("before", [])] if a.before else [])
            for name, flags in recorders:
                paths[name] = free_port()
                env = {**os.environ, "PYTHONPATH": a.before} if name == "before" else None
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "mcptape", "record", "--upstream", f"http://127.0.0.1:{up}/mcp", "--listen",
                     f"127.0.0.1:{paths[name]}", "-o", str(Path(tmp) / f"{name}.mcptape"), *flags],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp))  # (not this tree first)
                pids[name] = procs[-1].pid
            for port in paths.values():
                wait_for(port)
            for port in paths.values():
                timed_calls(port, 10)  # warm up connections and code paths
            samples: dict[str, list[float]] = {name: [] for name in paths}
            cpu: dict[str, list[float]] = {name: [] for name in paths}  # seconds per call, a value per round
            for _ in range(a.rounds):
                order = list(paths)
                random.shuffle(order)
                for name in order:
                    before = cpu_seconds(pids[name])
                    samples[name] += timed_calls(paths[name], a.calls)
                    cpu[name].append((cpu_seconds(pids[name]) - before) / a.calls)
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGINT)
            for proc in procs:
                proc.wait(10)
        records = sum(1 for _ in Reader(Path(tmp) / "mcptape.mcptape"))
    median = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    added = {name: median[name] - median["direct"] for name in paths if name != "direct"}
    call = f"start_thread with {a.text_bytes} bytes of text" if a.text_bytes else "add"
    print(f"{a.rounds} interleaved rounds x {a.calls} calls per path; tools/call {call} over SSE, median latency")
    for name in paths:
        extra = f"  (+{added[name]:.3f} ms over direct)" if name in added else ""
        print(f"  {name:9} {median[name]:7.3f} ms{extra}")
    print(f"  ratio mcptape/mitmdump added latency: {added['mcptape'] / added['mitmdump']:.2f} with redaction, "
          f"{added['no-redact'] / added['mitmdump']:.2f} with --no-redact  (goal <= 1.00)"
          + (f"; before ({a.before}): {added['before'] / added['mitmdump']:.2f}" if a.before else ""))
    cpu_us = {name: sum(values) / len(values) * 1e6 for name, values in cpu.items()}
    print(f"  CPU per call, each process: " + "   ".join(f"{name} {us:.0f} us" for name, us in cpu_us.items()) +
          f"; mcptape/mitmdump {cpu_us['mcptape'] / cpu_us['mitmdump']:.2f} with redaction, "
          f"{cpu_us['no-redact'] / cpu_us['mitmdump']:.2f} with --no-redact"
          + (f", before {cpu_us['before'] / cpu_us['mitmdump']:.2f}" if a.before else ""))
    print(f"  tape: {records} records")
    figures.update(rounds=a.rounds, calls=a.calls, direct_ms=median["direct"], records=records,
                   **{f"{name.replace('-', '_')}_added_ms": ms for name, ms in added.items()},
                   ratio=added["mcptape"] / added["mitmdump"], ratio_no_redact=added["no-redact"] / added["mitmdump"],
                   **{f"{name.replace('-', '_')}_cpu_us": us for name, us in cpu_us.items()})
    figures.emit()


if __name__ == "__main__":
    main()
