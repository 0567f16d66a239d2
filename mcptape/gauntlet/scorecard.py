"""The gauntlet's scorecard: fault × position, one cell a run, a legend, a summary per fault, and for each failing
run the command that reproduces it. text for a terminal, md for GitHub, json for CI."""

from __future__ import annotations

import json
import shlex
from collections import Counter

from . import Result
from .faults import BY_NAME
from .runner import ERROR, FAILED, HUNG, NOT_APPLICABLE, NOT_REACHED, RECOVERED, SURFACED, VERDICTS

LEGEND = {
    RECOVERED: "after the fault the client did what is expected, and the rest went as recorded",
    SURFACED: "the client reported an error and stopped, or went on without recovering; no protocol fault",
    FAILED: "a protocol fault of the client's that the fault caused, named (from `mcptape check` on the run's log; "
            "not one its clean run shows too, nor one resting on what mcptape injected that the fault is not about)",
    HUNG: "not finished within the timeout; killed with everything it started",
    NOT_REACHED: "the client never sent the message the position selects: the fault never fired",
    NOT_APPLICABLE: "this fault cannot happen on this tape's era or the client's transport",
    ERROR: "the client or the replay could not start, or mcptape failed: no verdict (the gauntlet exits 2)",
}
CELL = {RECOVERED: "✅ recovered", SURFACED: "🟡 surfaced", FAILED: "❌ failed", HUNG: "⏳ hung",
        NOT_REACHED: "· not reached", NOT_APPLICABLE: "n/a", ERROR: "⚠️ error"}


def _grid(result: Result) -> tuple[list[str], list[list[str]]]:
    by_cell = {(r.fault.name, r.at): r.verdict for r in result.runs}
    faults = list(dict.fromkeys(r.fault.name for r in result.runs))
    # a negotiation fault's one run is at the probe, a column of its own; a position no run is at has none
    ran = {r.at for r in result.runs}
    columns = [at for at in dict.fromkeys([*(r.at for r in result.runs if r.fault.probe), *result.positions])
               if at in ran]
    rows = [[name, *(by_cell.get((name, at), "") for at in columns)] for name in faults]
    return ["fault", *columns], rows


def _baseline(result: Result) -> list[str]:
    """The clean run, said once: how it ended, its own findings (not counted in any cell), its misses."""
    clean = result.baseline
    if clean is None:
        return []
    lines = [f"baseline (the client once with no fault): {clean.verdict}: {clean.why}"]
    if clean.findings:
        rules = Counter(f.rule for f in clean.findings)
        lines.append("  its own findings, not counted in any cell: "
                     + ", ".join(f"{rule} ×{n}" if n > 1 else rule for rule, n in rules.items()))
    lines += [f"  replay miss: {m}" for m in clean.misses[:5]]
    return lines


def _misses(result: Result) -> list[str]:
    """Every miss of the cells but those the baseline shows (said there), once, with the cells it happened in."""
    where: dict[str, list[str]] = {}
    said = set(result.baseline.misses) if result.baseline is not None else set()
    for run in result.runs:
        for miss in run.misses:
            if miss in said:
                continue
            where.setdefault(miss, []).append(f"{run.fault.name}@{run.at}")
    return [f"{miss} (in {', '.join(cells[:3])}{', …' if len(cells) > 3 else ''})" for miss, cells in where.items()]


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
    lines = [f"mcptape gauntlet: {result.tape}, client: {client_command(result)}", *_baseline(result), ""]
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    if result.left_out:
        lines.append(f"({result.left_out} more position(s) left out by --max-runs)")
    if result.stopped:
        lines.append("(stopped: the runs not finished by then are left out)")
    misses = _misses(result)
    if misses:
        lines += ["", "replay misses (the client asked what the tape has no answer for; --ignore POINTER):"]
        lines += [f"  {m}" for m in misses[:10]]
    lines += ["", "legend:"] + [f"  {v:<12} {what}" for v, what in LEGEND.items()]
    lines += ["", "per fault:"]
    for name, said, recovered, source in _summaries(result):
        lines += [f"  {name}: {said}", f"    recovered means: {recovered}", f"    source: {source}",
                  f"    evidence read: {BY_NAME[name].evidence}"]
    failing = result.failing(_shown(fail_on))
    if failing:
        lines += ["", "failing runs (reproduce: serve the replay, then run the client against it):"]
        for run in failing:
            lines += [f"  {run.fault.name} at {run.at}: {run.verdict}: {run.why}",
                      *([f"    {run.evidence}"] if run.evidence else []), f"    {result.reproduce(run)}"]
    lines += ["", _total(result, fail_on)]
    return "\n".join(lines) + "\n"


