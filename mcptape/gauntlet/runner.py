"""One gauntlet run: the tape replayed with one fault, the client run against it under a timeout, its log checked,
and the run classified. HTTP replays are served in process (one event-loop thread each); a client that spawns its
server gets `mcptape replay TAPE --stdio` with the edit. Each client is started in a process group of its own, and
the whole group is killed when the run ends, so nothing it started outlives the run."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..check import check
from ..check.rules import Finding
from ..tape import records
from ..tape.file import Reader, TapeError
from . import faults as catalogue
from .faults import Fault

RECOVERED, SURFACED, FAILED, HUNG = "recovered", "surfaced", "failed", "hung"
NOT_REACHED, NOT_APPLICABLE = "not-reached", "n/a"
VERDICTS = (RECOVERED, SURFACED, FAILED, HUNG, NOT_REACHED, NOT_APPLICABLE)
MISS_PREFIX = "mcptape: no recorded answer"  # replay/serve.py's miss error: the client left the recorded path


@dataclass
class Run:
    fault: Fault
    at: str
    edit: str
    verdict: str = NOT_APPLICABLE
    why: str = ""
    exit: int | None = None
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)  # those that blame the client
    output: str = ""  # the end of what the client printed, for the reader of a failing cell

    def to_json(self) -> dict:
        return {"fault": self.fault.name, "at": self.at, "edit": self.edit, "verdict": self.verdict, "why": self.why,
                "exit": self.exit, "seconds": round(self.seconds, 3),
                "findings": [f.to_json() for f in self.findings], "output": self.output}


class Processes:
    """The client process groups alive now, so a gauntlet that is stopped can kill them all; once stopped, no new
    client starts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.groups: set[int] = set()
        self.stopped = False

    def start(self, argv: list[str], **options) -> subprocess.Popen | None:
        with self.lock:
            if self.stopped:
                return None
            proc = subprocess.Popen(argv, start_new_session=True, **options)
            self.groups.add(proc.pid)
            return proc

    def end(self, proc: subprocess.Popen) -> None:
        """Kill what is left of the client's group (its children too, even once it has exited), then reap it."""
        with self.lock:
            self.groups.discard(proc.pid)
            _kill_group(proc.pid)
        proc.wait()

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            for group in self.groups:
                _kill_group(group)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def expand(command: list[str], url: str | None, server: list[str] | None) -> list[str]:
    """`{server}` as a whole argument becomes the server command's arguments in place; `{url}` anywhere in an
    argument becomes the replay's URL."""
    argv: list[str] = []
    for arg in command:
        if arg == "{server}" and server is not None:
            argv.extend(server)
        else:
            argv.append(arg.replace("{url}", url) if url is not None else arg)
    return argv


def uses_stdio(command: list[str]) -> bool:
    return any("{server}" in arg for arg in command)


def stdio_server(tape: str, edit: str, log: str | None) -> list[str]:
    argv = [sys.executable, "-m", "mcptape", "replay", os.path.abspath(tape), "--stdio", "--edit", edit]
    return argv + ["--log", log] if log else argv


def reproduce(tape: str, edit: str, stdio: bool) -> str:
    """The command that serves the failing cell by hand."""
    argv = ["mcptape", "replay", tape, *(["--stdio"] if stdio else []), "--edit", edit]
    return shlex.join(argv)


