"""The gauntlet's fault catalogue: each fault a tape can carry, as an edit of the edit language, where it applies,
and what a client that recovers from it does, with where that expectation comes from.

The expectations are data the runner reads (`expects`), and the scorecard prints them beside each fault, so what
"recovered" means is never only in the code. Each fault also names the evidence it reads in the replay log
(`EVIDENCE`), and the findings it may cause although they rest on what mcptape injected (`judged_by`): a client
that never re-initializes after an injected 404 is the point of `expire-session`; a stream mcptape itself ended
after its malformed event is not. A fault a client cannot recover from by design is not in the catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..check import spec

# what a recovered client shows in its log after the fault (runner.py looks for it)
REINITIALIZE = "reinitialize"  # a new initialize, without the dead session id
RESUME = "resume"  # a GET with Last-Event-ID
RETRY_AFTER = "retry-after"  # the same request again, no sooner than Retry-After
RESEND = "resend"  # the same request again
CANCEL = "cancel"  # notifications/cancelled for the request (or, on 2026-07-28, its POST closed)
GO_ON = "go-on"  # nothing more than carrying on: the rest of the conversation as recorded
FALL_BACK = "fall-back"  # initialize after the refused probe (negotiation.py judges it from the model's calls)

# what the runner reads in the replay log for each kind of evidence (the scorecard prints it)
EVIDENCE = {
    REINITIALIZE: "an initialize request after the fault (and no request on the dead session but those already "
                  "in flight, as the clean run sends them)",
    RESUME: "a GET with Last-Event-ID after the cut stream",
    RETRY_AFTER: "the faulted request sent again (same method and params, _meta aside), and when, against the "
                 "Retry-After the client got",
    RESEND: "the faulted request sent again (same method and params, _meta aside)",
    CANCEL: "notifications/cancelled for the request after the fault; on 2026-07-28 the request's stream closed by "
            "the client counts too (a disconnect does not before it: \"Disconnection SHOULD NOT be interpreted as "
            "the client cancelling\")",
    GO_ON: "the rest of the conversation as the clean run had it",
    FALL_BACK: "an initialize after the refused server/discover (over stdio, to the server the client started "
               "again, if it did), or after a 400/404/405 the GET that looks for an HTTP+SSE endpoint event; then each "
               "method the recorded conversation has, once at least, but those of 2026-07-28 alone (the replay "
               "derives the handshake from the recorded discover answer)",
}
SESSION_RULES = ("no-reinitialize", "dead-session-reuse")

SESSION_CLAUSE = spec.REINITIALIZE  # quoted once, where check rests its rule on it
TIMEOUT_CLAUSE = ("MCP Lifecycle, Timeouts: when no response arrives in time \"the sender SHOULD issue a cancellation "
                  "notification for that request and stop waiting for a response\"")


@dataclass(frozen=True)
class Fault:
    name: str
    edit: str  # the edit's text; {at} is the position, {seconds} a delay past the run's timeout
    expects: str  # one of the evidence kinds above
    recovered: str  # what counts as recovered, in words
    source: str  # the spec clause, RFC, or "the spec is silent; this is common practice"
    session: bool = False  # only where sessions exist (Streamable HTTP of 2025-03-26 to 2025-11-25)
    resumable: bool = False  # only where streams resume (the same era; not legacy HTTP+SSE, not 2026-07-28)
    judged_by: tuple[str, ...] = ()  # findings that count although they rest on the injected answer
    probe: bool = False  # refuses the client's probe: one run, at negotiation.PROBE, only where the client probed
    stdio_only: bool = False  # only where the client starts its server (a process that can exit)

    @property
    def evidence(self) -> str:
        return EVIDENCE[self.expects]

    def text(self, at: str, timeout: float, after: int = 1) -> str:
        """The edit at a position; `after`: close-stream's cut, just past the answer's first event with an id."""
        return self.edit.format(at=at, seconds=f"{timeout * 2 + 1:g}", after=after)


FAULTS: tuple[Fault, ...] = (
    Fault("expire-session", "expire-session at={at}", REINITIALIZE,
          "a new initialize after the 404, then the rest of the conversation as recorded", SESSION_CLAUSE,
          session=True, judged_by=SESSION_RULES),
    Fault("session-not-found-401", "expire-session status=401 body=\"Session not found\" at={at}", REINITIALIZE,
          "a new initialize after the 401 that names the session, then the rest as recorded",
          "the spec is silent (it says 404); this is common practice: servers that answer a dead session with "
          "401 \"Session not found\" are met in the field, and clients treat it as the 404", session=True,
          judged_by=SESSION_RULES),
    Fault("restart-server", "restart-server at={at}", REINITIALIZE,
          "a new initialize after every session died at once, then the rest as recorded", SESSION_CLAUSE,
          session=True, judged_by=SESSION_RULES),
    Fault("status-429", "status code=429 at={at}", RETRY_AFTER,
          "the same request again, no sooner than the Retry-After the 429 carried, then the rest as recorded",
          "RFC 6585 §4 (429 Too Many Requests) and RFC 9110 §10.2.3 (Retry-After: how long to wait before a "
          "follow-up request)"),
    Fault("status-503", "status code=503 at={at}", RETRY_AFTER,
          "the same request again, no sooner than the Retry-After the 503 carried, then the rest as recorded",
          "RFC 9110 §15.6.4 (503 is temporary) and §10.2.3 (Retry-After)"),
    Fault("drop", "drop at={at}", CANCEL,
          "the client gives up on the request in time, cancels it, and carries on with the rest as recorded",
          TIMEOUT_CLAUSE),
    Fault("delay", "delay seconds={seconds} at={at}", CANCEL,
          "the response comes after the run's timeout: the client cancels the request in time and carries on",
          TIMEOUT_CLAUSE),
    Fault("close-stream", "close-stream after={after} at={at}", RESUME,
          "a GET with Last-Event-ID that resumes the cut stream, then the rest as recorded",
          "MCP 2025-03-26+ Streamable HTTP, Resumability and Redelivery: the client \"SHOULD issue an HTTP GET to "
          "the MCP endpoint, and include the Last-Event-ID header\"", resumable=True,
          judged_by=("no-resume-after-close",)),
    Fault("reset", "reset at={at}", RESEND,
          "the request sent again on a new connection, then the rest as recorded",
          "the spec is silent; this is common practice (a request cut off before any answer is retried)"),
    Fault("malformed", "malformed at={at}", GO_ON,
          "the bad response is refused as an error for that request, and the client carries on as recorded",
          "JSON-RPC 2.0 §5 (a response is a JSON object); the spec is silent on the client's recovery; this is "
          "common practice"),
    Fault("duplicate", "duplicate at={at}", GO_ON,
          "the second copy of the response is ignored and the client carries on as recorded",
          "JSON-RPC 2.0 §5 (one response per request); the spec is silent on the client's recovery; this is "
          "common practice"),
)
# An older server meets a 2026-07-28 auto client: each a way real servers refuse the probe (docs/negotiation.md).
FALL_BACK_HTTP = ("the client falls back to initialize on the same URL (or to HTTP+SSE, as the spec's detection "
                  "allows after this status), then the rest of the conversation as recorded")
FALL_BACK_ANY = "the client falls back to initialize, then the rest of the conversation as recorded"
FIELD_400 = ("met in the field: the Python SDK's auto mode fell back only on -32601/-32001 while legacy servers "
             "answer HTTP 400 (python-sdk PR #2950); the spec was changed so that a fallback is not keyed to one "
             "error code (spec PR #2844)")
FIELD_ODD = ("met in the field: the Rust SDK's auto mode broke against hosted servers that answered the probe in a "
             "way it did not expect (rust-sdk #1040)")
FAULTS += (
    Fault("probe-400", "refuse-discover status=400", FALL_BACK, FALL_BACK_HTTP,
          f"{spec.FALLBACK_HTTP}; {FIELD_400}", probe=True),
    Fault("probe-400-32600", "refuse-discover status=400 code=-32600", FALL_BACK, FALL_BACK_HTTP,
          f"{spec.FALLBACK_HTTP} (-32600 INVALID_REQUEST is JSON-RPC's, not a modern error); {FIELD_ODD}",
          probe=True),
    Fault("probe-400-32602", "refuse-discover status=400 code=-32602", FALL_BACK, FALL_BACK_HTTP,
          f"{spec.FALLBACK_HTTP}; {spec.FALLBACK_STDIO} (legacy servers answer \"commonly -32601 or -32602\"); "
          f"{FIELD_400}", probe=True),
    Fault("probe-404", 'refuse-discover status=404 body="Invalid session ID"', FALL_BACK, FALL_BACK_HTTP,
          f"{spec.SSE_DETECTION}; met in the field: a hosted server answering 404 \"Invalid session ID\" broke the "
          "C# SDK's connection (csharp-sdk PR #1766)", probe=True),
    Fault("probe-405", "refuse-discover status=405", FALL_BACK, FALL_BACK_HTTP,
          f"{spec.SSE_DETECTION} (a legacy HTTP+SSE endpoint answers a POST with 405)", probe=True),
    Fault("probe-32601", "refuse-discover code=-32601", FALL_BACK, FALL_BACK_ANY,
          f"{spec.FALLBACK_STDIO} (legacy servers answer \"commonly -32601 or -32602\"); {spec.FALLBACK_HTTP}",
          probe=True),
    Fault("probe-silent", "refuse-discover answer=none", FALL_BACK,
          "the client stops waiting for the probe in a reasonable time and falls back to initialize, then the rest "
          "as recorded",
          f"{spec.FALLBACK_STDIO} (legacy servers answer with \"implementation-defined errors [...] or not at all\")",
          probe=True),
    Fault("probe-exit", "refuse-discover answer=exit", FALL_BACK,
          "the client starts the server again and initializes it without probing, then the rest as recorded "
          "(a client that reports the dead server and exits is surfaced: that process cannot be fallen back on)",
          f"{spec.FALLBACK_STDIO}; met in the field: the Go SDK's stdio server exits on the probe, so no fallback "
          "is possible on that process (go-sdk #1177)", probe=True, stdio_only=True),
)
BY_NAME = {fault.name: fault for fault in FAULTS}


def placed(faults: list[Fault], positions: list[str]) -> list[tuple[Fault, str]]:
    """(fault, position) for each run: every position for most faults, the probe alone for a negotiation fault."""
    from .negotiation import PROBE

    return [(f, at) for f in faults for at in ([PROBE] if f.probe else positions)]


def pick(names: list[str] | None) -> list[Fault]:
    """The faults named (all of them when none are), in catalogue order; ValueError names an unknown one."""
    if not names:
        return list(FAULTS)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown fault {unknown[0]!r} (choose from {', '.join(BY_NAME)})")
    return [f for f in FAULTS if f.name in names]


NO_EVENT_IDS = ("the tape's SSE events carry no ids (the recorded server offered no resumption), so there is no "
                "Last-Event-ID to resume from")


def not_applicable(fault: Fault, *, session_era: bool, legacy: bool, stdio: bool,
                   event_ids: bool = True, probed: bool = False) -> str | None:
    """Why the fault cannot happen to this client on this tape, or None when it can. `event_ids`: the tape's SSE
    events carry ids (without them mcptape would have to make up a resumption the server never offered);
    `probed`: the tape's client probed with server/discover (negotiation.probed)."""
    from ..edits import EditError, check_transport, parse
    from .negotiation import NOT_PROBED

    if fault.probe and not probed:
        return NOT_PROBED
    if fault.stdio_only and not stdio:
        return "only a server the client starts can exit on the probe (over HTTP, see reset)"
    if fault.session and not session_era:
        return ("legacy HTTP+SSE has no session-expiry signal" if legacy
                else "no sessions: the tape's traffic is stateless")
    if fault.resumable and (legacy or not session_era):
        return "streams of this era do not resume (no Last-Event-ID)"
    if fault.resumable and not event_ids:
        return NO_EVENT_IDS
    try:
        check_transport([parse(fault.text("tools/call#1", 1))], stdio=stdio, legacy=legacy)
    except EditError as e:
        return str(e).partition(": ")[2] or str(e)
    return None
