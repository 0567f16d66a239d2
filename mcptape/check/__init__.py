"""`mcptape check`: tapes in, findings out. One pass over each tape through the analysis model; several tapes are
one history (in the order given), so a rule can see an id issued in one tape and refused in the next."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..model import Model, Observer, collector_paused
from ..tape.file import Reader
from . import spec
from .rules import SEVERITIES, Finding, all_rules


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


def at_or_above(severity: str, threshold: str) -> bool:
    if threshold == "never":
        return False
    return SEVERITIES.index(severity) <= SEVERITIES.index(threshold)
