"""One gauntlet run: the tape replayed with one fault (or none: the clean baseline run), the client run against it
under a timeout (client.py), its log judged (judging.py). HTTP replays are served in process (one event-loop thread
each); a client that spawns its server gets the installed `mcptape replay TAPE --stdio` with the edit."""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from pathlib import Path
from typing import Any

from .client import expand, run_client, stdio_server
from .faults import Fault
# judging.py and verdicts.py own these: the scorecard, the cli and the pytest marker still take them from here
from .judging import baseline, classify, recorded_requests  # noqa: F401
from .verdicts import (CLEAN, ERROR, FAILED, HUNG, NOT_APPLICABLE, NOT_REACHED, RECOVERED,  # noqa: F401
                       SURFACED, VERDICTS, Run)


def run_one(gauntlet: Any, fault: Fault, at: str, workdir: Path, after: int = 1) -> Run | None:
    """Serve the tape with this one fault (CLEAN: none), run the client against it, classify. None when the
    gauntlet was stopped before the run could finish: it has no verdict."""
    edit = fault.text(at, gauntlet.timeout, after) if fault is not CLEAN else ""
    run = Run(fault, at, edit)
    try:
        exit_code, logs = _serve_and_run(gauntlet, run, workdir)
    except Exception as e:  # a bug of mcptape's: the cell says so, and the gauntlet exits 2
        run.verdict, run.why = ERROR, f"internal error: {type(e).__name__}: {e}"
        return run
    if exit_code is None and gauntlet.processes.stopped:
        return None
    run.exit, run.logs = exit_code, logs
    if run.verdict != ERROR and fault is not CLEAN:
        classify(run, gauntlet.recorded_requests, logs, gauntlet.baseline, gauntlet.stateless)
    return run


def _serve_and_run(gauntlet: Any, run: Run, workdir: Path) -> tuple[int | None, list[str]]:
    from ..edits import Editor, parse
    from ..replay import Background, serving
    from ..replay.serve import Replayer

    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    started = time.monotonic()
    if gauntlet.stdio:
        server = stdio_server(gauntlet.tape, run.edit, str(workdir / "log-{n}.mcptape"), gauntlet.ignore,
                              gauntlet.match_meta)
        env["MCPTAPE_SERVER"] = shlex.join(server)
        exit_code = run_client(gauntlet, run, expand(gauntlet.command, None, server), env, workdir)
        logs = sorted(str(p) for p in workdir.glob("log-*.mcptape"))
    else:
        log = str(workdir / "log.mcptape")
        background = Background()
        try:
            editor = Editor([parse(run.edit)]) if run.edit else None
            replayer = Replayer(gauntlet.recording, list(gauntlet.ignore), editor, gauntlet.match_meta)
            replay, close = background.enter(serving(gauntlet.tape, log=log, replayer=replayer, log_mode="force",
                                                          **gauntlet.allow))
            try:
                env["MCPTAPE_URL"] = replay.url
                exit_code = run_client(gauntlet, run, expand(gauntlet.command, replay.url, None), env, workdir)
            finally:
                close()
                background.run(_settle(), 10)
        finally:
            background.close()
        logs = [log]
    run.seconds = time.monotonic() - started
    return exit_code, logs


async def _settle() -> None:
    """End what the replay still had running for the client (a dropped answer's connection waits for ever), so
    its loop closes with nothing pending."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
