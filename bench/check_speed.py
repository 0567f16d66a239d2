"""Speed and memory of `mcptape check` and `mcptape diff` on large generated tapes.

    .venv/bin/python bench/check_speed.py [--records 1000000] [--rounds 5] [--diff-calls 50000] [--json]

check: records/s and peak memory (max RSS of a fresh process) against a plain msgpack read of the same file
(frames split, payloads unpacked, nothing else), in --rounds interleaved rounds (this machine's speed swings by a
quarter between minutes, so one pair of runs can say anything: the ratio is taken within each round, and the median
and range of the rounds are reported); and check's peak memory on a tape a quarter the size, to show it stays flat,
also when every result hands out an id the dead-id rule must remember. Goals: check >= 0.55x the plain read's speed,
check --requirements (the verdict table) >= 0.35x, memory flat in tape size.
diff: wall time on two tapes of --diff-calls calls each that differ in one result in a thousand, the median of up to
three runs. Goal: < 2 s.
It says whether it measured the compiled core (docs/compiled.md): MCPTAPE_COMPILED=1 bench/run measures that one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from figures import Figures, add_flag
from mcptape.tape import records
from mcptape.tape.file import Writer

PLAIN_READ = """
import struct, sys, msgpack
n = 0
with open(sys.argv[1], "rb") as f:
    f.read(8)
    while head := f.read(12):
        length = struct.unpack(">I", head[:4])[0]
        msgpack.unpackb(f.read(length), raw=False, strict_map_key=False)
        n += 1
print(n)
"""
MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
out = subprocess.run(sys.argv[1:], capture_output=True, text=True)
elapsed = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(elapsed, rss, out.returncode, out.stdout[-200:].replace(chr(10), " "), sep="\\t")
"""


def generate(path: Path, calls: int, vary: int = 0, ids: bool = False) -> int:
    """A session-era Streamable HTTP session: each call is request, SSE head, progress, result, end. With `ids`,
    every result hands out an id of its own (a thread id), as many real tools do."""
    t = 1_700_000_000.0
    count = 0
    with Writer(path, records.header(t, "bench")) as w:
        def put(record: dict) -> None:
            nonlocal count
            w.write(record)
            count += 1

        put(records.capture_start(t, "bench", {"proxy": "bench"}, {}))
        for i in range(calls):
            t += 0.001
            session = "0123456789abcdef0123456789abcdef"
            msg = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                   "params": {"name": "add", "arguments": {"a": i, "b": 1}, "_meta": {"progressToken": i + 1}}}
            if i == 0:
                msg = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
            put(records.http_request(t, i, 0, "POST", "/mcp", [], [["content-type", "application/json"],
                    ["accept", "application/json, text/event-stream"],
                    ["mcp-session-id", session], ["mcp-protocol-version", "2025-11-25"]],
                    session if i else None, "2025-11-25" if i else None, True, {"msg": msg}))
            put(records.http_response(t, i, 200, "OK", [["content-type", "text/event-stream"],
                                                        ["mcp-session-id", session]], session, {}))
            if i:
                put({"kind": "sse.event", "t": t, "exchange": i, "dir": "s2c", "event": "message", "msg": {
                    "jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": i + 1, "progress": 1, "total": 1}}})
            value = i + 1 + (1 if vary and i % vary == 0 else 0)
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "bench", "version": "1"}} if i == 0 else \
                {"content": [{"type": "text", "text": str(value)}], "structuredContent": {"result": value}}
            if ids and i:
                thread = str(uuid.UUID(int=i))
                result = {"content": [{"type": "text", "text": f"opened thread {thread}"}],
                          "structuredContent": {"thread_id": thread}}
            put({"kind": "sse.event", "t": t, "exchange": i, "dir": "s2c", "event": "message",
                 "msg": {"jsonrpc": "2.0", "id": msg["id"], "result": result}})
            put(records.end(t, i, "complete"))
            if i == 0:  # the client is ready: notifications/initialized, answered 202
                n = calls + 1
                put(records.http_request(t, n, 0, "POST", "/mcp", [], [["content-type", "application/json"],
                        ["accept", "application/json, text/event-stream"], ["mcp-session-id", session],
                        ["mcp-protocol-version", "2025-11-25"]], session, "2025-11-25", True,
                        {"msg": {"jsonrpc": "2.0", "method": "notifications/initialized"}}))
                put(records.http_response(t, n, 202, "Accepted", [], session, {}))
                put(records.end(t, n, "complete"))
    return count


