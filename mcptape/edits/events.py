"""Edits that change a response's messages as they go out: a dropped event, the final response withheld,
sent twice or malformed; a stream closed early for a resume. Each change is noted in the words the edit record
says (effects.py says the rest)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..tape import json_form
from ..wire import jsonrpc
from .decide import Plan

ERROR_INSTEAD = "answered with a JSON-RPC error instead"
NOTHING_TO_CHANGE = "nothing to change on this answer"


def final_response(msg: Any, request_id: Any) -> bool:
    return (isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg)
            and jsonrpc.id_key(msg.get("id")) == jsonrpc.id_key(request_id))


def malform(msg: dict, kind: str) -> str:
    """The final response as text, broken the way asked."""
    text = json_form.dumps(msg)
    if kind == "truncate":
        return text[: max(1, len(text) // 2)]
    if kind == "not-json":
        return "mcptape: this is not JSON"
    wrong = {**msg, "id": f"mcptape-wrong-id-{msg.get('id')}"}
    return json_form.dumps(wrong)


class StreamEditor:
    """The event-level edits of one response, applied event by event as the events pass (live, or replayed):
    `feed` takes one SSE event record (or a stdio message as {"msg": …}) and returns what the client gets instead.
    `exchange`: the HTTP exchange the edit fired on, when the answer comes back on another (a legacy channel)."""

    def __init__(self, plan: Plan, request_id: Any, exchange: int | None = None) -> None:
        self.plan = plan
        self.request_id = request_id
        self.exchange = exchange
        self.count = 0
        self.withheld: list[Any] = []
        self.notes: list[str] = []

    def editor_for(self, event: dict) -> StreamEditor:
        return self  # every event of its stream belongs to the one response

    def feed(self, event: dict) -> list[dict]:
        plan = self.plan
        self.count += 1
        msg = event.get("msg")
        is_final = final_response(msg, self.request_id)
        if is_final and plan.error is not None:  # where the answer cannot be replaced whole (stdio, a channel)
            self.withheld.append(msg)
            self.notes.append(ERROR_INSTEAD)
            return [{**event, "msg": {**plan.error, "id": msg.get("id")}}]
        if plan.drop_event == self.count:
            self.withheld.append(msg if "msg" in event else event.get("data"))
            self.notes.append(f"dropped SSE event {self.count}")
            return []
        if is_final and plan.drop:
            self.withheld.append(msg)
            self.notes.append("withheld the final response")
            return []
        if is_final and plan.malformed:
            event = {k: v for k, v in event.items() if k != "msg"}
            event["data"] = malform(msg, plan.malformed)
            self.notes.append(f"sent the final response malformed ({plan.malformed})")
        if is_final and plan.duplicate:
            self.notes.append("sent the final response twice")
            return [event, {**event, "id": f"{event['id']}-again"} if "id" in event else event]
        return [event]


class ChannelEditor:
    """A legacy (2024-11-05) session's SSE channel, where the answers to all of its POSTs come back. The POSTs an
    edit fired on are registered with `expect`; their messages (the final response by id, progress by token) go
    through that request's StreamEditor, everything else passes as it came. It learns its session from the
    channel's `endpoint` event and says so through `on_session`."""

    def __init__(self, on_session: Callable[[str, ChannelEditor], None]) -> None:
        self.on_session = on_session
        self.requests: dict[Any, StreamEditor] = {}  # request id -> its editor
        self.tokens: dict[Any, StreamEditor] = {}  # progress token -> its editor

    def expect(self, request: dict, plan: Plan, exchange: int) -> None:
        editor = StreamEditor(plan, request.get("id"), exchange)
        self.requests[jsonrpc.id_key(request.get("id"))] = editor
        if (token := jsonrpc.progress_token(request)) is not None:
            self.tokens[jsonrpc.id_key(token)] = editor

    def editor_for(self, event: dict) -> StreamEditor | None:
        if event.get("event") == "endpoint" and event.get("session"):
            self.on_session(event["session"], self)
        msg = event.get("msg")
        kind = jsonrpc.kind(msg)
        if kind in ("response", "error"):
            editor = self.requests.pop(jsonrpc.id_key(msg.get("id")), None)  # answered: later ids are not its own
            if editor is not None:
                self.tokens = {token: e for token, e in self.tokens.items() if e is not editor}
            return editor
        if kind == "notification" and msg.get("method") == "notifications/progress":
            return self.tokens.get(jsonrpc.id_key(jsonrpc.progress_of(msg)))
        return None


@dataclass
class EditedEvents:
    """A response's SSE events after the edits: what to send, and what the edits held back. The effect of a plan
    on a response's messages, with an effect's `detail` and `withheld` (effects.py)."""

    events: list[dict]
    rest: list[dict] | None = None  # close-stream: the events a resume gets (None: the stream was not cut)
    withheld: list[Any] = field(default_factory=list)  # messages the client never gets
    notes: list[str] = field(default_factory=list)  # what was done, for the log

    @property
    def detail(self) -> str:
        return "; ".join(self.notes) or NOTHING_TO_CHANGE


def edit_events(events: list[dict], plan: Plan, request_id: Any, stream: str) -> EditedEvents:
    """Apply the event-level edits to a whole response's SSE events (or stdio messages as {"msg": …}). `stream`
    names the stream when event ids have to be made up for a resume."""
    editor = StreamEditor(plan, request_id)
    out = [sent for event in events for sent in editor.feed(event)]
    edited = EditedEvents(out, None, editor.withheld, editor.notes)
    if plan.close_after is not None:
        kept = [e for e in out[: plan.close_after] if not final_response(e.get("msg"), request_id)]
        edited.rest = [e for e in out if all(e is not k for k in kept)]
        if not any("id" in e for e in out):
            kept = [{**e, "id": f"{stream}-{i}"} for i, e in enumerate(kept, 1)]
            kept.insert(0, {"id": f"{stream}-0", "data": ""})
            edited.notes.append("the tape has no SSE event ids: added them and a priming event for the resume")
        edited.events = kept
        edited.notes.append(f"closed the stream after {plan.close_after} events, without the final response; "
                            "a Last-Event-ID resume gets the rest")
    return edited
