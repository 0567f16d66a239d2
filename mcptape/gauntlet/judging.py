"""How a gauntlet cell is judged: the run's replay logs read once through `check` (its findings) and the analysis
model (every record as the model saw it, the session transitions, the calls as they settled), then the run
classified as recovered, surfaced or failed.

A cell is scored on the difference the fault made: a finding the client's clean run shows too is its baseline (the
scorecard says it once), a finding that rests on what mcptape injected counts only where the fault is about it
(Fault.judged_by), and a request the clean run shows the client sending before it could have seen the fault is not
reuse of a dead session."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from ..check import check
from ..check.finding import Finding
from ..facts import Outcome, SessionTransition
from ..model import SUPERSEDED, Call, Model, Observer, Seen
from ..replay.match import no_meta, same_request
from ..replay.serve import MISS
from ..tape import records
from ..tape.file import Reader, TapeError
from ..wire import http, jsonrpc
from . import faults as catalogue
from .faults import Fault
from .negotiation import after_fallback, fallback_missing
from .verdicts import ERROR, FAILED, HUNG, NOT_REACHED, RECOVERED, SURFACED, Baseline, Run, last_line



@dataclass
class Log(Observer):
    """A run's replay logs as the model read them: every record with the model's view of it, the client's
    requests as they settled, and the replay's miss errors among their answers."""

    seen: list[Seen] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)  # the client's requests, settled (messages dropped)
    misses: list[str] = field(default_factory=list)

    def record(self, seen: Seen, model: Model) -> None:
        self.seen.append(seen)

    def call(self, call: Call, model: Model) -> None:
        if call.dir != records.C2S:
            return
        self.calls.append(call)
        if call.outcome is Outcome.ERROR:  # a replay's miss is a JSON-RPC error answering the request
            error = call.response.get("error")
            said = str(error.get("message", "")) if isinstance(error, dict) else ""
            if said.startswith(MISS):  # the client left the recorded path
                self.misses.append(said.removeprefix("mcptape: "))

    @property
    def messages(self) -> list[tuple[Seen, dict]]:
        """(record, JSON-RPC message) for every message in the records, in order, batches opened."""
        out = []
        for seen in self.seen:
            msg = seen.record.get("msg")
            for one in jsonrpc.messages(msg):
                if isinstance(one, dict):
                    out.append((seen, one))
        return out

    def superseded_after(self, t: float) -> bool:
        """The client started a new session, in place of a dead one, at or after t (lifecycle.py's superseded)."""
        return any(isinstance(fact, SessionTransition) and fact.step.kind == SUPERSEDED and fact.step.t >= t
                   for seen in self.seen for fact in seen.notes)


def read(logs: list[str]) -> tuple[Log, list[Finding]]:
    """A run's logs read once: the model's view, and the findings that blame the client (error or warning). A log
    that cannot be read at all gives no findings, and the others are still read."""
    present = [p for p in logs if os.path.exists(p)]
    log = Log()
    try:
        findings = list(check(present, [log])) if present else []
    except TapeError:
        log, findings = Log(), []
        model = Model([log])
        for path in present:
            try:
                reader = Reader(path)
                for _ in model.feed_tape(reader.path, reader):
                    pass
            except (OSError, TapeError):
                continue
        for _ in model.finish():
            pass
    return log, [f for f in findings if f.blames == "client" and f.severity in ("error", "warning")]


def _from_client(seen: Seen) -> bool:
    return seen.kind == records.HTTP_REQUEST or seen.record.get("dir") == records.C2S


def recorded_requests(recording) -> Counter:
    """How often the tape's client sent each request method: a run that went as recorded asks for as many."""
    return Counter(a.request["method"] for a in recording.answers if isinstance(a.request, dict)
                   and "id" in a.request and isinstance(a.request.get("method"), str))


def _asked(messages: list[tuple[Seen, dict]]) -> Counter:
    return Counter(m["method"] for s, m in messages if _from_client(s) and "id" in m and "method" in m)


def baseline(run: Run) -> Baseline:
    """What the clean run showed: its client findings, and the client's requests in order."""
    log, findings = read(run.logs)
    run.misses = list(dict.fromkeys(log.misses))
    run.findings = findings
    if run.verdict not in (HUNG, ERROR):
        run.verdict = RECOVERED if run.exit == 0 else SURFACED
        run.why = "finished" if run.exit == 0 else f"exit {run.exit}: {last_line(run.output)}"
    return Baseline(run, findings, list(request_keys(log).values()), _asked(log.messages))