def measure(argv: list[str]) -> tuple[float, int, str]:
    out = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, check=True).stdout
    elapsed, rss, code, tail = out.rstrip("\n").split("\t", 3)
    return float(elapsed), int(rss) // 1024, tail


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--diff-calls", type=int, default=50_000)
    add_flag(p)
    a = p.parse_args()
    figures = Figures(a.json)
    mcptape = str(Path(sys.executable).parent / "mcptape")
    # An installed mcptape has its bytecode compiled (pip does it); an editable checkout under
    # PYTHONDONTWRITEBYTECODE would compile every module at every start, which no user pays.
    import mcptape as package
    from mcptape import model

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(package.__file__).parent)], check=True)
    compiled = Path(model.__file__).suffix != ".py"  # the core mypyc compiles (docs/compiled.md)
    print("core: compiled (mypyc)" if compiled else
          "core: pure Python (the compiled one, as a wheel ships it: MCPTAPE_COMPILED=1 bench/run; docs/compiled.md)")
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big.mcptape", Path(tmp) / "small.mcptape"
        n_big = generate(big, a.records // 5)
        n_small = generate(small, a.records // 20)
        plain_s, check_s, ratios, table_s, table_ratios = [], [], [], [], []
        for _ in range(a.rounds):
            plain = measure([sys.executable, "-c", PLAIN_READ, str(big)])
            check = measure([mcptape, "check", str(big), "--fail-on", "never"])
            table = measure([mcptape, "check", str(big), "--fail-on", "never", "--requirements"])
            plain_s.append(plain[0])
            check_s.append(check[0])
            table_s.append(table[0])
            ratios.append(plain[0] / check[0])
            table_ratios.append(plain[0] / table[0])
        plain_mb, (check_mb, tail) = plain[1], check[1:]
        _, small_mb, _ = measure([mcptape, "check", str(small), "--fail-on", "never"])
        print(f"check on {n_big:,} records ({big.stat().st_size / 1e6:.0f} MB): {tail.strip()}; "
              f"{a.rounds} interleaved rounds, medians")
        print(f"  plain msgpack read {n_big / statistics.median(plain_s):12,.0f} records/s  peak {plain_mb} MB")
        print(f"  mcptape check      {n_big / statistics.median(check_s):12,.0f} records/s  peak {check_mb} MB   "
              f"ratio {statistics.median(ratios):.2f} (rounds {min(ratios):.2f}-{max(ratios):.2f}; goal >= 0.55)")
        print(f"  check --requirements {n_big / statistics.median(table_s):10,.0f} records/s  peak {table[1]} MB   "
              f"ratio {statistics.median(table_ratios):.2f} (rounds {min(table_ratios):.2f}-{max(table_ratios):.2f}; "
              f"goal >= 0.35)")
        print(f"  check peak memory on {n_small:,} records: {small_mb} MB (flat: {check_mb} MB at 4x the records)")
        with_ids = Path(tmp) / "ids-small.mcptape", Path(tmp) / "ids-big.mcptape"
        for tape, calls in zip(with_ids, (a.records // 20, a.records // 5)):
            generate(tape, calls, ids=True)
        ids_mb = [measure([mcptape, "check", str(tape), "--fail-on", "never"])[1] for tape in with_ids]
        print(f"  the same when every result hands out a thread id: {ids_mb[0]} MB, and {ids_mb[1]} MB at 4x")
        figures.update(compiled=compiled, rounds=a.rounds, records=n_big, small_records=n_small,
                       plain_rps=n_big / statistics.median(plain_s), check_rps=n_big / statistics.median(check_s),
                       ratio=statistics.median(ratios), ratio_min=min(ratios), ratio_max=max(ratios),
                       requirements_ratio=statistics.median(table_ratios),
                       requirements_rps=n_big / statistics.median(table_s),
                       check_mb=check_mb, small_mb=small_mb, ids_small_mb=ids_mb[0], ids_mb=ids_mb[1])
        da, db = Path(tmp) / "a.mcptape", Path(tmp) / "b.mcptape"
        generate(da, a.diff_calls)
        generate(db, a.diff_calls, vary=1000)
        times = []
        for _ in range(min(a.rounds, 3)):
            start = time.perf_counter()
            out = subprocess.run([mcptape, "diff", str(da), str(db), "--format", "json"], capture_output=True,
                                 text=True)
            times.append(time.perf_counter() - start)
        elapsed = statistics.median(times)
        found = json.loads(out.stdout)["summary"]["differences"]
        print(f"diff on two {a.diff_calls:,}-call tapes: {elapsed:.2f} s (median of {len(times)}), {found} "
              f"differences (goal < 2 s)")
        figures.update(diff_calls=a.diff_calls, diff_s=elapsed, diff_found=found)
    figures.emit()


if __name__ == "__main__":
    main()
