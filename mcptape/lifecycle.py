"""A session's life, in one place (as h11's `_state.py`): the steps that move it, the states they move it between,
and what an HTTP answer says of it. The model reads the records and asks this table; check, show, diff, replay and
the report read the `Life` a session ends up with (docs/sessions.md).

A step the table has no entry for, from the state the session is in, does not happen: a session opens once, dies
once (its first refusal, deletion or expiry: how the server goes on answering it is for the rules to judge), ends
once, and only a dead one is superseded.
"""

from __future__ import annotations

import re
from enum import Enum

# The steps (Transition.kind), as show, check and the report name them:
OPENED = "opened"  # initialize answered with its id, a legacy endpoint announced, a stdio initialize answered
REFUSED = "refused"  # a request carrying it got a status that says it is gone (the server's own word)
DELETED = "deleted"  # the client's DELETE was answered 2xx
EXPIRED = "expired"  # an edit declared it gone (an injected answer): mcptape's doing, not the server's
ENDED = "ended"  # the stdio server exited, the legacy channel closed
SUPERSEDED = "superseded"  # dead, and the client then started a new session (initialize without a session id)
DEATHS = (REFUSED, DELETED, EXPIRED)


class State(str, Enum):
    NEW = "new"  # known by its id alone: nothing in the tape opened it (yet)
    OPEN = "open"
    DEAD = "dead"  # refused, deleted or expired: the client must start anew
    SUPERSEDED = "superseded"  # the client did
    ENDED = "ended"  # the process exited, the channel closed


# (state, step) -> the state it moves to. Everything that moves a session is here.
TABLE: dict[tuple[State, str], State] = {
    (State.NEW, OPENED): State.OPEN,
    **{(state, death): State.DEAD for state in (State.NEW, State.OPEN) for death in DEATHS},
    (State.NEW, ENDED): State.ENDED,
    (State.OPEN, ENDED): State.ENDED,
    (State.DEAD, SUPERSEDED): State.SUPERSEDED,
}
_KEPT_AS = {OPENED: "opened", REFUSED: "dead", DELETED: "dead", EXPIRED: "dead", ENDED: "ended",
            SUPERSEDED: "superseded"}

# Statuses a server refuses a session with when it does not say 404 (what the spec asks); 410 says "gone" itself.
_REFUSALS = (400, 401, 403, 410)
# The only evidence left when a session the tape thinks alive is refused with 400/401/403: how the server words
# it. Matched broadly: "Session not found", "Invalid or expired session", "No valid session ID provided",
# "Session terminated", "unknown session", …
_SESSION_GONE = re.compile(r"session.{0,40}(not found|expired|invalid|unknown|terminated|no longer|closed|gone|"
                           r"does not exist|no valid)|(unknown|invalid|expired|stale|terminated|closed|no valid)"
                           r".{0,20}session", re.IGNORECASE | re.DOTALL)


class Transition:
    """One step of a session's life, where it happened: the record, its time, the HTTP status that made it (if
    any), and whether an edit made it (an injected answer, or a request an edit selected). Never changed once made.

    (Plain classes, as conversation.py's: @dataclass would compile their methods' source at every start.)"""

    __slots__ = ("kind", "seq", "t", "status", "injected")
    kind: str
    seq: int
    t: float
    status: int | None
    injected: bool

    def __init__(self, kind: str, seq: int, t: float, status: int | None = None, injected: bool = False) -> None:
        self.kind, self.seq, self.t, self.status, self.injected = kind, seq, t, status, injected

    def __repr__(self) -> str:
        return f"Transition({self.kind!r}, seq={self.seq}, status={self.status}, injected={self.injected})"

    def to_json(self) -> dict:
        return {"kind": self.kind, "record": self.seq, "status": self.status, "injected": self.injected}


class Life:
    """Where a session stands, and the step that took it to each stage (the first of each kind)."""

    __slots__ = ("state", "opened", "dead", "ended", "superseded", "refused_with", "unknown", "midway")
    state: State
    opened: Transition | None
    dead: Transition | None  # refused, deleted or expired
    ended: Transition | None
    superseded: Transition | None
    refused_with: int | None  # the status it was refused with once gone (a replay answers so)
    # first met on a request, never opened in the tape: `unknown` when the tape holds its conversations from their
    # start (the server should not know the id either), `midway` when the capture began after it opened
    unknown: bool
    midway: bool

    def __init__(self) -> None:
        self.state = State.NEW
        self.opened = self.dead = self.ended = self.superseded = None
        self.refused_with = None
        self.unknown = self.midway = False

    def take(self, step: Transition) -> bool:
        """Take a step if the table has it from here; whether it was taken."""
        to = TABLE.get((self.state, step.kind))
        if to is None:
            return False
        self.state = to
        setattr(self, _KEPT_AS[step.kind], step)
        if step.kind in (REFUSED, EXPIRED):
            self.refused_with = step.status
        return True

    def met(self, started: bool) -> None:
        """A request carried it: one never opened is unknown (the tape holds the conversation's start) or was
        opened before the capture began."""
        if self.opened is None and not self.unknown and not self.midway:
            if started:
                self.unknown = True
            else:
                self.midway = True

    def answer(self, method: str, status: int, injected: bool, response: dict) -> str | None:
        """The step an HTTP answer to a request that carried the session makes, if any (a DELETE accepted, a
        status that says it is gone); once it is dead, only the status it goes on being refused with is kept."""
        if self.dead is not None:
            if status >= 400 and self.refused_with is None:
                self.refused_with = status
            return None
        if method == "DELETE" and 200 <= status < 300:
            return DELETED
        if status == 404 or status == 410 or (status in _REFUSALS and (self.unknown or _says_gone(response))):
            return EXPIRED if injected else REFUSED  # (an unknown id refused at all: the server does not know it)
        return None


def refusal_text(response: dict) -> str:
    """What an HTTP refusal said: its JSON-RPC error's message, else its text body (the start of it)."""
    body = response.get("msg")
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"]).strip()
    raw = response.get("raw")
    return raw[:2000].decode("utf-8", "replace").strip() if isinstance(raw, bytes) else ""


def _says_gone(response: dict) -> bool:
    """The server's own words, where they are the only evidence."""
    return bool(_SESSION_GONE.search(refusal_text(response)))
