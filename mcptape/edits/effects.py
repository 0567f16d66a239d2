"""What a decided Plan does, and what its `edit` record says: the one place that turns a plan into an effect, for
the four places that apply edits (the HTTP and stdio replays, the mitmproxy addon, the live stdio wrapper), which
then only do the I/O.

A plan acts at up to three points of an exchange:
- before the answer is sought: `hold` (a delay);
- instead of the answer: `instead` (reset the connection, an HTTP answer of ours, a JSON-RPC error);
- on the answer as it goes out: `edit_events` (events.py: its SSE events or stdio messages, edited, as
  EditedEvents) and `edit_body` (a JSON-framed answer: withheld, or malformed).
Live, where the real answer is only met as it passes, `announce` says up front what the edits will do.
Every effect carries `detail`, the line its edit record says, and `withheld`, what the client never gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..tape import json_form
from ..wire import http, jsonrpc
from .decide import Editor, Plan, describe
from .events import ERROR_INSTEAD, malform

RESET_ENDED = "the connection was reset by an edit"  # the end record of a connection an edit reset
WITHHELD_ENDED = "the response was withheld by an edit"  # the end record of a request an edit left open


@dataclass(frozen=True, kw_only=True)
class Effect:
    """What the adapter does for a plan at one point of an exchange (the subclass says what), and what it logs."""

    detail: str  # what was done, for the edit record
    withheld: tuple = ()  # messages the client never gets (kept in the record)


@dataclass(frozen=True)
class Hold(Effect):
    """Hold the response back this long."""

    seconds: float


class Reset(Effect):
    """Abort the connection instead of answering."""


@dataclass(frozen=True)
class Reply(Effect):
    """An answer of ours in place of the recorded (or real) one. A JSON-RPC error is 200 with the error as its JSON
    body; on stdio the body is the line."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass(frozen=True)
class Rewrite(Effect):
    """The answer's JSON body, replaced by these bytes."""

    body: bytes


class Withhold(Effect):
    """No response at all: the request stays open."""


class Exit(Effect):
    """The server exits instead of answering: on stdio its stdout closes; a replay over HTTP drops the
    connection."""


class Announce(Effect):
    """Nothing to do yet: the edits act on the real answer as it passes; the record says now what they will do."""


def hold(plan: Plan | None) -> Hold | None:
    """The response held back before anything else happens to it (an answer of ours comes late, too)."""
    if not plan or not plan.delay:
        return None
    return Hold(plan.delay, detail=f"delayed the response by {plan.delay:g} s")


def instead(plan: Plan | None, channel: bool = False) -> Exit | Reset | Reply | None:
    """An answer of ours in place of the recorded (or real) one, if the plan has one. `channel`: the answer comes
    back on a legacy session's SSE channel, where an error stands in for the call's final response alone
    (edit_events does it there)."""
    if not plan:
        return None
    if plan.exit:
        return Exit(detail="the server exited instead of answering")
    if plan.reset:
        return Reset(detail="reset the connection")
    if plan.status is not None:
        status, headers, body = plan.status
        dead = ": the session is dead" if plan.dead_session else ""
        return Reply(status, headers, body, detail=f"answered HTTP {status} instead{dead}")
    if plan.error is not None and not channel:
        body = json_form.dumps(plan.error).encode()
        return Reply(200, [("content-type", http.JSON)], body, detail=ERROR_INSTEAD)
    return None


def delivers(plan: Plan | None) -> bool:
    """Whether the recorded (or real) answer reaches the client as it was. When it does not (an answer of ours
    stands in for it, or it is withheld), a replay leaves it unused, so a retry gets it."""
    return not (plan and (plan.replaces_answer or plan.drop))


def withhold(msg: Any) -> Withhold:
    """The whole response held back; `msg` is what it carried."""
    return Withhold(detail="withheld the response; the request stays open", withheld=(msg,))


def edit_body(editor: Editor, plan: Plan, request: Any, body: Any) -> Withhold | Rewrite | None:
    """The event edits on an answer framed as one JSON body: drop withholds it, malformed breaks it; the edits
    that need an event stream (drop-event, close-stream, duplicate) are not applied, and may fire again."""
    if plan.drop:
        return withhold(body)
    editor.not_applied(plan, ("drop-event", "close-stream", "duplicate"),
                       f"the answer to {jsonrpc.describe(request)} is JSON-framed, not an SSE stream")
    if plan.malformed and isinstance(body, dict):
        return Rewrite(malform(body, plan.malformed).encode(),
                       detail=f"sent the response malformed ({plan.malformed})")
    return None


def announce(plan: Plan, where: str = "") -> Announce | None:
    """Live: what the edits that act on the real answer as it passes (a delay, an error on a channel, the event
    edits) will do. `where`: where they act, when it is not the answer's own stream."""
    if plan.delay or plan.edits_messages:
        return Announce(detail=describe(plan) + where)
    return None


# what a legacy session's channel takes from a POST's plan: its error and event edits
_ON_CHANNEL = ("error", "drop", "drop-event", "duplicate", "malformed")


def on_channel(editor: Editor, plan: Plan, channel_seen: bool, answered: bool) -> Announce | None:
    """Live, on legacy HTTP+SSE: a POST's answer comes back on its session's SSE channel, where its error and event
    edits act, if the proxy saw that channel and the message gets an answer at all (`answered`); otherwise they
    are not applied, and leave the plan. What the record says the rest will do, if anything."""
    if plan.edits_messages and not (channel_seen and answered):
        editor.not_applied(plan, _ON_CHANNEL, "it selected a message that gets no answer" if channel_seen else
                           "the legacy session's SSE channel was not seen, so its answers cannot be edited")
        plan.error, plan.drop, plan.drop_event, plan.duplicate, plan.malformed = None, False, None, False, None
    return announce(plan, " (on the session's SSE channel)")


def not_on_compressed_stream(editor: Editor, plan: Plan) -> None:
    """Live, the event edits re-encode a stream event by event: a compressed stream cannot take them."""
    editor.not_applied(plan, ("drop", "drop-event", "duplicate", "malformed"),
                       "the event stream is compressed; mcptape cannot edit it live")
