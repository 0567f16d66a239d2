"""`mcptape gauntlet`: a client run once per (fault, position) against the tape's replay with that one fault, each
run classified as recovered, surfaced, failed or hung (runner.py, judging.py), the whole as a scorecard (scorecard.py).

Library use:

    from mcptape.gauntlet import Gauntlet
    result = Gauntlet("run.mcptape", ["python", "client.py", "{url}"], faults=["expire-session"]).run(jobs=2)
    for run in result.runs: print(run.fault.name, run.at, run.verdict, run.why)
"""

from __future__ import annotations

import concurrent.futures
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .client import Processes, check_stdio_replay, reproduce, uses_stdio
from .faults import FAULTS, Fault, not_applicable, pick, placed
from .judging import baseline, recorded_requests
from .negotiation import probed
from .runner import run_one
from .verdicts import (CLEAN, ERROR, FAILED, HUNG, NOT_APPLICABLE, NOT_REACHED, RECOVERED, SURFACED, VERDICTS, Baseline,
                       Run)

__all__ = ["ERROR", "FAILED", "FAULTS", "HUNG", "NOT_APPLICABLE", "NOT_REACHED", "RECOVERED", "SURFACED", "VERDICTS",
           "Fault", "Gauntlet", "Result", "Run", "Stopped", "positions"]

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RUNS = 50
HANDSHAKE = ("initialize", "server/discover")  # not positions unless asked for (--at)


