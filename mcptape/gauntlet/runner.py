"""One gauntlet run: the tape replayed with one fault (or none: the clean baseline run), the client run against it
under a timeout, its log checked, and the run classified. HTTP replays are served in process (one event-loop thread
each); a client that spawns its server gets the installed `mcptape replay TAPE --stdio` with the edit. Each client is
started in a process group of its own, and the whole group is killed when the run ends, so nothing it started
(a stdio replay included) outlives the run.

A cell is scored on the difference the fault made: a finding the client's clean run shows too is its baseline (the
scorecard says it once), a finding that rests on what mcptape injected counts only where the fault is about it
(Fault.judged_by), and a request the clean run shows the client sending before it could have seen the fault is not
reuse of a dead session."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
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
from ..check.finding import Finding
from ..tape import records
from ..tape.file import Reader, TapeError
from ..wire import http
from . import faults as catalogue
from .faults import Fault
from .negotiation import after_fallback, fallback_missing

RECOVERED, SURFACED, FAILED, HUNG = "recovered", "surfaced", "failed", "hung"
NOT_REACHED, NOT_APPLICABLE, ERROR = "not-reached", "n/a", "error"
VERDICTS = (RECOVERED, SURFACED, FAILED, HUNG, NOT_REACHED, NOT_APPLICABLE, ERROR)
MISS_PREFIX = "mcptape: no recorded answer"  # replay/serve.py's miss error: the client left the recorded path
CANNOT_EXECUTE = (126, 127)  # a shell's "cannot execute" and "not found"
# the baseline run: no fault, the conversation as recorded
CLEAN = Fault("clean", "", catalogue.GO_ON, "the conversation as recorded", "")


@dataclass
class Run:
    fault: Fault
    at: str
    edit: str
    verdict: str = NOT_APPLICABLE
    why: str = ""
    exit: int | None = None
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)  # those that blame the client and the fault caused
    output: str = ""  # the end of what the client printed, for the reader of a failing cell
    misses: list[str] = field(default_factory=list)  # requests the replay had no answer for (see --ignore)
    evidence: str = ""  # what the client sent after the fault, from the replay log
    discounted: list[str] = field(default_factory=list)  # findings not counted, each with why
    logs: list[str] = field(default_factory=list, repr=False)  # the replay logs it was judged on

    def to_json(self) -> dict:
        return {"fault": self.fault.name, "at": self.at, "edit": self.edit, "verdict": self.verdict, "why": self.why,
                "exit": self.exit, "seconds": round(self.seconds, 3), "evidence": self.evidence,
                "findings": [f.to_json() for f in self.findings], "discounted": self.discounted,
                "misses": self.misses, "output": self.output}


@dataclass
class Baseline:
    """The client's clean run: the findings it shows with no fault, and what it sent, in order."""

    run: Run
    findings: list[Finding]
    sent: list[tuple]  # each client request's key (_keys), in order
    asked: Counter  # requests (method -> count) it sent


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


def mcptape_command() -> list[str]:
    """The installed mcptape: its console script beside this interpreter, else this interpreter with `-P` (no
    current directory on sys.path), so a `mcptape/` folder where the client runs is never imported instead."""
    script = Path(sys.executable).with_name("mcptape")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    found = shutil.which("mcptape")
    if found and Path(found).resolve().parent == Path(sys.executable).resolve().parent:
        return [found]
    return [sys.executable, "-P", "-m", "mcptape"]


def stdio_server(tape: str, edit: str, log: str | None, ignore: tuple[str, ...] = (),
                 match_meta: bool = False) -> list[str]:
    argv = [*mcptape_command(), "replay", os.path.abspath(tape), "--stdio"]
    if edit:  # crosses as JSON data: the replay does not parse the edit language again
        from ..edits import language

        argv += ["--edits-json", language.dumps([language.parse(edit)])]
    argv += [a for pointer in ignore for a in ("--ignore", pointer)]
    argv += ["--match-meta"] if match_meta else []
    return argv + ["--log", log] if log else argv


