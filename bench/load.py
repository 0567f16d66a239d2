"""The recorder under load, against bare mitmdump under the same load, measured in the same run.

    .venv/bin/python bench/load.py [--clients 50] [--seconds 20] [--slices 2] [--events 20000] [--rate 2000]

1. `--clients` official SDK clients at once, each in its own session, calling `add` and `countdown` (with progress)
   for `--seconds` directly, through bare `mitmdump --mode reverse:…` and through `mcptape record`, in interleaved
   slices (`--slices`, the order rotating), in front of one demo SDK server: p50/p99 of each client call's latency
   per path, and mcptape's added latency over mitmdump's (both against a direct run). Each slice's tape is compared
   with what its clients saw (tests/load.py).
2. One SSE stream of `--events` events at `--rate` a second (tests/sse_flood.py), read directly, through bare
   mitmdump and through mcptape record: each event's pass-through delay (server write -> client read), p50/p99,
   and the recorder's memory at the start and the end of the stream.

Never run in CI; never a pass/fail. The figures swing with whatever else the machine is doing.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from figures import Figures, add_flag  # noqa: E402
from tests import load  # noqa: E402  (the harness the reliability tests use)
from tests.conftest import free_port, spawn_demo, start_recording, stop, wait_for_port  # noqa: E402

BIN = Path(sys.executable).parent


def mitmdump(upstream_port: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([str(BIN / "mitmdump"), "-q", "--listen-host", "127.0.0.1", "-p", str(port), "--mode",
                             f"reverse:http://127.0.0.1:{upstream_port}", "--set", "stream_large_bodies=1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, proc)
    return proc, f"http://127.0.0.1:{port}/mcp"


def pct(values: list[float], p: float) -> float:
    return load.percentile(values, p) * 1000 if values else float("nan")


def clients_load(args: argparse.Namespace, tmp: Path) -> dict:
    """The three paths in `--slices` interleaved slices (the order rotating), so drift in what else the machine does
    falls on all three alike; a tape of its own per slice, each compared with what its clients saw."""
    port = free_port()
    server = spawn_demo(port)
    direct = f"http://127.0.0.1:{port}/mcp"
    latencies: dict[str, list[float]] = {"direct": [], "mitmdump": [], "mcptape": []}
    seconds = args.seconds / args.slices
    compared, problems = 0, []
    dump, url = mitmdump(port)
    try:
        for i in range(args.slices):
            order = list(latencies)[i % 3:] + list(latencies)[:i % 3]
            for name in order:
                if name == "mcptape":
                    rec = start_recording(direct, tmp / f"load-{i}.mcptape")
                    runs = anyio.run(load.many_clients, rec.url, args.clients, seconds)
                    rec.stop()
                    checked = load.compare(runs, load.tape_calls(str(rec.tape)))
                    compared, problems = compared + checked.compared, problems + checked.problems
                else:
                    runs = anyio.run(load.many_clients, direct if name == "direct" else url, args.clients, seconds)
                latencies[name] += [x for r in runs for x in r.latencies]
    finally:
        stop(dump)
        stop(server)
    print(f"{args.clients} SDK clients for {args.seconds:g} s each path, in {args.slices} interleaved slices (calls, "
          "p50 ms, p99 ms):")
    for name, values in latencies.items():
        print(f"  {name:9} {len(values):6}  {pct(values, .5):7.2f}  {pct(values, .99):7.2f}")
    for p, label in ((.5, "p50"), (.99, "p99")):
        added = {n: pct(latencies[n], p) - pct(latencies["direct"], p) for n in ("mitmdump", "mcptape")}
        print(f"  added {label}: mitmdump {added['mitmdump']:.2f} ms, mcptape {added['mcptape']:.2f} ms "
              f"({added['mcptape'] / added['mitmdump']:.2f}x mitmdump's)" if added["mitmdump"] > 0 else "")
    print(f"  tape vs clients: {compared} calls compared, {len(problems)} problems"
          + (f": {problems[0]}" if problems else ""))
    return {"clients": args.clients, "seconds": args.seconds, "slices": args.slices, "compared": compared,
            "problems": len(problems),
            **{f"{name}_{label}_ms": pct(values, p) for name, values in latencies.items()
               for p, label in ((.5, "p50"), (.99, "p99"))}}


def stream_load(args: argparse.Namespace, tmp: Path) -> dict:
    flood = subprocess.Popen([sys.executable, "-m", "tests.sse_flood", str(args.events), str(args.rate)],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        port = int(flood.stdout.readline())
        upstream = f"http://127.0.0.1:{port}/mcp"
        delays = {"direct": load.stream_delays(upstream)[0]}
        dump, url = mitmdump(port)
        delays["mitmdump"] = load.stream_delays(url)[0]
        stop(dump)
        rec = start_recording(upstream, tmp / "stream.mcptape")
        sampler = load.RssSampler(rec.proc.pid)
        delays["mcptape"] = load.stream_delays(rec.url)[0]
        memory = sampler.stop()
        rec.stop()
    finally:
        stop(flood, signal.SIGKILL)
    print(f"one SSE stream, {args.events} events at {args.rate:g}/s (events, delay p50 ms, p99 ms):")
    for name, values in delays.items():
        print(f"  {name:9} {len(values):6}  {load.percentile(values, .5):7.2f}  {load.percentile(values, .99):7.2f}")
    print(f"  recorder RSS {memory[0] // 1024} MB once streaming -> {memory[1] // 1024} MB at the end")
    return {"events": args.events, "rate": args.rate, "rss_start_mb": memory[0] / 1024, "rss_end_mb": memory[1] / 1024,
            **{f"stream_{name}_events": len(values) for name, values in delays.items()},
            **{f"stream_{name}_{label}_ms": load.percentile(values, p) for name, values in delays.items()
               for p, label in ((.5, "p50"), (.99, "p99"))}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--slices", type=int, default=2, help="interleaved slices of the clients' run per path (each "
                   "needs a few seconds: the clients' sessions start within it)")
    p.add_argument("--events", type=int, default=20_000)
    p.add_argument("--rate", type=float, default=2_000)
    add_flag(p)
    args = p.parse_args()
    figures = Figures(args.json)
    with tempfile.TemporaryDirectory() as tmp:
        figures.update(clients_load(args, Path(tmp)))
        figures.update(stream_load(args, Path(tmp)))
    figures.emit()


if __name__ == "__main__":
    main()
