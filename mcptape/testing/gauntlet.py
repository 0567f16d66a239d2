"""The gauntlet in pytest: `@pytest.mark.mcptape_gauntlet(faults=[…], at=[…])` runs a test the user already has
once per (fault, position), its tape replayed with that one fault; the `mcptape_gauntlet` fixture classifies the
run as `mcptape gauntlet` does, from how the test's client ended and the findings that blame it. There is no clean
run of the test's client here: its baseline is the tape's own findings (what the recorded client already did)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from ..gauntlet import DEFAULT_TIMEOUT
from ..gauntlet.faults import Fault, not_applicable, pick, placed
from ..gauntlet.negotiation import probed
from ..gauntlet.runner import CLEAN, HUNG, Run, baseline, classify, recorded_requests

OPTIONS = ("faults", "at", "timeout")


@dataclass(frozen=True)
class Cell:
    fault: Fault
    at: str
    timeout: float
    edit: str  # the fault at its position, in the edit language
    parsed: Any  # that edit parsed, once (mcptape.edits.Edit): the test's first tape carries it


def cells(definition, mark: pytest.Mark) -> list[Cell]:
    """The runs the marker asks for: each fault (default all) at each position (default each request after the
    handshake, read from the test's tape)."""
    from ..edits import EditError, parse
    from .markers import MarkerError, specs

    unknown = sorted(set(mark.kwargs) - set(OPTIONS))
    if unknown or mark.args:
        raise MarkerError(f"mcptape_gauntlet takes {', '.join(f'{o}=' for o in OPTIONS)} only")
    faults = pick(list(mark.kwargs.get("faults") or ()))
    at = list(mark.kwargs.get("at") or ())
    timeout = float(mark.kwargs.get("timeout", DEFAULT_TIMEOUT))
    if not at:
        from ..gauntlet import positions
        from ..replay.recorded import load

        tape = specs(definition)[0].path
        try:
            at = positions(load(tape))
        except (OSError, ValueError) as e:
            raise MarkerError(f"mcptape_gauntlet: no at= given and the tape cannot be read for positions: {e}")
    try:  # a bad selector is refused in the edit language's words
        for selector in at:  # (a negotiation fault runs once, at the probe: its cell may not use them)
            parse(f"drop at={selector}")
        return [Cell(f, a, timeout, f.text(a, timeout), parse(f.text(a, timeout))) for f, a in placed(faults, at)]
    except EditError as e:
        raise MarkerError(str(e)) from None


class GauntletRun:
    """The `mcptape_gauntlet` fixture: the fault and position of this run, and `classify()` for its verdict."""

    def __init__(self, cell: Cell, tape) -> None:
        self.cell, self.tape = cell, tape
        self.fault, self.at, self.edit = cell.fault, cell.at, cell.edit

    def classify(self, exit: int | None = 0) -> Run:
        """The run's verdict (Run.verdict, .why, .findings): `exit` is how the client ended: 0 when it finished,
        non-zero when it reported an error and stopped, None when it never finished (hung)."""
        from ..replay.recorded import load
        from ..replay.serve import Replayer

        recording = load(self.tape.path)
        replayer = Replayer(recording)
        run = Run(self.fault, self.at, self.edit, exit=exit)
        if exit is None:
            run.verdict, run.why = HUNG, "the client did not finish"
        recorded = Run(CLEAN, "", "", exit=0, logs=[self.tape.path])
        classify(run, recorded_requests(recording), self.tape.log_paths(), baseline(recorded),
                 stateless=not replayer.session_era and not replayer.legacy)
        return run


def skip_if_not_applicable(cell: Cell, tape) -> None:
    from ..replay.recorded import load
    from ..replay.serve import Replayer

    replayer = Replayer(load(tape.path))
    # over HTTP: a test that then takes mcptape.command gets the one-line refusal of an HTTP-only edit on stdio
    event_ids = any("id" in e for a in replayer.recording.answers for e in a.events)
    why = not_applicable(cell.fault, session_era=replayer.session_era, legacy=replayer.legacy, stdio=False,
                         event_ids=event_ids, probed=probed(replayer.recording))
    if why:
        pytest.skip(f"mcptape_gauntlet: {cell.fault.name} does not apply: {why}")
