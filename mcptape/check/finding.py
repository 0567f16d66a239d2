"""A finding and how one is made: whom it blames (the registry says), the record or call it is about, the
severity its requirement has in the session's revision. The rules (rules.py) and the judges beside them build theirs
here."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..model import Call, Seen, Transition
from ..tape import records
from .requirements import REGISTRY

SEVERITIES = ("error", "warning", "info")

# Whom each rule blames (docs/rules.md): a side, nobody, or the sender or receiver of what the finding is about (its
# `dir`: the request's direction for a finding about a call, the record's for one about a message). The registry says.
CLIENT, SERVER, NONE, SENDER, RECEIVER = "client", "server", "none", "sender", "receiver"
BLAMES = {requirement.id: requirement.binds for requirement in REGISTRY.values()}
SIDES = {records.C2S: (CLIENT, SERVER), records.S2C: (SERVER, CLIENT)}  # dir -> (sender, receiver)


@dataclass
class Finding:
    rule: str
    severity: str
    tape: str
    session: str | None
    dir: str | None
    request_id: Any
    method: str | None
    message: str
    spec: str
    record: int | None
    t: float | None
    injected: bool = False
    blames: str = ""  # client | server | none: from BLAMES, unless given
    transition: dict | None = None  # a lifecycle finding: the session transition it rests on (kind, record, …)

    def __post_init__(self) -> None:
        if not self.blames:
            self.blames = blamed(self.rule, self.dir, self.injected)

    def to_json(self) -> dict:
        return asdict(self)


def blamed(rule: str, direction: str | None, injected: bool) -> str:
    """The side a finding blames. `injected` excuses only a real server, for what mcptape made up: a client's
    reaction to an injected answer (no re-initialize after an injected 404) is still the client's doing."""
    who = BLAMES.get(rule, NONE)
    if who in (SENDER, RECEIVER):
        sides = SIDES.get(direction)
        who = NONE if sides is None else sides[0] if who == SENDER else sides[1]
    return NONE if injected and who == SERVER else who


def about_call(rule: str, severity: str, call: Call, message: str, clause: str,
               injected: bool | None = None) -> Finding:
    return Finding(rule, severity, call.tape, call.session.label, call.dir, call.id, call.method, message, clause,
                   call.seq, call.t, _rests_on_edit(call) if injected is None else injected)


def _rests_on_edit(call: Call) -> bool:
    """The call was sent, or answered, through an exchange an edit changed."""
    return call.injected or (call.exchange is not None and call.exchange.injected)


def about_record(rule: str, severity: str, seen: Seen, message: str, clause: str, method: Any = None,
                 request_id: Any = None, direction: str | None = None, transition: Transition | None = None) -> Finding:
    ex = seen.exchange
    method = method if isinstance(method, str) else None  # a message read off the wire may have any method
    return Finding(rule, severity, seen.tape, seen.session.label if seen.session else (ex.sent_session if ex else None),
                   direction or seen.record.get("dir"), request_id, method, message, clause, seen.seq, seen.t,
                   bool(seen.record.get("injected")) or (transition is not None and transition.injected),
                   transition=transition.to_json() if transition is not None else None)


def broke(rule: str, seen: Seen, message: str, revision: str | None = None, method: Any = None,
          request_id: Any = None, direction: str | None = None) -> list[Finding]:
    """A finding that `seen` breaks a requirement of the registry, at the severity its level has in `revision` (the
    session's unless given); none where the requirement does not hold (another revision or transport)."""
    requirement = REGISTRY[rule]
    session = seen.session
    revision = revision or (session.version if session is not None else None)
    if not requirement.holds(revision, session.transport if session is not None else None):
        return []
    return [about_record(rule, requirement.severity(revision), seen, message, requirement.clause, method,
                         request_id, direction)]


def broke_call(rule: str, call: Call, message: str) -> list[Finding]:
    """A finding that a settled call breaks a requirement, as `broke` does for a record."""
    requirement = REGISTRY[rule]
    revision = call.session.version
    if not requirement.holds(revision, call.session.transport):
        return []
    return [about_call(rule, requirement.severity(revision), call, message, requirement.clause)]


def on_protocol_channel(seen: Seen) -> bool:
    """Records that must carry JSON-RPC: a stdio line, a request to the MCP endpoint (session or not yet), an
    event or a 2xx answer on it; not stderr, not an HTTP error page, not the legacy 202 'Accepted'."""
    kind = seen.kind
    if kind == records.STDIO_LINE:
        return True
    ex = seen.exchange
    if ex is None or not ex.mcp:
        return False
    if kind == records.HTTP_RESPONSE:
        return ex.status is not None and 200 <= ex.status < 300 and ex.status != 202
    return kind in (records.HTTP_REQUEST, records.SSE_EVENT)
