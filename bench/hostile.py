"""Hostile inputs (tests/hostile_inputs.py) through each command: time and peak resident memory, sampled.

    .venv/bin/python bench/hostile.py [--json]

Each command must refuse the input in one line or finish; goals: under 300 MB peak (tests/test_bounded.py holds
that) and under 5 s (this script only reports it: the machine's load decides seconds).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from figures import Figures, add_flag

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests import hostile_inputs as hostile  # noqa: E402

MCPTAPE = str(Path(sys.executable).parent / "mcptape")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_flag(p)
    a = p.parse_args()
    figures = Figures(a.json)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        inputs = {
            "48M empty arrays": hostile.amplification_tape(d / "amp.mcptape"),
            "25M nested arrays": hostile.nested_arrays_tape(d / "nested.mcptape"),
            "9,999-tape bundle": hostile.many_tapes_bundle(d / "many.zip"),
            "200:1 bundle": hostile.high_ratio_bundle(d / "ratio.zip"),
            "100,000 deep": hostile.deep_tape(d / "deep.mcptape"),
            "NaN time": hostile.wrong_type_tape(d / "nan.mcptape", "t-nan"),
            "status as text": hostile.wrong_type_tape(d / "status.mcptape", "status-text"),
        }
        commands = (["check"], ["report", "--format", "json"], ["show"], ["show", "--format", "json"])
        print(f"{'input':20} {'command':22} {'exit':>4} {'seconds':>8} {'peak MB':>8}")
        worst_s = worst_mb = 0.0
        for name, path in inputs.items():
            for command in commands:
                run = hostile.run_measured([MCPTAPE, command[0], str(path), *command[1:]], timeout=60)
                print(f"{name:20} {' '.join(command):22} {str(run.code):>4} {run.seconds:8.2f} {run.peak_mb:8.0f}")
                figures[f"{name} | {' '.join(command)}"] = {"seconds": run.seconds, "peak_mb": run.peak_mb,
                                                            "exit": run.code}
                worst_s, worst_mb = max(worst_s, run.seconds), max(worst_mb, run.peak_mb)
        for name, make in (("deep HAR", hostile.deep_har), ("deep flows", hostile.deep_flows),
                           ("deep JSON", hostile.deep_json_document)):
            run = hostile.run_measured([MCPTAPE, "import", str(make(d / name.replace(" ", "."))), "-o",
                                        str(d / "out.mcptape"), "--force"], timeout=60)
            print(f"{name:20} {'import':22} {str(run.code):>4} {run.seconds:8.2f} {run.peak_mb:8.0f}")
            figures[f"{name} | import"] = {"seconds": run.seconds, "peak_mb": run.peak_mb, "exit": run.code}
            worst_s, worst_mb = max(worst_s, run.seconds), max(worst_mb, run.peak_mb)
    print(f"worst: {worst_s:.2f} s (goal < 5), {worst_mb:.0f} MB (goal < 300)")
    figures.update(worst_seconds=worst_s, worst_peak_mb=worst_mb)
    figures.emit()


if __name__ == "__main__":
    main()