class Stopped(BaseException):
    """The gauntlet was told to stop (a signal): `code` is the exit status it ends with (130, 143, 129)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def positions(recording) -> list[str]:
    """Each request the client sent after the handshake, as the edit language selects it (METHOD#N)."""
    seen: Counter = Counter()
    out = []
    for answer in recording.answers:
        request = answer.request
        if isinstance(request, dict) and "id" in request and isinstance(request.get("method"), str):
            seen[request["method"]] += 1
            if request["method"] not in HANDSHAKE:
                out.append(f"{request['method']}#{seen[request['method']]}")
    return out


def first_event_id(recording, at: str) -> int | None:
    """close-stream's cut for a METHOD#N position: just past the first event of its recorded answer that carries an
    id (1 for any other selector); None when that answer's stream has no event id to resume from."""
    method, hash_, n = at.rpartition("#")
    if not hash_ or not n.isdigit():
        return 1
    answers = [a for a in recording.answers if a.method == method and isinstance(a.request, dict)
               and "id" in a.request]
    if len(answers) < int(n) or int(n) < 1:
        return 1
    events = answers[int(n) - 1].events
    return next((i for i, e in enumerate(events, 1) if "id" in e), None)


@dataclass
class Result:
    tape: str
    command: list[str]
    stdio: bool
    timeout: float
    positions: list[str]
    runs: list[Run] = field(default_factory=list)
    left_out: int = 0  # positions past --max-runs
    stopped: bool = False  # interrupted: the runs not finished by then are left out
    baseline: Run | None = None  # the client's clean run, no fault
    ignore: tuple[str, ...] = ()
    match_meta: bool = False

    def failing(self, fail_on: tuple[str, ...] = (FAILED, HUNG)) -> list[Run]:
        return [r for r in self.runs if r.verdict in fail_on]

    @property
    def errors(self) -> list[Run]:
        """Runs that could not be judged (the client or the replay could not start, a bug of mcptape's)."""
        return [r for r in [self.baseline, *self.runs] if r is not None and r.verdict == ERROR]

    def reproduce(self, run: Run) -> str:
        return reproduce(self.tape, run.edit, self.stdio, self.ignore, self.match_meta)


class Gauntlet:
    def __init__(self, tape: str, command: list[str], faults: list[str] | None = None, at: list[str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT, max_runs: int = DEFAULT_MAX_RUNS, stdio: bool | None = None,
                 logs: str | None = None, ignore: list[str] | None = None, match_meta: bool = False,
                 allow: dict | None = None) -> None:
        """Raises ValueError for an unknown fault, a bad position or JSON pointer, TapeError for a tape that cannot
        be read. `stdio`: the client spawns its server (default: when `{server}` is in its command). `ignore`,
        `match_meta`: how the replay matches requests (as `mcptape replay` takes them). `allow`: the replays'
        allow_hosts and allow_origins (replay.serving)."""
        from ..edits import parse
        from ..replay.recorded import load
        from ..wire import pointer

        if not command:
            raise ValueError("give the client command after --, with {url} (or {server}) where the replay goes")
        self.tape, self.command, self.timeout, self.logs = tape, list(command), timeout, logs
        self.ignore, self.match_meta = tuple(ignore or ()), match_meta
        for p in self.ignore:
            try:
                pointer.parse(p)
            except ValueError as e:
                raise ValueError(f"--ignore {p!r}: {e}") from None
        self.allow = allow or {}
        self.stdio = uses_stdio(command) if stdio is None else stdio
        self.recording = load(tape)
        self.recorded_requests = recorded_requests(self.recording)
        self.faults = pick(faults)
        for selector in at or ():
            parse(f"drop at={selector}")  # a bad selector is refused up front, in the edit language's words
        every = positions(self.recording)
        if not every and not at:
            raise ValueError(f"{tape}: no request after the handshake to inject a fault at (give --at)")
        wanted = list(dict.fromkeys(at or every))  # a position named twice is one run
        from ..edits import reach
        from ..replay.serve import Replayer, sent

        replayer = Replayer(self.recording)
        # a position no MCP method can reach is refused up front (edits.reach); one past the tape is a warning
        self.warnings = reach([parse(f"drop at={s}") for s in at or ()], sent(self.recording))
        # 2026-07-28 over HTTP: no sessions, and closing a request's stream cancels it
        self.stateless = not self.stdio and not replayer.session_era and not replayer.legacy
        event_ids = any("id" in e for a in self.recording.answers for e in a.events)
        self.why_not = {f.name: not_applicable(f, session_era=replayer.session_era, legacy=replayer.legacy,
                                               stdio=self.stdio, event_ids=event_ids, probed=probed(self.recording))
                        for f in self.faults}
        once = sum(1 for f in self.faults if f.probe and self.why_not[f.name] is None)  # one run each, at the probe
        applicable = sum(1 for f in self.faults if not f.probe and self.why_not[f.name] is None) or 1
        keep = max(1, (max_runs - once) // applicable)
        self.positions, self.left_out = wanted[:keep], max(0, len(wanted) - keep)
        self.processes = Processes()
        self.baseline: Baseline | None = None

    def run(self, jobs: int | None = None) -> Result:
        """The clean baseline run, then every cell, `jobs` at a time (default: the CPU count). Stopped (Stopped or
        KeyboardInterrupt raised in this thread, by a signal handler), it kills every client and replay still
        running and returns the runs finished by then, with `stopped` set."""
        result = Result(self.tape, self.command, self.stdio, self.timeout, self.positions, left_out=self.left_out,
                        ignore=self.ignore, match_meta=self.match_meta)
        cells = placed(self.faults, self.positions)
        with tempfile.TemporaryDirectory(prefix="mcptape-gauntlet-") as scratch:
            root = Path(self.logs or scratch)
            pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1)
            futures: dict = {}
            try:
                cannot = check_stdio_replay(self.tape, root / "000-preflight") if self.stdio else None
                clean = Run(CLEAN, "", "", ERROR, cannot) if cannot else run_one(self, CLEAN, "", root / "000-clean")
                result.baseline = clean
                if clean.verdict != ERROR:
                    self.baseline = baseline(clean)
                for n, (fault, at) in enumerate(cells, 1):
                    if self._why_not(fault, at) is None and clean.verdict != ERROR:
                        where = root / f"{n:03d}-{fault.name}-{at.replace('/', '_').replace('#', '-')}"
                        after = first_event_id(self.recording, at) or 1
                        futures[(fault.name, at)] = pool.submit(run_one, self, fault, at, where, after)
                for fault, at in cells:
                    future = futures.get((fault.name, at))
                    if clean.verdict == ERROR:
                        result.runs.append(Run(fault, at, "", ERROR, f"not run: {clean.why}"))
                    elif future is None:
                        result.runs.append(Run(fault, at, fault.text(at, self.timeout), NOT_APPLICABLE,
                                               self._why_not(fault, at)))
                    elif (run := future.result()) is not None:
                        result.runs.append(run)
            except (Stopped, KeyboardInterrupt):
                result.stopped = True
                self.processes.stop()  # the runs in flight end now, without a verdict (run_one gives None)
                done = {(r.fault.name, r.at) for r in result.runs}
                for future in futures.values():
                    if not future.cancel() and future.exception() is None and (run := future.result()) is not None \
                            and (run.fault.name, run.at) not in done:
                        result.runs.append(run)
                order = {cell: i for i, cell in enumerate((f.name, at) for f, at in cells)}
                result.runs.sort(key=lambda r: order[(r.fault.name, r.at)])
            finally:
                self.processes.stop()  # nothing may outlive the gauntlet
                pool.shutdown(wait=True, cancel_futures=True)
        return result

    def _why_not(self, fault: Fault, at: str) -> str | None:
        why = self.why_not[fault.name]
        if why is None and fault.resumable and first_event_id(self.recording, at) is None:
            return f"the recorded answer at {at} carries no SSE event id: there is nothing to resume from"
        return why