def check_stdio_replay(tape: str, workdir: Path) -> str | None:
    """Start the stdio replay once with nothing to answer: why it cannot start, or None when it can."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "preflight.mcptape"
    log.unlink(missing_ok=True)  # a --logs folder used before
    try:
        done = subprocess.run(stdio_server(tape, "", str(log)), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=60, cwd=workdir)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the stdio replay cannot start: {e}"
    if done.returncode != 0 or not log.exists():
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"the stdio replay cannot start (exit {done.returncode}): {said[-1] if said else 'no message'}"
    return None


def reproduce(tape: str, edit: str, stdio: bool, ignore: tuple[str, ...] = (), match_meta: bool = False) -> str:
    """The command that serves the failing cell by hand."""
    argv = ["mcptape", "replay", tape, *(["--stdio"] if stdio else []), "--edit", edit]
    argv += [a for pointer in ignore for a in ("--ignore", pointer)]
    return shlex.join(argv + (["--match-meta"] if match_meta else []))


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
        exit_code = _client(gauntlet, run, expand(gauntlet.command, None, server), env, workdir)
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
                exit_code = _client(gauntlet, run, expand(gauntlet.command, replay.url, None), env, workdir)
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


def _client(gauntlet: Any, run: Run, argv: list[str], env: dict, workdir: Path) -> int | None:
    """Run the client to its end or its timeout; its exit code, or None when it hung (run.verdict says so) or the
    gauntlet was stopped. A client that cannot start is an error (run.verdict)."""
    out = workdir / "client.out"
    with open(out, "wb") as sink:
        try:
            proc = gauntlet.processes.start(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                            env=env)
        except OSError as e:
            run.verdict, run.why = ERROR, f"the client cannot start: {e.strerror}: {argv[0]}"
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
    if code in CANNOT_EXECUTE:
        run.verdict = ERROR
        run.why = f"the client cannot start (exit {code}): {_last_line(run.output) or argv[0]}"
    return code


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


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


def read_logs(logs: list[str]) -> list[dict]:
    return [r for path in logs for r in _records(path)]


def baseline(run: Run) -> Baseline:
    """What the clean run showed: its client findings, and the client's requests in order."""
    logs = run.logs
    log = read_logs(logs)
    messages = _messages(log)
    run.misses = _misses(messages)
    findings = _client_findings(logs)
    run.findings = findings
    if run.verdict not in (HUNG, ERROR):
        run.verdict = RECOVERED if run.exit == 0 else SURFACED
        run.why = "finished" if run.exit == 0 else f"exit {run.exit}: {_last_line(run.output)}"
    asked = Counter(m["method"] for r, m in messages if _from_client(r) and "id" in m and "method" in m)
    return Baseline(run, findings, list(_keys(log).values()), asked)


def classify(run: Run, recorded: Counter, logs: list[str], clean: Baseline | None = None,
             stateless: bool = False) -> None:
    """Set run.verdict and run.why from run.exit (or a verdict of hung already set) and the run's logs. `clean`:
    the client's baseline run; `stateless`: the traffic is 2026-07-28's, where closing a request's stream cancels
    it."""
    log = read_logs(logs)
    messages = _messages(log)
    run.misses = _misses(messages)
    fired = [r for r in log if r["kind"] == records.EDIT]
    if run.verdict == HUNG:
        if fired:
            run.evidence = _after(fired[0], log)
            run.findings = _counted(run, log, logs, clean)
        return
    if not fired:
        run.verdict, run.why = NOT_REACHED, f"the client never sent what at={run.at} selects: the fault never fired"
        _note_misses(run)
        return
    run.evidence = _after(fired[0], log)
    run.findings = _counted(run, log, logs, clean)
    if run.findings:
        run.verdict = FAILED
        run.why = ", ".join(dict.fromkeys(f.rule for f in run.findings))
        _note_misses(run)
        return
    evidence, early = _evidence(run.fault, fired[0], log, messages, stateless)
    if early:
        run.verdict, run.why = FAILED, early
        _note_misses(run)
        return
    expected = recorded if clean is None else Counter({m: min(n, clean.asked[m]) for m, n in recorded.items()})
    expected = after_fallback(expected) if run.fault.probe else expected
    missing = _left_out(expected, messages)
    new_misses = [m for m in run.misses if clean is None or m not in clean.run.misses]  # the clean run's are its own
    if evidence is None and run.exit == 0 and not missing and not new_misses:
        run.verdict, run.why = RECOVERED, "as expected: " + run.fault.recovered
        return
    run.verdict = SURFACED
    reasons = [] if run.exit == 0 else [f"exit {run.exit}"]
    reasons += [evidence] if evidence else []
    reasons += [missing] if missing else []
    run.why = "; ".join(reasons)
    _note_misses(run)


