"""The replay as a legacy HTTP+SSE server (2024-11-05): a GET opens the session's channel, whose first event names
where to POST (with a fresh session id); each POST is accepted as recorded, and its answers go out on the channel,
where its edits change them (as `mcptape record` edits them live)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine

from .. import edits
from ..wire import http, jsonrpc
from .connection import Exchange, Pace, Request
from .serve import Replayer


class Legacy:
    def __init__(self, replayer: Replayer, pace: Pace | None) -> None:
        self.replayer = replayer
        self.pace = pace
        self._channels: dict[str, Exchange] = {}  # live session id -> its channel (the GET stream)

    def handle(self, req: Request, ex: Exchange, plan: edits.Plan | None) -> Coroutine | None:
        if req.method == "GET":
            return self._channel(ex)
        return self._post(req, ex, plan)

    def end_streams(self, session_id: str) -> None:
        """A session an edit expired keeps its channel, as it does live (mitmproxy cannot end a stream in transit):
        its POSTs get the edit's status."""

    async def _channel(self, ex: Exchange) -> None:
        session = self.replayer.open_session()
        opened = self.replayer.resume(None, session)
        events, head = [], [("content-type", http.SSE), ("cache-control", "no-cache")]
        for record in opened.events if opened else []:
            if record.get("event") == "endpoint":
                recorded_id = session.recorded.label if session.recorded else ""
                events.append({**record, "data": record["data"].replace(recorded_id, session.id)})
                break
            events.append(record)
        await ex.send_events(200, head, events, 0.0, self.pace)
        self._channels[session.id] = ex
        await ex.stay_open(asyncio.Event(), 200, head)  # until the client leaves
        self._channels.pop(session.id, None)

    def _post(self, req: Request, ex: Exchange, plan: edits.Plan | None) -> None:
        live_id = http.legacy_session(http.query_pairs(req.target)) or ""
        session = self.replayer.sessions.get(live_id)
        channel = self._channels.get(live_id)
        if session is None or channel is None:
            return ex.send(404, [("content-type", "text/plain")], b"Could not find session")
        msg = req.json()[0]
        if jsonrpc.kind(msg) != "request":
            return ex.send(202, [("content-type", "text/plain")], b"Accepted")
        outcome = self.replayer.answer(msg, session, consume=edits.delivers(plan))
        answer = outcome.answer
        if answer is None:  # a miss: its error goes out on the channel like any answer
            ex.send(202, [("content-type", "text/plain")], b"Accepted")
            return channel.emit([{"event": "message", "msg": outcome.body}])
        events = self.replayer.channel(answer, session)
        if plan and plan.edits_messages:  # the call's own messages (its progress, then its final response)
            change = edits.edit_events(events, plan, msg.get("id"), "")
            ex.edited(plan, change)  # logged while the POST's exchange is open
            events = [{**e, "injected": True} for e in change.events]  # the channel carries others' answers too
        ex.send_body(outcome.status, answer.served_headers, outcome.body, answer.raw)
        channel.emit(events)
