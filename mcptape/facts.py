"""What the analysis model tells its observers, as small frozen structs (as h11's events): the facts it noticed on a
record (`Seen.notes`), and how a settled call ended (`Outcome`). Readers match on the classes, never on strings:

    for fact in seen.notes:
        match fact:
            case SessionTransition(session, step): ...
            case OrphanResponse(msg): ...

A fact about a call holds the Call as the model keeps it once settled: its messages dropped (model.Call), its
method, ids, places and `outcome` kept.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from .lifecycle import Transition
    from .conversation import Call, Session


class Fact:
    """Something the model noticed on a record.

    Each fact is a frozen msgspec Struct (equal by value, hashable when its fields are, matched by position):
    msgspec makes a Struct class in C, where @dataclass compiles the methods' source at import, 0.3 ms a class, which
    every command pays at its start (`mcptape replay` most of all: bench/replay_speed.py)."""

    __slots__ = ()


class SessionTransition(msgspec.Struct, Fact, frozen=True):
    """A step of a session's life this record made (opened, refused, deleted, expired, ended, superseded)."""

    session: Session
    step: Transition


class DuplicateRequest(msgspec.Struct, Fact, frozen=True):
    """A request sent with the id of one in flight (or, before 2026-07-28, of one already used in the session)."""

    earlier: Call


class OrphanResponse(msgspec.Struct, Fact, frozen=True):
    """An answer whose id matches no request in flight, nor one recently settled."""

    msg: dict


class LateResponse(msgspec.Struct, Fact, frozen=True):
    """A second answer to a call that already had its final one."""

    call: Call


class ProgressAfterResponse(msgspec.Struct, Fact, frozen=True):
    """A progress notification for a call that was already answered."""

    call: Call


class ResponseOnGetStream(msgspec.Struct, Fact, frozen=True):
    """An answer on a session's standalone GET stream, which is no resumed stream."""

    msg: dict


class Malformed(msgspec.Struct, Fact, frozen=True):
    """What the recorder found wrong with the record's message (its `problem`)."""

    problem: Any


class Outcome(str, Enum):
    """How a call ended, decided once when it settles (`Call.outcome`, by outcome_of). Each reader says it in its
    own words."""

    RESULT = "result"
    TOOL_ERROR = "tool error"  # a result with isError: the tool failed, the protocol did not
    ERROR = "error"  # a JSON-RPC error
    REJECTED = "rejected"  # an HTTP error status refused the request, with no JSON-RPC answer
    CANCELLED = "cancelled"  # notifications/cancelled, and no answer
    UNANSWERED = "unanswered"  # no answer when the tape (or the history) ended

    @property
    def answered(self) -> bool:
        return self in _ANSWERED


_RESULT, _TOOL_ERROR, _ERROR = Outcome.RESULT, Outcome.TOOL_ERROR, Outcome.ERROR
_ANSWERED = frozenset({_RESULT, _TOOL_ERROR, _ERROR})


def outcome_of(call: Call) -> Outcome:
    """How a call ended, while it still holds its messages: the model settles each call with this, once (it runs
    for every call of a tape: plain lookups, no call but one)."""
    response = call.response
    if response is not None:
        if "error" in response:
            return _ERROR
        result = response.get("result")
        return _TOOL_ERROR if type(result) is dict and result.get("isError") is True else _RESULT
    if call.rejected_status is not None:
        return Outcome.REJECTED
    return Outcome.UNANSWERED if call.cancel is None else Outcome.CANCELLED