def run_one(gauntlet: Any, fault: Fault, at: str, workdir: Path) -> Run:
    """Serve the tape with this one fault, run the client against it, classify."""
    from ..edits import Editor, parse
    from ..replay import Background, serving
    from ..replay.serve import Replayer

    edit = fault.text(at, gauntlet.timeout)
    run = Run(fault, at, edit)
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    started = time.monotonic()
    if gauntlet.stdio:
        server = stdio_server(gauntlet.tape, edit, str(workdir / "log-{n}.mcptape"))
        env["MCPTAPE_SERVER"] = shlex.join(server)
        exit_code = _client(gauntlet, run, expand(gauntlet.command, None, server), env, workdir)
        logs = sorted(str(p) for p in workdir.glob("log-*.mcptape"))
    else:
        log = str(workdir / "log.mcptape")
        background = Background()
        try:
            replayer = Replayer(gauntlet.recording, [], Editor([parse(edit)]))
            replay, close = background.enter(serving(gauntlet.tape, log=log, replayer=replayer, log_mode="force",
                                                          **gauntlet.allow))
            try:
                env["MCPTAPE_URL"] = replay.url
                exit_code = _client(gauntlet, run, expand(gauntlet.command, replay.url, None), env, workdir)
            finally:
                close()
                background.run(_settle(), 10)
        finally:
            background.close()
        logs = [log]
    run.seconds = time.monotonic() - started
    if exit_code is None and run.verdict == NOT_APPLICABLE:  # stopped before it began
        run.why = "not run: the gauntlet was stopped"
        return run
    run.exit = exit_code
    classify(run, gauntlet.recorded_requests, logs)
    return run


async def _settle() -> None:
    """End what the replay still had running for the client (a dropped answer's connection waits for ever), so
    its loop closes with nothing pending."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _client(gauntlet: Any, run: Run, argv: list[str], env: dict, workdir: Path) -> int | None:
    """Run the client to its end or its timeout; its exit code, or None when it hung (run.verdict says so)."""
    out = workdir / "client.out"
    with open(out, "wb") as sink:
        try:
            proc = gauntlet.processes.start(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                            env=env)
        except OSError as e:
            run.output = f"cannot start the client: {e.strerror}: {argv[0]}"
            return 127
        if proc is None:
            return None
        try:
            code = proc.wait(gauntlet.timeout)
        except subprocess.TimeoutExpired:
            code = None
            run.verdict, run.why = HUNG, f"still running after {gauntlet.timeout:g}s; killed"
        finally:
            gauntlet.processes.end(proc)
    run.output = out.read_bytes()[-2000:].decode("utf-8", "replace")
    if code is not None and code < 0 and gauntlet.processes.stopped:
        return None
    return code


def _messages(log: list[dict]) -> list[tuple[dict, dict]]:
    """(record, JSON-RPC message) for every message in the records, in order, batches opened."""
    out = []
    for record in log:
        msg = record.get("msg")
        for one in msg if isinstance(msg, list) else [msg]:
            if isinstance(one, dict):
                out.append((record, one))
    return out


def _from_client(record: dict) -> bool:
    return record["kind"] == records.HTTP_REQUEST or record.get("dir") == records.C2S


def recorded_requests(recording) -> Counter:
    """How often the tape's client sent each request method: a run that went as recorded asks for as many."""
    return Counter(a.request["method"] for a in recording.answers if isinstance(a.request, dict)
                   and "id" in a.request and isinstance(a.request.get("method"), str))


def classify(run: Run, recorded: Counter, logs: list[str]) -> None:
    """Set run.verdict and run.why from run.exit (or a verdict of hung already set) and the run's logs."""
    log = [r for path in logs for r in _records(path)]
    if run.verdict == HUNG:
        run.findings = _blamed(logs)
        return
    fired = [r for r in log if r["kind"] == records.EDIT]
    if not fired:
        run.verdict, run.why = NOT_REACHED, f"the client never sent what at={run.at} selects: the fault never fired"
        return
    run.findings = _blamed(logs)
    if run.findings:
        run.verdict = FAILED
        run.why = ", ".join(dict.fromkeys(f.rule for f in run.findings))
        return
    messages = _messages(log)
    evidence, early = _evidence(run.fault, fired[0], log, messages)
    if early:
        run.verdict, run.why = FAILED, early
        return
    missing = _left_out(recorded, messages)
    if evidence is None and run.exit == 0 and not missing:
        run.verdict, run.why = RECOVERED, "as expected: " + run.fault.recovered
        return
    run.verdict = SURFACED
    reasons = [] if run.exit == 0 else [f"exit {run.exit}"]
    reasons += [evidence] if evidence else []
    reasons += [missing] if missing else []
    run.why = "; ".join(reasons)


def _records(path: str) -> list[dict]:
    """A log's records; none when there is no log (a client that never started its stdio server)."""
    try:
        return list(Reader(path))
    except (OSError, TapeError):
        return []