def classify(run: Run, recorded: Counter, logs: list[str], clean: Baseline | None = None,
             stateless: bool = False) -> None:
    """Set run.verdict and run.why from run.exit (or a verdict of hung already set) and the run's logs. `clean`:
    the client's baseline run; `stateless`: the traffic is 2026-07-28's, where closing a request's stream cancels
    it."""
    log, findings = read(logs)
    messages = log.messages
    run.misses = list(dict.fromkeys(log.misses))
    fired = [s for s in log.seen if s.kind == records.EDIT]
    if run.verdict == HUNG:
        if fired:
            run.evidence = _after(fired[0], log)
            run.findings = _counted(run, findings, log, clean)
        return
    if not fired:
        run.verdict, run.why = NOT_REACHED, f"the client never sent what at={run.at} selects: the fault never fired"
        _note_misses(run)
        return
    run.evidence = _after(fired[0], log)
    run.findings = _counted(run, findings, log, clean)
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


def _counted(run: Run, findings: list[Finding], log: Log, clean: Baseline | None) -> list[Finding]:
    """The client's findings the fault caused; the others go to run.discounted with why."""
    counted = []
    baseline_rules = {f.rule for f in clean.findings} if clean is not None else set()
    for f in findings:
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


def _client_requests(log: Log) -> list[tuple[int, Seen]]:
    return [(i, s) for i, s in enumerate(log.seen) if s.kind == records.HTTP_REQUEST
            or (s.kind == records.STDIO_LINE and s.record.get("dir") == records.C2S
                and isinstance(s.record.get("msg"), dict) and "method" in s.record["msg"])]


def _key(record: dict) -> tuple:
    """A client request as two runs of the same client both send it: HTTP method, JSON-RPC method, whether it
    waits for an answer (has an id), whether it resumes a stream."""
    msg = record.get("msg") if isinstance(record.get("msg"), dict) else {}
    resumes = http.get(record.get("headers") or [], http.LAST_EVENT_ID) is not None
    return record.get("method", ""), msg.get("method"), "id" in msg, resumes


def request_keys(log: Log) -> dict[int, tuple]:
    """Each client request's key (_key) with its ordinal among its kind in its session: log index -> key. (A
    client that re-initialized counts its new session's requests afresh, as its clean run's one session did.)"""
    seen: Counter = Counter()
    out = {}
    for i, s in _client_requests(log):
        kind = _key(s.record)
        session = http.get(s.record.get("headers") or [], http.SESSION_ID)
        seen[(session, kind)] += 1
        out[i] = (*kind, seen[(session, kind)])
    return out


def _in_flight(finding: Finding, log: Log, clean: Baseline) -> bool:
    """Every request that carried the dead session was one the client sends whatever the answers: one that waits
    for no answer (the standalone GET stream, a notification) and that its clean run sends too, the same one in the
    same order. Such a request races the fault (rmcp's standalone GET leaves milliseconds after the replay's
    instant 404, as it does in the clean run); it is not reuse of a dead session."""
    keys = request_keys(log)
    first = finding.t if finding.t is not None else 0.0  # the first request on the dead session
    reuses = [keys[i] for i, s in enumerate(log.seen) if i in keys and s.kind == records.HTTP_REQUEST
              and s.record.get("method") in ("POST", "GET") and s.t >= first
              and http.get(s.record.get("headers") or [], http.SESSION_ID) == finding.session]
    # key: (HTTP method, JSON-RPC method, has an id, resumes, ordinal)
    unanswered = all((k[0] == "GET" and not k[3]) or (k[0] == "POST" and not k[2]) for k in reuses)
    return bool(reuses) and unanswered and all(k in clean.sent for k in reuses)


def _after(edit: Seen, log: Log) -> str:
    """What the client sent after the fault, in order, repeats counted: the cell's evidence."""
    said: list[list] = []
    for s in log.seen:
        if s.t < edit.t or s is edit or not (_from_client(s) and s.kind != records.EDIT):
            continue
        r = s.record
        msg = r.get("msg") if isinstance(r.get("msg"), dict) else {}
        what = msg.get("method") or ("response" if msg else "")
        if s.kind == records.HTTP_REQUEST:
            resume = " Last-Event-ID" if http.get(r.get("headers") or [], http.LAST_EVENT_ID) is not None else ""
            what = f"{r.get('method')} {what}".strip() + resume
        if said and said[-1][0] == what:
            said[-1][1] += 1
        else:
            said.append([what, 1])
    text = ", ".join(w + (f" ×{n}" if n > 1 else "") for w, n in said[:12])
    return ("sent after the fault: " + text + (", …" if len(said) > 12 else "")) if said else \
        "sent nothing after the fault"