def markdown(result: Result, fail_on: tuple[str, ...]) -> str:
    header, rows = _grid(result)
    out = [f"## mcptape gauntlet: `{result.tape}`", "", f"Client: `{client_command(result)}`", "",
           *[f"{line}  " for line in _baseline(result)], "",
           "| " + " | ".join(f"`{h}`" if i else h for i, h in enumerate(header)) + " |",
           "|" + "---|" * len(header)]
    for name, *verdicts in rows:
        out.append(f"| `{name}` | " + " | ".join(CELL.get(v, v) for v in verdicts) + " |")
    if result.left_out:
        out += ["", f"{result.left_out} more position(s) left out by `--max-runs`."]
    if result.stopped:
        out += ["", "Stopped: the runs not finished by then are left out."]
    misses = _misses(result)
    if misses:
        out += ["", "Replay misses (the client asked what the tape has no answer for; `--ignore POINTER`):", ""]
        out += [f"- {m}" for m in misses[:10]]
    out += ["", "| verdict | meaning |", "|---|---|"] + [f"| {CELL[v]} | {what} |" for v, what in LEGEND.items()]
    out += ["", "### Per fault", "", "| fault | runs | recovered means | source |", "|---|---|---|---|"]
    out += [f"| `{n}` | {s} | {r} | {src} |" for n, s, r, src in _summaries(result)]
    failing = result.failing(_shown(fail_on))
    if failing:
        out += ["", "### Failing runs", ""]
        for run in failing:
            out += [f"- `{run.fault.name}` at `{run.at}`: **{run.verdict}**: {run.why}"
                    + (f" ({run.evidence})" if run.evidence else ""), "",
                    f"  ```sh\n  {result.reproduce(run)}\n  ```"]
    out += ["", _total(result, fail_on)]
    return "\n".join(out) + "\n"


def as_json(result: Result, fail_on: tuple[str, ...]) -> str:
    return json.dumps({
        "tape": result.tape, "command": result.command, "transport": "stdio" if result.stdio else "http",
        "timeout": result.timeout, "positions": result.positions, "left_out": result.left_out,
        "stopped": result.stopped, "fail_on": list(fail_on), "ignore": list(result.ignore),
        "match_meta": result.match_meta,
        "baseline": result.baseline.to_json() if result.baseline is not None else None,
        "misses": _misses(result),
        "runs": [{**run.to_json(), **({"reproduce": result.reproduce(run)} if run.verdict in _shown(fail_on) else {})}
                 for run in result.runs],
        "summary": {name: {"runs": said, "recovered_means": rec, "source": src, "evidence": BY_NAME[name].evidence}
                    for name, said, rec, src in _summaries(result)},
    }, indent=2) + "\n"


def _total(result: Result, fail_on: tuple[str, ...]) -> str:
    counts = Counter(r.verdict for r in result.runs)
    said = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
    bad = len(result.failing(fail_on))
    errors = f"; {len(result.errors)} could not be judged (error)" if result.errors else ""
    return f"mcptape: {len(result.runs)} cell(s): {said}" + (f"; {bad} fail the gauntlet" if bad else "") + errors


FORMATS = {"text": text, "md": markdown, "json": as_json}