def _note_misses(run: Run) -> None:
    if run.misses:
        said = f"{len(run.misses)} request(s) the replay had no answer for (see --ignore)"
        run.why = f"{run.why}; {said}" if run.why else said


def _misses(messages: list[tuple[dict, dict]]) -> list[str]:
    """The replay's miss errors (which request, the closest recorded one, where they differ), each once."""
    said = [str((m.get("error") or {}).get("message", "")) for r, m in messages if not _from_client(r)]
    return list(dict.fromkeys(s.removeprefix("mcptape: ") for s in said if s.startswith(MISS_PREFIX)))


def _records(path: str) -> list[dict]:
    """A log's records; none when there is no log (a client that never started its stdio server)."""
    try:
        return list(Reader(path))
    except (OSError, TapeError):
        return []


def _client_findings(logs: list[str]) -> list[Finding]:
    present = [p for p in logs if os.path.exists(p)]
    if not present:
        return []
    try:
        return [f for f in check(present) if f.blames == "client" and f.severity in ("error", "warning")]
    except TapeError:
        return []


def _counted(run: Run, log: list[dict], logs: list[str], clean: Baseline | None) -> list[Finding]:
    """The client's findings the fault caused; the others go to run.discounted with why."""
    counted = []
    baseline_rules = {f.rule for f in clean.findings} if clean is not None else set()
    for f in _client_findings(logs):
        if f.rule in baseline_rules:
            run.discounted.append(f"{f.rule}: the clean run shows it too (baseline)")
        elif f.injected and f.rule not in run.fault.judged_by:
            run.discounted.append(f"{f.rule}: rests on what mcptape injected, which {run.fault.name} is not about")
        elif f.rule in catalogue.SESSION_RULES and clean is not None and _in_flight(f, log, clean):
            run.discounted.append(f"{f.rule}: only requests the client sends whatever the answers (its clean run "
                                  f"sends them too), racing the fault")
        else:
            counted.append(f)
    run.discounted = list(dict.fromkeys(run.discounted))
    return counted


def _client_requests(log: list[dict]) -> list[tuple[int, dict]]:
    return [(i, r) for i, r in enumerate(log) if r["kind"] == records.HTTP_REQUEST
            or (r["kind"] == records.STDIO_LINE and r.get("dir") == records.C2S and isinstance(r.get("msg"), dict)
                and "method" in r["msg"])]


def _key(record: dict) -> tuple:
    """A client request as two runs of the same client both send it: HTTP method, JSON-RPC method, whether it
    waits for an answer (has an id), whether it resumes a stream."""
    msg = record.get("msg") if isinstance(record.get("msg"), dict) else {}
    resumes = http.get(record.get("headers") or [], http.LAST_EVENT_ID) is not None
    return record.get("method", ""), msg.get("method"), "id" in msg, resumes


def _keys(log: list[dict]) -> dict[int, tuple]:
    """Each client request's key (_key) with its ordinal among its kind in its session: log index -> key. (A
    client that re-initialized counts its new session's requests afresh, as its clean run's one session did.)"""
    seen: Counter = Counter()
    out = {}
    for i, r in _client_requests(log):
        kind = _key(r)
        session = http.get(r.get("headers") or [], http.SESSION_ID)
        seen[(session, kind)] += 1
        out[i] = (*kind, seen[(session, kind)])
    return out