def _evidence(fault: Fault, edit: Seen, log: Log, messages: list[tuple[Seen, dict]],
              stateless: bool = False) -> tuple[str | None, str | None]:
    """(what a recovered client would have done and this one did not, or None; a protocol fault in the recovery,
    or None) after the edit fired."""
    if fault.expects == catalogue.FALL_BACK:
        return fallback_missing([s.record for s in log.seen]), None
    after, fired = edit.t, edit.record
    later = [(s, m) for s, m in messages if s.t >= after and _from_client(s)]

    def is_faulted(seen: Seen, msg: dict) -> bool:  # the request the edit answered: by its exchange, or its id
        if "exchange" in fired:
            return seen.kind == records.HTTP_REQUEST and seen.record.get("exchange") == fired["exchange"]
        return seen.record.get("dir") == records.C2S and msg.get("id") == fired.get("request_id")

    faulted_at = next(((s, m) for s, m in messages if "method" in m and "id" in m and is_faulted(s, m)), None)
    faulted = faulted_at[1] if faulted_at else None
    method = faulted.get("method") if faulted else None
    if fault.expects == catalogue.REINITIALIZE:
        if not log.superseded_after(after):
            return "no new initialize after the fault", None
    elif fault.expects == catalogue.RESUME:
        if not any(s.kind == records.HTTP_REQUEST and s.record.get("method") == "GET" and s.t >= after
                   and http.get(s.record.get("headers") or [], http.LAST_EVENT_ID) is not None for s in log.seen):
            return "no GET with Last-Event-ID after the cut stream", None
    elif fault.expects in (catalogue.RETRY_AFTER, catalogue.RESEND):
        again = [s for s, m in later if "id" in m and m is not faulted and faulted is not None
                 and same_request(faulted, m, meta=no_meta)]
        if not again:
            return f"{method or 'the request'} never sent again", None
        wait = _retry_after(fired, log) if fault.expects == catalogue.RETRY_AFTER else None
        if wait is not None and again[0].t - after < wait:
            return None, (f"retry-before-retry-after: sent again {again[0].t - after:.2f}s after a status that "
                          f"said Retry-After: {wait:g}")
    elif fault.expects == catalogue.CANCEL:
        call = _call(log, faulted_at)
        # 2026-07-28: "closing the stream is the cancellation"; before it, "Disconnection SHOULD NOT be
        # interpreted as the client cancelling"
        cancelled = call is not None and call.cancel is not None
        closed = stateless and call is not None and call.exchange is not None \
            and call.exchange.end == records.CLIENT_DISCONNECTED
        if not (cancelled or closed):
            how = "neither notifications/cancelled nor its stream closed" if stateless else \
                "no notifications/cancelled for it (a disconnect is not a cancellation before 2026-07-28)"
            return f"the request was never cancelled: {how}", None
    return None, None


def _call(log: Log, faulted_at: tuple[Seen, dict] | None) -> Call | None:
    """The faulted request as the model settled it (whether the client cancelled it, how its stream ended)."""
    if faulted_at is None:
        return None
    seen, msg = faulted_at
    return next((c for c in log.calls if c.tape == seen.tape and c.seq == seen.seq and c.id == msg.get("id")),
                None)


def _retry_after(edit: dict, log: Log) -> float | None:
    """The Retry-After (in seconds) of the status the edit answered with, as the log shows the client got it."""
    for s in log.seen:
        if s.kind == records.HTTP_RESPONSE and s.record.get("exchange") == edit.get("exchange"):
            value = http.get(s.record.get("headers") or (), "retry-after")
            if value is not None and str(value).strip().isdigit():
                return float(value)
    return None


def _left_out(expected: Counter, messages: list[tuple[Seen, dict]]) -> str:
    """The requests the client did not ask for (by method and count) that the recording (or the clean run) has:
    the rest of the conversation did not go as recorded."""
    asked = _asked(messages)
    short = [f"{method} ×{count - asked[method]}" for method, count in expected.items() if asked[method] < count]
    return f"never asked for {', '.join(short)}" if short else ""
