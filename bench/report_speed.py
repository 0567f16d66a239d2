"""Speed of `mcptape report` on a large generated tape, each format, against `mcptape check` of the same tape in
the same rounds (the report is a check pass with a watcher beside the rules, then the layout).

    .venv/bin/python bench/report_speed.py [--records 100000] [--rounds 3] [--json]

Goal: a report of a 100,000-record tape in under 3 s, start to finish (the process included), in every format.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from check_speed import generate  # noqa: E402  (the same session-era tape check_speed reads)
from figures import Figures, add_flag  # noqa: E402

FORMATS = ("md", "html", "json", "mermaid")


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=3)
    add_flag(p)
    a = p.parse_args()
    figures = Figures(a.json)
    mcptape = str(Path(sys.executable).parent / "mcptape")
    import mcptape as package

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(package.__file__).parent)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        tape = Path(tmp) / "big.mcptape"
        count = generate(tape, a.records // 5)
        times: dict[str, list[float]] = {"check": [], **{f: [] for f in FORMATS}}
        for _ in range(a.rounds):
            times["check"].append(timed([mcptape, "check", str(tape), "--fail-on", "never"]))
            for fmt in FORMATS:
                times[fmt].append(timed([mcptape, "report", str(tape), "--format", fmt, "--force", "-o",
                                         str(Path(tmp) / f"report.{fmt}")]))  # (each round replaces the last's)
        sizes = {fmt: (Path(tmp) / f"report.{fmt}").stat().st_size for fmt in FORMATS}
        check = statistics.median(times["check"])
        print(f"report of {count:,} records ({tape.stat().st_size / 1e6:.0f} MB, {a.records // 5:,} calls); "
              f"medians of {a.rounds} rounds, each a fresh process")
        print(f"  mcptape check      {check:6.2f} s")
        for fmt in FORMATS:
            took = statistics.median(times[fmt])
            print(f"  report --format {fmt:7} {took:6.2f} s  {took / check:4.2f}x check  {sizes[fmt] / 1e3:8.0f} KB"
                  f"  {'ok' if took < 3 else 'OVER'} (goal < 3 s)")
            figures[f"{fmt}_s"] = took
        figures.update(records=count, rounds=a.rounds, check_s=check)
    figures.emit()


if __name__ == "__main__":
    main()