def _in_flight(finding: Finding, log: list[dict], clean: Baseline) -> bool:
    """Every request that carried the dead session was one the client sends whatever the answers: one that waits
    for no answer (the standalone GET stream, a notification) and that its clean run sends too, the same one in the
    same order. Such a request races the fault (rmcp's standalone GET leaves milliseconds after the replay's
    instant 404, as it does in the clean run); it is not reuse of a dead session."""
    keys = _keys(log)
    first = finding.t if finding.t is not None else 0.0  # the first request on the dead session
    reuses = [keys[i] for i, r in enumerate(log) if i in keys and r["kind"] == records.HTTP_REQUEST
              and r.get("method") in ("POST", "GET") and r["t"] >= first
              and http.get(r.get("headers") or [], http.SESSION_ID) == finding.session]
    # key: (HTTP method, JSON-RPC method, has an id, resumes, ordinal)
    unanswered = all((k[0] == "GET" and not k[3]) or (k[0] == "POST" and not k[2]) for k in reuses)
    return bool(reuses) and unanswered and all(k in clean.sent for k in reuses)


def _after(edit: dict, log: list[dict]) -> str:
    """What the client sent after the fault, in order, repeats counted: the cell's evidence."""
    said: list[list] = []
    for r in log:
        if r.get("t", 0) < edit["t"] or r is edit or not (_from_client(r) and r["kind"] != records.EDIT):
            continue
        msg = r.get("msg") if isinstance(r.get("msg"), dict) else {}
        what = msg.get("method") or ("response" if msg else "")
        if r["kind"] == records.HTTP_REQUEST:
            resume = " Last-Event-ID" if http.get(r.get("headers") or [], http.LAST_EVENT_ID) is not None else ""
            what = f"{r.get('method')} {what}".strip() + resume
        if said and said[-1][0] == what:
            said[-1][1] += 1
        else:
            said.append([what, 1])
    text = ", ".join(w + (f" ×{n}" if n > 1 else "") for w, n in said[:12])
    return ("sent after the fault: " + text + (", …" if len(said) > 12 else "")) if said else \
        "sent nothing after the fault"


def _evidence(fault: Fault, edit: dict, log: list[dict], messages: list[tuple[dict, dict]],
              stateless: bool = False) -> tuple[str | None, str | None]:
    """(what a recovered client would have done and this one did not, or None; a protocol fault in the recovery,
    or None) after the edit fired."""
    if fault.expects == catalogue.FALL_BACK:
        return fallback_missing(log), None
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
        faulted_id = faulted.get("id") if faulted else edit.get("request_id")
        cancelled = any(m.get("method") == "notifications/cancelled" and isinstance(m.get("params"), dict)
                        and m["params"].get("requestId") == faulted_id for _, m in later)
        # 2026-07-28: "closing the stream is the cancellation"; before it, "Disconnection SHOULD NOT be
        # interpreted as the client cancelling"
        closed = stateless and any(r["kind"] == records.END and r.get("reason") == records.CLIENT_DISCONNECTED
                                   and r.get("exchange") == edit.get("exchange") for r in log)
        if not (cancelled or closed):
            how = "neither notifications/cancelled nor its stream closed" if stateless else \
                "no notifications/cancelled for it (a disconnect is not a cancellation before 2026-07-28)"
            return f"the request was never cancelled: {how}", None
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


def _left_out(expected: Counter, messages: list[tuple[dict, dict]]) -> str:
    """The requests the client did not ask for (by method and count) that the recording (or the clean run) has:
    the rest of the conversation did not go as recorded."""
    asked = Counter(m["method"] for r, m in messages if _from_client(r) and "id" in m and "method" in m)
    short = [f"{method} ×{count - asked[method]}" for method, count in expected.items() if asked[method] < count]
    return f"never asked for {', '.join(short)}" if short else ""
