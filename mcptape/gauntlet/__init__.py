"""`mcptape gauntlet`: a client run once per (fault, position) against the tape's replay with that one fault, each
run classified as recovered, surfaced, failed or hung (runner.py), the whole as a scorecard (scorecard.py).

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

from .faults import FAULTS, Fault, not_applicable, pick
from .runner import (FAILED, HUNG, NOT_APPLICABLE, NOT_REACHED, RECOVERED, SURFACED, VERDICTS, Processes, Run,
                     recorded_requests, reproduce, run_one, uses_stdio)

__all__ = ["FAILED", "FAULTS", "HUNG", "NOT_APPLICABLE", "NOT_REACHED", "RECOVERED", "SURFACED", "VERDICTS", "Fault",
           "Gauntlet", "Result", "Run", "positions"]

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RUNS = 50


def positions(recording) -> list[str]:
    """Each request the client sent after the handshake, as the edit language selects it (METHOD#N)."""
    seen: Counter = Counter()
    out = []
    for answer in recording.answers:
        request = answer.request
        if isinstance(request, dict) and "id" in request and isinstance(request.get("method"), str):
            seen[request["method"]] += 1
            if request["method"] != "initialize":
                out.append(f"{request['method']}#{seen[request['method']]}")
    return out


@dataclass
class Result:
    tape: str
    command: list[str]
    stdio: bool
    timeout: float
    positions: list[str]
    runs: list[Run] = field(default_factory=list)
    left_out: int = 0  # positions past --max-runs
    stopped: bool = False  # interrupted: some runs never ran

    def failing(self, fail_on: tuple[str, ...] = (FAILED, HUNG)) -> list[Run]:
        return [r for r in self.runs if r.verdict in fail_on]

    def reproduce(self, run: Run) -> str:
        return reproduce(self.tape, run.edit, self.stdio)


class Gauntlet:
    def __init__(self, tape: str, command: list[str], faults: list[str] | None = None, at: list[str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT, max_runs: int = DEFAULT_MAX_RUNS, stdio: bool | None = None,
                 logs: str | None = None, allow: dict | None = None) -> None:
        """Raises ValueError for an unknown fault or a bad position, TapeError for a tape that cannot be read.
        `stdio`: the client spawns its server (default: when `{server}` is in its command). `allow`: the replays'
        allow_hosts and allow_origins (replay.serving)."""
        from ..edits import parse
        from ..replay.recorded import load

        if not command:
            raise ValueError("give the client command after --, with {url} (or {server}) where the replay goes")
        self.tape, self.command, self.timeout, self.logs = tape, list(command), timeout, logs
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
        self.why_not = {f.name: not_applicable(f, session_era=replayer.session_era, legacy=replayer.legacy,
                                               stdio=self.stdio) for f in self.faults}
        applicable = sum(1 for why in self.why_not.values() if why is None) or 1
        keep = max(1, max_runs // applicable)
        self.positions, self.left_out = wanted[:keep], max(0, len(wanted) - keep)
        self.processes = Processes()

    def run(self, jobs: int | None = None) -> Result:
        """Every run, `jobs` at a time (default: the CPU count). Interrupted (Ctrl-C, SIGTERM turned into
        SystemExit), it kills every client still running before it lets the interruption through."""
        result = Result(self.tape, self.command, self.stdio, self.timeout, self.positions, left_out=self.left_out)
        cells = [(f, at) for f in self.faults for at in self.positions]
        with tempfile.TemporaryDirectory(prefix="mcptape-gauntlet-") as scratch:
            root = Path(self.logs or scratch)
            pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1)
            futures = {}
            try:
                for n, (fault, at) in enumerate(cells, 1):
                    if self.why_not[fault.name] is None:
                        where = root / f"{n:03d}-{fault.name}-{at.replace('/', '_').replace('#', '-')}"
                        futures[(fault.name, at)] = pool.submit(run_one, self, fault, at, where)
                for fault, at in cells:
                    future = futures.get((fault.name, at))
                    if future is None:
                        result.runs.append(Run(fault, at, fault.text(at, self.timeout), NOT_APPLICABLE,
                                               self.why_not[fault.name]))
                    else:
                        result.runs.append(future.result())
            finally:
                if len(result.runs) < len(cells):  # interrupted: nothing may outlive the gauntlet
                    result.stopped = True
                    self.processes.stop()
                pool.shutdown(wait=True, cancel_futures=True)
        return result
