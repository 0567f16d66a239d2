"""The replay as a Streamable HTTP server (2025-03-26 on): sessions (400 without an id, the recorded dead-session
status for an unknown or ended one, DELETE ends one), answers framed as recorded (SSE event by event with their
ids and retry fields, or JSON), GET streams (a Last-Event-ID resume, the standalone stream with each message at
its recorded point), and server-initiated requests that wait for the client's answer. 2026-07-28's stateless
traffic is served here too, without sessions. A stdio tape's answers are framed as a Streamable HTTP server frames
them (`_framed`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import msgspec

from .. import edits
from ..tape import records
from ..wire import http, jsonrpc
from .connection import Exchange, Pace, Request, json_bytes, then
from .serve import DERIVED_HANDSHAKE, LiveSession, Reply, Replayer


class Streamable:
    ANSWER_TIMEOUT = 30.0  # how long a server-initiated request waits for the client's answer

    def __init__(self, replayer: Replayer, pace: Pace | None) -> None:
        self.replayer = replayer
        self.pace = pace
        self.editor = replayer.editor
        self._cut: dict[str, list[dict]] = {}  # close-stream: last event id sent -> what a resume gets
        self._streams: dict[str, list[asyncio.Event]] = {}  # live session id -> its open streams and requests
        # live session id -> its standalone GET stream and the recorded events still waiting for their request
        self._standalone: dict[str, tuple[Exchange, list[dict]]] = {}
        self._waiting: dict[tuple, asyncio.Future] = {}  # (live session id, request id) -> the client's answer

    def handle(self, req: Request, ex: Exchange, plan: edits.Plan | None) -> Coroutine | None:
        session, refusal = self._session(req)
        if refusal is not None:
            return ex.send(*refusal)
        if req.method == "DELETE":
            if session is not None:
                self._end(session)
            return ex.send(200, [], b"")
        if req.method == "GET":
            return self._get_stream(ex, session, http.get(req.headers, http.LAST_EVENT_ID))
        if req.method != "POST":
            return ex.send(405, [("allow", "GET, POST, DELETE")], b"")
        msg, not_json = req.json()
        if not_json is not None:
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: {not_json}"}}
            return ex.send(400, [("content-type", http.JSON)], json_bytes(error))
        if jsonrpc.kind(msg) not in ("request", "notification"):
            if isinstance(msg, dict) and (waiter := self._waiting.pop(_waiter(session, msg.get("id")), None)):
                waiter.set_result(msg)  # the client answered a server-initiated request: the stream goes on
            return ex.send(202, [], b"")  # a response to the server, a batch: accepted
        if session is None and _initialize(msg) and self.replayer.discover is not None:
            session = self.replayer.open_derived_session()
            if self.editor is not None:
                self.editor.opened(session.id)
            ex.noted(DERIVED_HANDSHAKE, "answered initialize with a handshake derived from the recorded "
                                        "server/discover answer (the tape has no initialize), and opened a session")
        elif session is None and self.replayer.session_era and _initialize(msg):
            session = self.replayer.open_session()
            if self.editor is not None:
                self.editor.opened(session.id)
        # (no plan, no edit: delivered, without loading the edits' effects)
        outcome = self.replayer.answer(msg, session, consume=plan is None or edits.delivers(plan))
        if session is not None and outcome.answer is not None and outcome.answer.ends_session:
            self._end(session)  # the recorded server refused the session here: from now on it is gone
        elif session is not None and session.id in self._standalone:
            self._release_standalone(session)
        return self._serve(ex, outcome, plan, msg.get("id"), req.headers)

    def _end(self, session: LiveSession) -> None:
        session.ended = True
        if self.editor is not None:
            self.editor.ended(session.id)
        self.end_streams(session.id)

    def end_streams(self, session_id: str) -> None:
        """The session ended (deleted, or expired by an edit): so do its streams, as on a server."""
        for event in self._streams.pop(session_id, []):
            event.set()

    def _session(self, req: Request) -> tuple[LiveSession | None, tuple | None]:
        """The live session a request carries, or the answer that refuses it."""
        sent = http.get(req.headers, http.SESSION_ID)
        if not self.replayer.session_era:
            # a 2026-07-28 tape ignores a session id, as a server of that era does, unless it is one the replay
            # minted for a client that fell back to initialize (a derived handshake): that one lives and dies
            live = self.replayer.sessions.get(sent) if sent is not None else None
            if live is not None and live.ended:
                return None, (404, [("content-type", http.JSON)], json_bytes(edits.SESSION_NOT_FOUND))
            return live, None
        if sent is None:
            if _initialize(req.message):
                return None, None
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Bad Request: Missing session ID"}}
            return None, (400, [("content-type", http.JSON)], json_bytes(body))
        live = self.replayer.sessions.get(sent)
        if live is None or live.ended:
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}
            return None, (self.replayer.dead_status(), [("content-type", http.JSON)], json_bytes(body))
        return live, None

    # -- answers ---------------------------------------------------------------------------------------------------

    def _serve(self, ex: Exchange, outcome: Reply, plan: edits.Plan | None, request_id: Any,
               request_headers: http.Headers) -> Coroutine | None:
        """Most answers are written at once; one that has to wait (a paced or held stream, a server-initiated
        request, a request left open) comes back as a coroutine for the connection to await."""
        answer = outcome.answer
        headers = list(answer.served_headers) if answer else []
        if outcome.session is not None:
            headers.append((http.SESSION_ID, outcome.session.id))
        sse, unanswered = answer is not None and answer.sse, False
        if answer is not None and not answer.http_method:  # recorded over stdio: no framing of its own
            outcome, sse, unanswered = _framed(outcome, http.accepts(request_headers, http.SSE))
            headers.append(("content-type", http.SSE if sse else http.JSON))
        edited = plan if plan is not None and plan.changes_events and answer is not None else None
        if sse:
            return self._stream(ex, outcome, headers, edited, request_id, unanswered)
        if unanswered:
            return self._stay_open(ex, outcome.session, None, headers)
        if edited and (effect := edits.edit_body(self.editor, edited, answer.request, outcome.body)):
            ex.edited(edited, effect)
            if isinstance(effect, edits.Withhold):
                return self._stay_open(ex, outcome.session, None, headers)
            return ex.send(outcome.status, [*headers, ("content-type", http.JSON)], effect.body)
        return ex.send_body(outcome.status, headers, outcome.body, answer.raw if answer is not None else None)

    def _stream(self, ex: Exchange, outcome: Reply, headers: list, edited: edits.Plan | None, request_id: Any,
                unanswered: bool) -> Coroutine | None:
        """An SSE answer, its events edited if an edit says so, ended as the recorded stream ended (or held open,
        or cut for a resume)."""
        answer, status, events, cut = outcome.answer, outcome.status, outcome.events, None
        if edited:
            change = edits.edit_events(events, edited, request_id, f"mcptape-{ex.key}")
            ex.edited(edited, change)
            events, cut = change.events, change.rest

        def end() -> Coroutine | None:
            if cut is not None:
                self._cut[events[-1]["id"] if events else ""] = cut
                return ex.finish(status, headers, records.COMPLETE)
            if unanswered or (edited and edited.drop):
                return self._stay_open(ex, outcome.session, status, headers)
            return ex.finish(status, headers, answer.end)

        if self.pace is not None or answer.asks_client:  # (an edit never adds a request of the server's)
            return then(ex.send_events(status, headers, events, answer.t, self.pace, self._answered(outcome.session)),
                        end)
        ex.write_events(status, headers, events, {} if edited else answer.encoded)  # as rewritten: encoded once
        return end()

    def _answered(self, session: LiveSession | None):
        """Until the client answers a server-initiated request (a POST with a response), for a while."""
        async def answered(msg: dict) -> None:
            key = _waiter(session, msg.get("id"))
            self._waiting[key] = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(self._waiting[key], self.ANSWER_TIMEOUT)
            except TimeoutError:
                self._waiting.pop(key, None)

        return answered

    async def _stay_open(self, ex: Exchange, session: LiveSession | None, status: int | None, headers: list) -> None:
        """Keep a stream (or a request with no response yet) open until the session ends or the client leaves."""
        done = asyncio.Event()
        if session is not None:
            self._streams.setdefault(session.id, []).append(done)
        await ex.stay_open(done, status, headers)

    # -- GET streams -----------------------------------------------------------------------------------------------

    async def _get_stream(self, ex: Exchange, session: LiveSession | None, last_event_id: str | None) -> None:
        """A GET stream: with Last-Event-ID, the recorded resumption of that stream (its replayed events, then the
        rest, the POST's answer included); without, the session's standalone stream. What the recorded server
        sent is delivered, then the stream stays open until the session ends or the client leaves."""
        headers = [("content-type", http.SSE), ("cache-control", "no-cache")]
        if session is not None:
            headers.append((http.SESSION_ID, session.id))
        answered = self._answered(session)
        if last_event_id is not None and last_event_id in self._cut:  # resuming a stream an edit closed
            rest = self._cut.pop(last_event_id)
            await ex.send_events(200, headers, rest, rest[0].get("t", 0) if rest else 0, self.pace, answered)
            return ex.finish(200, headers, records.COMPLETE)
        outcome = self.replayer.resume(last_event_id, session)
        recorded = outcome.answer if outcome else None
        events = outcome.events if outcome else []
        waiting = []
        if last_event_id is None:  # the standalone stream: each event waits for the request it followed
            ready = next((i for i, e in enumerate(events)
                          if e.get("after") is not None and not self.replayer.asked(e["after"])), len(events))
            events, waiting = events[:ready], events[ready:]
        await ex.send_events(200, headers, events, recorded.t if recorded else 0, self.pace, answered)
        if last_event_id is not None and recorded is not None and recorded.end == records.COMPLETE:
            return ex.finish(200, headers, recorded.end)
        if session is not None and waiting:
            self._standalone[session.id] = (ex, waiting)
        await self._stay_open(ex, session, 200, headers)
        if session is not None and self._standalone.get(session.id, (None,))[0] is ex:
            del self._standalone[session.id]

    def _release_standalone(self, session: LiveSession) -> None:
        """Send what the recorded server put on the GET stream once the request it followed has come."""
        ex, waiting = self._standalone[session.id]
        ready = 0
        while ready < len(waiting) and self.replayer.asked(waiting[ready]["after"]):
            ready += 1
        if ready:
            ex.emit(waiting[:ready])
            self._standalone[session.id] = (ex, waiting[ready:])


def _initialize(msg: Any) -> bool:
    return isinstance(msg, dict) and msg.get("method") == "initialize"


def _waiter(session: LiveSession | None, request_id) -> tuple:
    return (session.id if session else "", jsonrpc.id_key(request_id))


def _framed(outcome: Reply, sse_ok: bool) -> tuple[Reply, bool, bool]:
    """An answer recorded over stdio, framed as a Streamable HTTP server frames it: a notification (or anything
    but a request) gets 202 and no body; a request that got more than its final response (progress, a server
    request) an SSE stream when the client takes one, one event per message; otherwise its final response as
    JSON. Returns the outcome, whether it is SSE, and whether the request is left unanswered (the recorded server
    never answered it: cancelled, or it died), which keeps the request open as that server did."""
    if outcome.status == 202:
        return outcome, False, False
    lines = outcome.lines
    final = next((line["msg"] for line in reversed(lines) if "method" not in line["msg"]), None)
    if (len(lines) > 1 or final is None) and sse_ok:
        events = [{"event": "message", **line} for line in lines]
        return msgspec.structs.replace(outcome, events=events), True, final is None
    return msgspec.structs.replace(outcome, body=final), False, final is None
