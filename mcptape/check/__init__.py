"""`mcptape check`: tapes in, findings out. One pass over each tape through the analysis model; several tapes are
one history (in the order given), so a rule can see an id issued in one tape and refused in the next."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..model import Model, Observer, collector_paused
from ..tape.file import Reader
from . import spec
from .config import Config
from .finding import SEVERITIES, Finding
from .rules import all_rules


def check(paths: list[str], watchers: list[Observer] = ()) -> Iterator[Finding]:
    """Findings in tape order. Raises TapeError for a tape that cannot be read at all. `watchers` read the same
    pass (the report collects what it shows beside the findings); what they return is not yielded."""
    for path in paths:  # an unreadable tape fails before any output; each is opened again when its turn comes, so
        Reader(path).close()  # a bundle of 10,000 tapes never holds 10,000 open files and their buffers at once
    model = Model([*all_rules(), *watchers])
    with collector_paused():
        for path in paths:
            reader = Reader(path)
            yield from model.feed_tape(reader.path, reader)
            if reader.truncated:
                yield Finding("capture-incomplete", "info", reader.path, None, None, None, None,
                              f"the tape is truncated ({reader.truncated}); checked the {reader.count} records "
                              f"before it", spec.CAPTURE, reader.count, None)
        yield from model.finish()


def check_records(tapes: Iterable[tuple[str, Iterable[dict]]], watchers: list[Observer] = ()) -> Iterator[Finding]:
    """Findings of tapes held in memory, as (name, records) pairs read as one history: what tests built with
    `mcptape.testing.builder` check."""
    model = Model([*all_rules(), *watchers])
    for name, items in tapes:
        yield from model.feed_tape(name, items)
    yield from model.finish()


@dataclass
class Checked:
    """What `check` found in tapes, after the project's settings: `findings` (severities as configured),
    `failing` (those the baseline does not hold), `rows` (a verdict per requirement per tape, when asked for)."""

    findings: list[Finding]
    failing: list[Finding]
    rows: list | None = None


def run(paths: list[str], requirements: bool = False, config: Config | None = None,
        baseline: str | None = None) -> Checked:
    """check as the command runs it: the findings at the project's severities, the verdicts when `requirements`,
    and which findings are new against a baseline file. Raises TapeError, BaselineError."""
    from . import baseline as baselines

    known = baselines.load(baseline) if baseline else None  # an unreadable baseline fails before any work
    exercise = None
    watchers: list[Observer] = []
    if requirements:
        from .verdicts import Exercise

        exercise = Exercise()
        watchers.append(exercise)
    found = check(paths, watchers)
    findings = list(config.apply(found) if config is not None else found)
    rows = None
    if exercise is not None:
        from .verdicts import judge

        rows = judge(findings, exercise, paths)
    return Checked(findings, baselines.new(findings, known) if known is not None else findings, rows)


def at_or_above(severity: str, threshold: str) -> bool:
    if threshold == "never":
        return False
    return SEVERITIES.index(severity) <= SEVERITIES.index(threshold)