def _blamed(logs: list[str]) -> list[Finding]:
    present = [p for p in logs if os.path.exists(p)]
    if not present:
        return []
    try:
        return [f for f in check(present) if f.blames == "client" and f.severity in ("error", "warning")]
    except TapeError:
        return []


def _evidence(fault: Fault, edit: dict, log: list[dict],
              messages: list[tuple[dict, dict]]) -> tuple[str | None, str | None]:
    """(what a recovered client would have done and this one did not, or None; a protocol fault in the recovery,
    or None) after the edit fired."""
    after = edit["t"]
    later = [(r, m) for r, m in messages if r["t"] >= after and _from_client(r)]

    def is_faulted(record: dict, msg: dict) -> bool:  # the request the edit answered: by its exchange, or its id
        if "exchange" in edit:
            return record["kind"] == records.HTTP_REQUEST and record.get("exchange") == edit["exchange"]
        return record.get("dir") == records.C2S and msg.get("id") == edit.get("request_id")

    faulted = next((m for r, m in messages if "method" in m and "id" in m and is_faulted(r, m)), None)
    method = faulted.get("method") if faulted else None
    same = _shape(faulted) if faulted else None
    if fault.expects == catalogue.REINITIALIZE:
        if not any(m.get("method") == "initialize" for _, m in later):
            return "no new initialize after the fault", None
    elif fault.expects == catalogue.RESUME:
        if not any(r["kind"] == records.HTTP_REQUEST and r.get("method") == "GET" and r["t"] >= after
                   and any(k.lower() == "last-event-id" for k, _ in r.get("headers") or ()) for r in log):
            return "no GET with Last-Event-ID after the cut stream", None
    elif fault.expects in (catalogue.RETRY_AFTER, catalogue.RESEND):
        again = [r for r, m in later if "id" in m and m is not faulted and _shape(m) == same]
        if not again:
            return f"{method or 'the request'} never sent again", None
        wait = _retry_after(edit, log) if fault.expects == catalogue.RETRY_AFTER else None
        if wait is not None and again[0]["t"] - after < wait:
            return None, (f"retry-before-retry-after: sent again {again[0]['t'] - after:.2f}s after a status that "
                          f"said Retry-After: {wait:g}")
    elif fault.expects == catalogue.CANCEL:
        cancelled = any(m.get("method") == "notifications/cancelled" for _, m in later)
        closed = any(r["kind"] == records.END and r.get("reason") == records.CLIENT_DISCONNECTED
                     and r.get("exchange") == edit.get("exchange") for r in log)
        if not (cancelled or closed):
            return "the request was never cancelled", None
    return None, None


def _retry_after(edit: dict, log: list[dict]) -> float | None:
    """The Retry-After (in seconds) of the status the edit answered with, as the log shows the client got it."""
    for record in log:
        if record["kind"] == records.HTTP_RESPONSE and record.get("exchange") == edit.get("exchange"):
            for name, value in record.get("headers") or ():
                if name.lower() == "retry-after" and str(value).strip().isdigit():
                    return float(value)
    return None


def _shape(msg: dict) -> tuple:
    """A request as a retry repeats it: method and params, without the per-send _meta (progress tokens)."""
    params = msg.get("params")
    if isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "_meta"}
    return msg.get("method"), repr(params)


def _left_out(recorded: Counter, messages: list[tuple[dict, dict]]) -> str:
    """The recorded requests the client did not ask for (by method and count): the rest of the conversation did not
    go as recorded. A miss (the replay had no answer) counts too."""
    asked = Counter(m["method"] for r, m in messages if _from_client(r) and "id" in m and "method" in m)
    missed = [m for r, m in messages if not _from_client(r)
              and str((m.get("error") or {}).get("message", "")).startswith(MISS_PREFIX)]
    if missed:
        return f"left the recorded conversation: {len(missed)} request(s) the tape has no answer for"
    short = [f"{method} ×{count - asked[method]}" for method, count in recorded.items() if asked[method] < count]
    return f"never asked for {', '.join(short)}" if short else ""
