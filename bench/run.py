"""Every benchmark in one run, each figure beside its baseline measured in the same run, as one Markdown table.

    bench/run [--quick] [--only NAME ...] [--write-docs] [--list]
    .venv/bin/python bench/run.py …           (the same, in a venv you made: bench/run makes .venv itself)

Each benchmark is a script in bench/ run as a subprocess of this interpreter with `--json`: its human lines go to
stderr (shown here as it runs), its figures come back as one JSON object. The baselines come along: bare mitmdump
(installed with mcptape), the SDK server and client (the test extra), and mcp-cassette, installed on first use into
a venv of its own (competitor.py). `--quick` runs every script small: a check that all of it works, not figures to
quote (the goals are set for the full sizes). `--write-docs` (also `--write-readme`, its old name) puts the table
and the machine it ran on into docs/benchmarks.md between its benchmark markers.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import competitor

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "benchmarks.md"
BEGIN = "<!-- bench:begin: written by `bench/run --write-docs`, not by hand -->"
END = "<!-- bench:end -->"


@dataclass
class Row:
    figure: str
    mcptape: str
    baseline: str = "—"
    ratio: float | None = None
    goal: str = "—"
    met: bool | None = None  # None: no goal
    note: str = ""  # why a row was not measured

    def cells(self) -> list[str]:
        met = self.note or {True: "yes", False: "**not met**", None: "—"}[self.met]
        ratio = "—" if self.ratio is None else f"{self.ratio:.2f}×"
        return [self.figure, self.mcptape, self.baseline, ratio, self.goal, met]


@dataclass
class Bench:
    name: str
    script: str
    full: list[str]
    quick: list[str]
    rows: Callable[[dict], list[Row]]
    what: str


def rounds(n: int) -> str:
    return f"{n} round{'s' if n != 1 else ''}"


def record_rows(f: dict) -> list[Row]:
    base = f"mitmdump +{f['mitmdump_added_ms']:.2f} ms (direct {f['direct_ms']:.2f} ms)"
    head = f"record: added latency per `tools/call` over SSE ({rounds(f['rounds'])} × {f['calls']})"
    return [Row(head, f"+{f['mcptape_added_ms']:.2f} ms", base, f["ratio"], "≤ 1.00×", f["ratio"] <= 1.00),
            Row("record `--no-redact`: the same", f"+{f['no_redact_added_ms']:.2f} ms", base, f["ratio_no_redact"],
                "≤ 1.10×", f["ratio_no_redact"] <= 1.10)]


def load_rows(f: dict) -> list[Row]:
    rows = []
    for p in ("p50", "p99"):
        added = {n: f[f"{n}_{p}_ms"] - f[f"direct_{p}_ms"] for n in ("mcptape", "mitmdump")}
        # a ratio only means something when both proxies measurably added latency
        ratio = added["mcptape"] / added["mitmdump"] if min(added.values()) > 0 else None
        p99 = p == "p99"  # the goal is the tail's
        rows.append(Row(f"record under load ({f['clients']} SDK clients, {f['seconds']:g} s in {f.get('slices', 1)} "
                        f"interleaved slices): added latency {p}", f"{added['mcptape']:+.2f} ms",
                        f"mitmdump {added['mitmdump']:+.2f} ms (direct {p} {f[f'direct_{p}_ms']:.2f} ms)", ratio,
                        "≤ 1.2×" if p99 else "—", (ratio is not None and ratio <= 1.2) if p99 else None))
    rows.append(Row("record under load: the tape against what each client saw",
                    f"{f['compared']:,} calls, {f['problems']} problems", goal="0 lost, duplicated or reordered",
                    met=f["problems"] == 0))
    delay = {n: f"{f[f'stream_{n}_p50_ms']:.2f} / {f[f'stream_{n}_p99_ms']:.2f} ms"
             for n in ("mcptape", "mitmdump", "direct")}
    events = f["stream_mcptape_events"]
    rows.append(Row(f"one SSE stream, {f['events']:,} events at {f['rate']:g}/s: delay per event p50 / p99",
                    f"{delay['mcptape']} ({events:,} events)",
                    f"direct {delay['direct']}; mitmdump {delay['mitmdump']}",
                    goal=f"all {f['events']:,} events through", met=events == f["events"]))
    growth = f["rss_end_mb"] - f["rss_start_mb"]
    rows.append(Row("recorder memory over that stream", f"{f['rss_start_mb']:.0f} → {f['rss_end_mb']:.0f} MB",
                    goal="flat (grows < 10 MB)", met=growth < 10))
    return rows


def replay_rows(f: dict) -> list[Row]:
    size = f"{rounds(f['rounds'])} × {f['calls']:,}"
    has = "mcp_cassette_rps" in f
    start_ratio = f["mcptape_start_ms"] / f["mcp_cassette_start_ms"] if has else None

    def theirs(key: str, fmt: str) -> str:
        return f"mcp-cassette {fmt.format(f[key])}" if has else "mcp-cassette: not run"

    return [Row(f"replay throughput, `tools/call` over keep-alive ({size})", f"{f['mcptape_rps']:,.0f} req/s",
                f"SDK server {f['sdk_rps']:,.0f} req/s", f["mcptape_rps"] / f["sdk_rps"], "≥ 10×",
                f["mcptape_rps"] / f["sdk_rps"] >= 10),
            Row("replay throughput against mcp-cassette", f"{f['mcptape_rps']:,.0f} req/s",
                theirs("mcp_cassette_rps", "{:,.0f} req/s"), f["mcptape_rps"] / f["mcp_cassette_rps"] if has else None),
            Row("replay server CPU per call", f"{f['mcptape_cpu_us']:.0f} µs",
                f"{theirs('mcp_cassette_cpu_us', '{:.0f} µs')}; SDK server {f['sdk_cpu_us']:.0f} µs",
                f["mcptape_cpu_us"] / f["mcp_cassette_cpu_us"] if has else None, "≤ 150 µs",
                f["mcptape_cpu_us"] <= 150),
            Row("replay start to first answered request", f"{f['mcptape_start_ms']:.0f} ms",
                theirs("mcp_cassette_start_ms", "{:.0f} ms"), start_ratio, "≤ 150 ms and ≤ 0.40×",
                f["mcptape_start_ms"] <= 150 and (start_ratio is None or start_ratio <= 0.40))]


def pytest_rows(f: dict) -> list[Row]:
    has = "mcp_cassette_fixture_ms" in f
    ours = f["mcptape_fixture_over_plain_ms"]
    ratio = ours / f["mcp_cassette_fixture_over_plain_ms"] if has else None
    return [Row(f"pytest fixture per test over a plain test ({rounds(f['rounds'])} × {f['tests']} tests)",
                f"{ours:.2f} ms", (f"mcp-cassette {f['mcp_cassette_fixture_over_plain_ms']:.2f} ms" if has else
                                   "mcp-cassette: not run") + f" (plain test {f['plain_ms']:.2f} ms)",
                ratio, "≤ 10 ms and ≤ 0.5×", ours <= 10 and (ratio is None or ratio <= 0.5)),
            Row("pytest test driving the recorded session", f"{f['mcptape_session_ms']:.2f} ms",
                f"mcp-cassette {f['mcp_cassette_session_ms']:.2f} ms" if has else "mcp-cassette: not run",
                f["mcptape_session_ms"] / f["mcp_cassette_session_ms"] if has else None),
            Row("pytest plugin load (its import, pytest loaded)", f"{f['import_ms']:.2f} ms",
                f"{f['tests']} plain tests, with it vs `-p no:mcptape`: {f['suite_load_ms']:+.0f} ms CPU (runs "
                f"spread {f['suite_spread_ms']:.0f} ms)", goal="≤ 5 ms", met=f["import_ms"] <= 5)]


def stdio_rows(f: dict) -> list[Row]:
    flow = {path: f[f"long_line_{path}_flow_s"] for path in ("direct", "mcptape")}
    return [Row(f"stdio relay `record -- CMD`, {pattern} ({rounds(f['rounds'])} × {f['messages']:,}, from the first "
                "answer)", f"{f[f'{key}_mcptape']:,.0f} msg/s", f"direct pipe {f[f'{key}_direct']:,.0f} msg/s",
                f[f"{key}_ratio"], f"≥ {goal:.2f}×", f[f"{key}_ratio"] >= goal)
            for pattern, key, goal in (("ping-pong", "ping_pong", 0.70), ("pipelined", "pipelined", 0.85))] + [
        Row("stdio relay: start to the first answer", f"{f['start_mcptape_ms']:.0f} ms",
            f"direct {f['start_direct_ms']:.0f} ms"),
        Row("stdio relay: one 100 MB line without a newline, from its first byte; wrapper and server peak",
            f"{flow['mcptape']:.2f} s; {f['long_line_peak_mb']:.0f} MB", f"direct pipe {flow['direct']:.2f} s",
            flow["mcptape"] / flow["direct"], "≤ 2× and < 200 MB",
            flow["mcptape"] <= 2 * flow["direct"] and f["long_line_peak_mb"] < 200)]


def check_rows(f: dict) -> list[Row]:
    flat = f["check_mb"] - f["small_mb"] < 10 and f["ids_mb"] - f["ids_small_mb"] < 10
    return [Row(f"check of {f['records']:,} records ({rounds(f['rounds'])})", f"{f['check_rps']:,.0f} rec/s",
                f"plain msgpack read {f['plain_rps']:,.0f} rec/s",
                f["ratio"], "≥ 0.55×", f["ratio"] >= 0.55),
            Row("check `--requirements` (the verdict table) of the same records",
                f"{f['requirements_rps']:,.0f} rec/s", "plain msgpack read", f["requirements_ratio"], "≥ 0.35×",
                f["requirements_ratio"] >= 0.35),
            Row("check peak memory at ¼ and at all of those records",
                f"{f['small_mb']} → {f['check_mb']} MB; ids kept: {f['ids_small_mb']} → {f['ids_mb']} MB",
                goal="flat (grows < 10 MB at 4× the records)", met=flat),
            Row(f"diff of two {f['diff_calls']:,}-call tapes", f"{f['diff_s']:.2f} s", goal="< 2 s",
                met=f["diff_s"] < 2)]


def report_rows(f: dict) -> list[Row]:
    return [Row(f"report `--format {fmt}` of {f['records']:,} records", f"{f[f'{fmt}_s']:.2f} s",
                f"check of the same tape {f['check_s']:.2f} s", f[f"{fmt}_s"] / f["check_s"], "< 3 s",
                f[f"{fmt}_s"] < 3) for fmt in ("md", "html", "json", "mermaid")]


def verify_rows(f: dict) -> list[Row]:
    return [Row(f"verify of a {f['calls']:,}-call tape ({rounds(f['rounds'])})", f"{f['verify_s']:.2f} s",
                f"SDK client, same calls {f['client_s']:.2f} s", f["ratio"], "≤ 1.2×", f["ratio"] <= 1.2)]


def gauntlet_rows(f: dict) -> list[Row]:
    """bench/gauntlet_speed.py --json gives j1_s and j2_s (seconds for the whole gauntlet), runs, and
    runs_per_minute when it measures the mix of faults."""
    ratio = f["j2_s"] / f["j1_s"]
    rows = [Row(f"gauntlet of {f.get('runs', '?')} runs that mostly wait, `-j 2`", f"{f['j2_s']:.1f} s",
                f"`-j 1` {f['j1_s']:.1f} s", ratio, "≤ 0.6×", ratio <= 0.6)]
    if "runs_per_minute" in f:
        rows.append(Row("gauntlet runs per minute, a mix of faults", f"{f['runs_per_minute']:.0f}"))
    return rows


BENCHES = [
    Bench("record", "record_latency.py", [], ["--rounds", "3", "--calls", "20"], record_rows,
          "added latency of `mcptape record` vs bare mitmdump vs direct"),
    Bench("load", "load.py", [], ["--seconds", "3", "--slices", "1", "--events", "2000", "--rate", "1000"], load_rows,
          "50 SDK clients and one long SSE stream through the recorder vs bare mitmdump vs direct"),
    Bench("replay", "replay_speed.py", ["--cassette", "auto"],
          ["--cassette", "auto", "--calls", "300", "--rounds", "2"], replay_rows,
          "replay vs the SDK server and mcp-cassette: throughput, CPU per call, start time"),
    Bench("pytest", "pytest_plugin.py", [], ["--tests", "30", "--rounds", "1"], pytest_rows,
          "the pytest fixture per test vs mcp-cassette's; the plugin's load cost"),
    Bench("stdio", "stdio_relay.py", [], ["--messages", "1000", "--rounds", "2"], stdio_rows,
          "messages/s through `mcptape record -- CMD` vs a direct pipe"),
    Bench("check", "check_speed.py", [], ["--records", "100000", "--rounds", "2", "--diff-calls", "5000"],
          check_rows, "check vs a plain msgpack read; check's memory; diff time"),
    Bench("report", "report_speed.py", [], ["--records", "20000", "--rounds", "1"], report_rows,
          "report of a 100,000-record tape, each format, vs check of it"),
    Bench("verify", "verify_speed.py", [], ["--calls", "200", "--rounds", "1"], verify_rows,
          "verify of a 2,000-call tape vs a plain SDK client making the same calls"),
    Bench("gauntlet", "gauntlet_speed.py", [], [], gauntlet_rows, "the gauntlet with -j 2 vs -j 1"),
]


def run_bench(bench: Bench, quick: bool, timeout: float) -> list[Row]:
    """Run one script and turn its figures into rows; a bench that cannot give figures is one row saying why."""
    script = HERE / bench.script
    if not script.exists():
        return [Row(bench.what, "—", note="not run (script missing)")]
    print(f"== {bench.name}: {bench.script} ==", file=sys.stderr, flush=True)
    argv = [sys.executable, str(script), *(bench.quick if quick else bench.full), "--json"]
    try:
        out = subprocess.run(argv, cwd=HERE.parent, stdout=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [Row(bench.what, "—", note=f"not run (timed out after {timeout:.0f} s)")]
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return [Row(bench.what, "—", note=f"not run ({bench.script} exited {out.returncode})")]
    try:
        return bench.rows(json.loads(lines[-1]))
    except KeyError as e:
        return [Row(bench.what, "—", note=f"not run (no figure {e} in its output)")]
    except (ValueError, TypeError, ZeroDivisionError) as e:
        return [Row(bench.what, "—", note=f"not run (its output: {e})")]


def table(rows: list[Row]) -> str:
    head = ["figure", "mcptape", "baseline (same run)", "ratio", "goal", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine(quick: bool, began: datetime.datetime, load: float, took: float) -> str:
    """One line: where, when and with what the table was measured."""
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "unknown CPU")
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE, capture_output=True, text=True)
    when = began.strftime("%Y-%m-%d %H:%M UTC")
    return (f"{'Quick pass (small sizes: a check that it runs, not figures to quote)' if quick else 'Full run'}, "
            f"{when}, {took / 60:.0f} min; {os.cpu_count()} cores ({model}), load average {load:.1f} at the start; "
            f"Linux {platform.release()}; Python {platform.python_version()}, mitmproxy {version('mitmproxy')}, "
            f"mcp {version('mcp')}, mcp-cassette {competitor.version() or 'not installed'}; mcptape "
            f"{commit.stdout.strip() or version('mcptape')}.")


def write_doc(text: str, doc: Path = DOC) -> None:
    """Replace what stands between the benchmark markers with `text`."""
    old = doc.read_text()
    found = re.search(re.escape(BEGIN) + r".*?" + re.escape(END), old, re.S)
    if not found:
        raise SystemExit(f"bench/run: no benchmark markers in {doc} ({BEGIN} … {END})")
    doc.write_text(old[:found.start()] + f"{BEGIN}\n{text}\n{END}" + old[found.end():])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="every benchmark small: checks that all of it runs")
    p.add_argument("--only", action="append", metavar="NAME", choices=[b.name for b in BENCHES],
                   help="run only this benchmark (repeatable): " + ", ".join(b.name for b in BENCHES))
    p.add_argument("--write-docs", "--write-readme", dest="write_doc", action="store_true",
                   help="put the table into docs/benchmarks.md between its markers")
    p.add_argument("--timeout", type=float, default=3600, help="seconds one benchmark may take (default 3600)")
    p.add_argument("--list", action="store_true", help="list the benchmarks and what each measures")
    a = p.parse_args()
    if a.list:
        for b in BENCHES:
            print(f"{b.name:9} bench/{b.script:20} {b.what}")
        return
    if a.write_doc and a.only:
        p.error("--write-docs writes the whole table: drop --only")
    began, load, start = datetime.datetime.now(datetime.timezone.utc), os.getloadavg()[0], time.monotonic()
    rows = [row for b in BENCHES if not a.only or b.name in a.only for row in run_bench(b, a.quick, a.timeout)]
    text = f"{machine(a.quick, began, load, time.monotonic() - start)}\n\n{table(rows)}"
    print(text)
    if a.write_doc:
        write_doc(text)
        print(f"bench/run: written into {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
