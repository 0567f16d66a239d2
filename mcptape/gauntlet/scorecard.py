"""The gauntlet's scorecard: fault × position, one cell a run, a legend, a summary per fault, and for each failing
run the command that reproduces it. text for a terminal, md for GitHub, json for CI."""

from __future__ import annotations

import json
import shlex
from collections import Counter

from . import Result
from .runner import FAILED, HUNG, NOT_APPLICABLE, NOT_REACHED, RECOVERED, SURFACED, VERDICTS

LEGEND = {
    RECOVERED: "after the fault the client did what is expected, and the rest went as recorded",
    SURFACED: "the client reported an error and stopped, or went on without recovering; no protocol fault",
    FAILED: "a protocol fault of the client's, named (from `mcptape check` on the run's log)",
    HUNG: "not finished within the timeout; killed with everything it started",
    NOT_REACHED: "the client never sent the message the position selects: the fault never fired",
    NOT_APPLICABLE: "this fault cannot happen on this tape's era or the client's transport",
}


def _grid(result: Result) -> tuple[list[str], list[list[str]]]:
    by_cell = {(r.fault.name, r.at): r.verdict for r in result.runs}
    faults = list(dict.fromkeys(r.fault.name for r in result.runs))
    rows = [[name, *(by_cell.get((name, at), "") for at in result.positions)] for name in faults]
    return ["fault", *result.positions], rows


def _summaries(result: Result) -> list[tuple[str, str, str, str]]:
    """(fault, counts, what counts as recovered, its source)."""
    out = []
    for name in dict.fromkeys(r.fault.name for r in result.runs):
        runs = [r for r in result.runs if r.fault.name == name]
        counts = Counter(r.verdict for r in runs)
        said = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
        if counts[NOT_APPLICABLE] == len(runs):
            said = f"n/a: {runs[0].why}"
        out.append((name, said, runs[0].fault.recovered, runs[0].fault.source))
    return out


def _shown(fail_on: tuple[str, ...]) -> tuple[str, ...]:
    """The runs given a reproduction command: the failed and hung ones, and any other --fail-on names."""
    return tuple(dict.fromkeys((FAILED, HUNG, *fail_on)))


def client_command(result: Result) -> str:
    return shlex.join(result.command)


def text(result: Result, fail_on: tuple[str, ...]) -> str:
    header, rows = _grid(result)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [f"mcptape gauntlet: {result.tape}, client: {client_command(result)}", ""]
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    if result.left_out:
        lines.append(f"({result.left_out} more position(s) left out by --max-runs)")
    lines += ["", "legend:"] + [f"  {v:<12} {what}" for v, what in LEGEND.items()]
    lines += ["", "per fault:"]
    for name, said, recovered, source in _summaries(result):
        lines += [f"  {name}: {said}", f"    recovered means: {recovered}", f"    source: {source}"]
    failing = result.failing(_shown(fail_on))
    if failing:
        lines += ["", "failing runs (reproduce: serve the replay, then run the client against it):"]
        for run in failing:
            lines += [f"  {run.fault.name} at {run.at}: {run.verdict}: {run.why}",
                      f"    {result.reproduce(run)}"]
    lines += ["", _total(result, fail_on)]
    return "\n".join(lines) + "\n"


def markdown(result: Result, fail_on: tuple[str, ...]) -> str:
    header, rows = _grid(result)
    cell = {RECOVERED: "✅ recovered", SURFACED: "🟡 surfaced", FAILED: "❌ failed", HUNG: "⏳ hung",
            NOT_REACHED: "· not reached", NOT_APPLICABLE: "n/a"}
    out = [f"## mcptape gauntlet: `{result.tape}`", "", f"Client: `{client_command(result)}`", "",
           "| " + " | ".join(f"`{h}`" if i else h for i, h in enumerate(header)) + " |",
           "|" + "---|" * len(header)]
    for name, *verdicts in rows:
        out.append(f"| `{name}` | " + " | ".join(cell.get(v, v) for v in verdicts) + " |")
    if result.left_out:
        out += ["", f"{result.left_out} more position(s) left out by `--max-runs`."]
    out += ["", "| verdict | meaning |", "|---|---|"] + [f"| {cell[v]} | {what} |" for v, what in LEGEND.items()]
    out += ["", "### Per fault", "", "| fault | runs | recovered means | source |", "|---|---|---|---|"]
    out += [f"| `{n}` | {s} | {r} | {src} |" for n, s, r, src in _summaries(result)]
    failing = result.failing(_shown(fail_on))
    if failing:
        out += ["", "### Failing runs", ""]
        for run in failing:
            out += [f"- `{run.fault.name}` at `{run.at}`: **{run.verdict}**: {run.why}", "",
                    f"  ```sh\n  {result.reproduce(run)}\n  ```"]
    out += ["", _total(result, fail_on)]
    return "\n".join(out) + "\n"


def as_json(result: Result, fail_on: tuple[str, ...]) -> str:
    return json.dumps({
        "tape": result.tape, "command": result.command, "transport": "stdio" if result.stdio else "http",
        "timeout": result.timeout, "positions": result.positions, "left_out": result.left_out,
        "stopped": result.stopped, "fail_on": list(fail_on),
        "runs": [{**run.to_json(), **({"reproduce": result.reproduce(run)} if run.verdict in _shown(fail_on) else {})}
                 for run in result.runs],
        "summary": {name: {"runs": said, "recovered_means": rec, "source": src}
                    for name, said, rec, src in _summaries(result)},
    }, indent=2) + "\n"


def _total(result: Result, fail_on: tuple[str, ...]) -> str:
    counts = Counter(r.verdict for r in result.runs)
    said = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
    bad = len(result.failing(fail_on))
    return f"mcptape: {len(result.runs)} cell(s): {said}" + (f"; {bad} fail the gauntlet" if bad else "")


FORMATS = {"text": text, "md": markdown, "json": as_json}
