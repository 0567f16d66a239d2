"""The replay as an HTTP server: asyncio with httptools' C parser (no mitmproxy, no ASGI stack: start-up time and
CPU per call are what a replay in a test suite is judged by).

Serves the recorded paths; other paths get 404. Session-era tapes get sessions (400 without an id, the recorded
dead-session status for an unknown or ended one, DELETE ends one), SSE answers go out event by event with their
recorded ids and retry fields, JSON answers with their recorded status. A stdio tape's answers are framed as a
Streamable HTTP server frames them (`_framed`). What the client does is recorded into the `--log` tape by the same
capture core `mcptape record` uses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import Awaitable, Callable, Coroutine
from http import HTTPStatus

import httptools

from .. import edits
from ..capture.http import HttpCapture, SSEStream
from ..tape import json_form, records
from ..wire import http, jsonrpc, sse
from .recorded import Answer
from .serve import LiveSession, Outcome, Replayer

Pace = Callable[[float], float]  # recorded gap (s) -> how long to wait


@functools.cache
def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Status"


@functools.cache
def _status_line(status: int) -> bytes:
    return f"HTTP/1.1 {status} {_reason(status)}\r\n".encode()


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    return _status_line(status) + b"".join(f"{k}: {v}\r\n".encode() for k, v in headers) + b"\r\n"


def _json_bytes(value) -> bytes:
    return json_form.dumps(value).encode()


class Request:
    __slots__ = ("method", "target", "headers", "body")

    def __init__(self) -> None:
        self.method = ""
        self.target = ""
        self.headers: list[tuple[str, str]] = []
        self.body = b""


class HttpReplay:
    ANSWER_TIMEOUT = 30.0  # how long a server-initiated request waits for the client's answer

    def __init__(self, replayer: Replayer, log: HttpCapture | None = None, pace: Pace | None = None) -> None:
        self.replayer = replayer
        self.log = log
        self.pace = pace
        self.editor = replayer.editor
        self._cut: dict[str, list[dict]] = {}  # close-stream: last event id sent -> what a resume gets
        self.paths = replayer.recording.paths or {"/mcp"}
        self._channels: dict[str, tuple[_Connection, SSEStream | None]] = {}  # legacy: session -> its GET stream
        self._streams: dict[str, list[asyncio.Event]] = {}  # live session id -> its open GET streams
        # live session id -> its standalone GET stream and the recorded events still waiting for their request
        self._standalone: dict[str, tuple[_Connection, SSEStream | None, list[dict]]] = {}
        self._waiting: dict[tuple, asyncio.Future] = {}  # (live session id, request id) -> the client's answer
        self._keys = 0

    def protocol(self) -> asyncio.Protocol:
        return _Connection(self)

    # -- one request -----------------------------------------------------------------------------------------------

    def handle(self, req: Request, conn: _Connection) -> Coroutine | None:
        """Answer one request. Most answers are written at once; an answer that has to wait (a delay, a paced or
        held stream, a GET stream, a server-initiated request) comes back as a coroutine for the connection to
        await before its next request, so requests on a connection are still answered in order."""
        self._keys += 1
        key = self._keys
        if self.log is not None:
            self.log.request(key, id(conn), time.time(), req.method, req.target, req.headers, req.body)
        path = req.target.split("?", 1)[0]
        if path not in self.paths:
            return self._send(conn, key, 404, [("content-type", "text/plain")], b"Not Found")
        plan = self._plan(req) if self.editor is not None else None
        if hold := edits.hold(plan):
            self._edited(key, plan, hold)
            return _then(asyncio.sleep(hold.seconds), lambda: self._dispatch(req, conn, key, plan))
        return self._dispatch(req, conn, key, plan)

    def _dispatch(self, req: Request, conn: _Connection, key: int, plan: edits.Plan | None) -> Coroutine | None:
        for killed in plan.killed if plan else ():
            self._end_streams(killed)  # as a server ends the streams of a session it expired
        if ours := edits.instead(plan, channel=self.replayer.legacy):  # (a legacy error goes out on the channel)
            return self._injected(conn, key, plan, ours)
        if self.replayer.legacy:
            return self._legacy(req, conn, key, plan)
        session, refusal = self._session(req)
        if refusal is not None:
            return self._send(conn, key, *refusal)
        if req.method == "DELETE":
            if session is not None:
                session.ended = True
                if self.editor is not None:
                    self.editor.ended(session.id)
                self._end_streams(session.id)
            return self._send(conn, key, 200, [], b"")
        if req.method == "GET":
            return self._get_stream(conn, key, session, http.get(req.headers, http.LAST_EVENT_ID))
        if req.method != "POST":
            return self._send(conn, key, 405, [("allow", "GET, POST, DELETE")], b"")
        try:
            msg = jsonrpc.loads(req.body)  # what the message is, not whether it is well-formed: the log says that
        except (ValueError, RecursionError) as e:
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: {e}"}}
            return self._send(conn, key, 400, [("content-type", http.JSON)], _json_bytes(error))
        if not isinstance(msg, dict) or jsonrpc.kind(msg) not in ("request", "notification"):
            if isinstance(msg, dict) and (waiter := self._waiting.pop(_waiter(session, msg.get("id")), None)):
                waiter.set_result(msg)  # the client answered a server-initiated request: the stream goes on
            return self._send(conn, key, 202, [], b"")  # a response to the server, a batch: accepted
        if msg.get("method") == "initialize" and session is None and self.replayer.session_era:
            session = self.replayer.open_session()
            if self.editor is not None:
                self.editor.opened(session.id)
        outcome = self.replayer.answer(msg, session, consume=edits.delivers(plan))
        if session is not None and session.id in self._standalone:
            self._release_standalone(session)
        return self._serve(conn, key, outcome, plan, msg.get("id"), req.headers)

    def _end_streams(self, session_id: str) -> None:
        for event in self._streams.pop(session_id, []):
            event.set()

    def _release_standalone(self, session: LiveSession) -> None:
        """Send what the recorded server put on the GET stream once the request it followed has come."""
        conn, stream, waiting = self._standalone[session.id]
        ready = 0
        while ready < len(waiting) and self.replayer.asked(waiting[ready]["after"]):
            ready += 1
        if ready:
            self._emit((conn, stream), waiting[:ready])
            self._standalone[session.id] = (conn, stream, waiting[ready:])

    # -- edits -----------------------------------------------------------------------------------------------------

    def _plan(self, req: Request) -> edits.Plan:
        msg = jsonrpc.parse(req.body).msg if req.method == "POST" else None
        session = http.get(req.headers, http.SESSION_ID)
        if session is None and self.replayer.legacy:
            session = http.legacy_session(http.query_pairs(req.target))
        return self.editor.plan(time.time(), msg, req.method, session)

    def _edited(self, key: int, plan: edits.Plan, effect: edits.Effect | edits.EditedEvents) -> None:
        if self.log is not None:
            self.log.edited(key, time.time(), plan.texts, effect.detail, effect.withheld or None)

    def _injected(self, conn: _Connection, key: int, plan: edits.Plan, ours: edits.Reset | edits.Reply) -> None:
        """An answer of ours instead of the recorded one, which stays unused for a retry."""
        self._edited(key, plan, ours)
        if isinstance(ours, edits.Reset):
            conn.abort()
            if self.log is not None:
                self.log.failed(key, time.time(), records.UPSTREAM_RESET, edits.RESET_ENDED)
        else:
            self._send(conn, key, ours.status, ours.headers, ours.body)

    async def _legacy(self, req: Request, conn: _Connection, key: int, plan: edits.Plan | None) -> None:
        """2024-11-05 HTTP+SSE: a GET opens the channel (its first event names where to POST, with a fresh session
        id); each POST is accepted as recorded and its answers go out on the channel."""
        if req.method == "GET":
            session = self.replayer.open_session()
            opened = self.replayer.resume(None, session)
            events, head = [], [("content-type", http.SSE), ("cache-control", "no-cache")]
            for record in opened.events if opened else []:
                if record.get("event") == "endpoint":
                    recorded_id = session.recorded.label if session.recorded else ""
                    events.append({**record, "data": record["data"].replace(recorded_id, session.id)})
                    break
                events.append(record)
            await self._send_events(conn, key, 200, head, events, 0.0)
            conn.flush()
            self._channels[session.id] = (conn, self._log_stream_of(key))
            done = asyncio.Event()
            conn.on_close.append(done.set)
            await done.wait()
            self._channels.pop(session.id, None)
            if self.log is not None:
                self.log.failed(key, time.time(), records.CLIENT_DISCONNECTED)
            return
        live_id = http.legacy_session(http.query_pairs(req.target)) or ""
        session = self.replayer.sessions.get(live_id)
        channel = self._channels.get(live_id)
        if session is None or channel is None:
            return self._send(conn, key, 404, [("content-type", "text/plain")], b"Could not find session")
        msg = jsonrpc.parse(req.body).msg
        if not isinstance(msg, dict) or jsonrpc.kind(msg) != "request":
            return self._send(conn, key, 202, [("content-type", "text/plain")], b"Accepted")
        outcome = self.replayer.answer(msg, session, consume=edits.delivers(plan))
        if outcome.answer is None:  # a miss: its error goes out on the channel like any answer
            self._send(conn, key, 202, [("content-type", "text/plain")], b"Accepted")
            return self._emit(channel, [{"event": "message", "msg": outcome.body}])
        events = self.replayer.channel(outcome.answer, session)
        if plan and plan.edits_messages:  # logged while the POST's exchange is open
            events = self._edit_channel(key, plan, msg, events)
        pending = self._serve(conn, key, Outcome(outcome.answer, outcome.status, outcome.body, [], [], None))
        if pending is not None:
            await pending
        self._emit(channel, events)

    def _edit_channel(self, key: int, plan: edits.Plan, msg: dict, events: list[dict]) -> list[dict]:
        """The edits of a legacy POST's answer, made on the session's channel where it goes out: the call's own
        messages (its progress, then its final response), as `mcptape record` edits them live."""
        change = edits.edit_events(events, plan, msg.get("id"), "")
        self._edited(key, plan, change)
        return [{**e, "injected": True} for e in change.events]  # the channel carries others' answers too

    def _emit(self, channel: tuple[_Connection, SSEStream | None], events: list[dict]) -> None:
        conn, stream = channel
        conn.write(b"".join(_chunk(record, stream) for record in events))

    def _log_stream_of(self, key: int) -> SSEStream | None:
        return self.log.stream_of(key) if self.log is not None else None

    def _session(self, req: Request) -> tuple[LiveSession | None, tuple | None]:
        if not self.replayer.session_era:
            return None, None
        sent = http.get(req.headers, http.SESSION_ID)
        if sent is None:
            if req.method == "POST" and b'"initialize"' in req.body:
                return None, None
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Bad Request: Missing session ID"}}
            return None, (400, [("content-type", http.JSON)], _json_bytes(body))
        live = self.replayer.sessions.get(sent)
        if live is None or live.ended:
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}
            return None, (self.replayer.dead_status(), [("content-type", http.JSON)], _json_bytes(body))
        return live, None

    def _serve(self, conn: _Connection, key: int, outcome: Outcome, plan: edits.Plan | None = None,
               request_id=None, request_headers: http.Headers = ()) -> Coroutine | None:
        answer = outcome.answer
        headers = list(answer.served_headers) if answer else []
        if outcome.session is not None:
            headers.append((http.SESSION_ID, outcome.session.id))
        sse, unanswered = answer is not None and answer.sse, False
        if answer is not None and not answer.http_method:  # recorded over stdio: no framing of its own
            outcome, sse, unanswered = _framed(outcome, http.accepts(request_headers, http.SSE))
            headers.append(("content-type", http.SSE if sse else http.JSON))
        edited = plan is not None and plan.changes_events and answer is not None
        if sse:
            events, cut = outcome.events, None
            if edited:
                change = edits.edit_events(events, plan, request_id, f"mcptape-{key}")
                self._edited(key, plan, change)
                events, cut = change.events, change.rest

            def end() -> Coroutine | None:
                if cut is not None:
                    self._cut[events[-1]["id"] if events else ""] = cut
                    return self._finish_events(conn, key, outcome.status, headers, records.COMPLETE)
                if unanswered or (edited and plan.drop):
                    return self._stay_open(conn, key, outcome.session, outcome.status, headers)
                return self._finish_events(conn, key, outcome.status, headers, answer.end)

            if self.pace is not None or any(_server_request(e) for e in events):
                return _then(self._send_events(conn, key, outcome.status, headers, events, answer.t,
                                               outcome.session), end)
            self._write_events(conn, key, outcome.status, headers, events, None if edited else answer)
            return end()
        if unanswered:
            return self._stay_open(conn, key, outcome.session, None, headers)
        if edited and (effect := edits.edit_body(self.editor, plan, answer.request, outcome.body)):
            self._edited(key, plan, effect)
            if isinstance(effect, edits.Withhold):
                return self._stay_open(conn, key, outcome.session, None, headers)
            return self._send(conn, key, outcome.status, [*headers, ("content-type", http.JSON)], effect.body)
        if outcome.body is not None:
            body = _json_bytes(outcome.body)
            if not any(k.lower() == "content-type" for k, _ in headers):
                headers.append(("content-type", http.JSON))
        elif answer is not None and answer.raw is not None:
            body = answer.raw
        else:
            body = b""
        return self._send(conn, key, outcome.status, headers, body)

    def _send(self, conn: _Connection, key: int, status: int, headers: list, body: bytes) -> None:
        headers = [*headers, ("content-length", str(len(body)))]
        conn.write(_head(status, headers) + body)
        if self.log is not None:
            self.log.response(key, time.time(), status, _reason(status), headers, body)

    def _write_events(self, conn: _Connection, key: int, status: int, headers: list, events: list[dict],
                      answer: Answer | None) -> None:
        """The head and every event at once (nothing to wait for): one send, held for the stream's end. The
        events of a recorded `answer` as the replay rewrote them (not edited) come from its encoded events."""
        stream = self._log_stream(key, status, headers)
        encoded = answer.encoded if answer is not None else {}
        conn.pending = _head(status, [*headers, ("transfer-encoding", "chunked")]) + b"".join(
            _chunk(record, stream, _from_encoded(record, encoded)) for record in events)

    async def _send_events(self, conn: _Connection, key: int, status: int, headers: list, events: list[dict],
                           start: float, session: LiveSession | None = None) -> None:
        """The head and every event, at the recorded pace; after a server-initiated request (sampling,
        elicitation, roots) it waits for the client's answer, as the recorded server did. The caller decides how
        the stream ends. Events that go out together are written together: one send, not one per event."""
        out = [_head(status, [*headers, ("transfer-encoding", "chunked")])]
        stream = self._log_stream(key, status, headers)
        previous = start
        for record in events:
            if self.pace is not None and record.get("t"):
                conn.write(b"".join(out))
                out = []
                await asyncio.sleep(self.pace(max(0.0, record["t"] - previous)))
                previous = record["t"]
            if conn.closed:
                break
            out.append(_chunk(record, stream))
            if _server_request(record):
                conn.write(b"".join(out))
                out = []
                msg = record["msg"]
                waiter = self._waiting[_waiter(session, msg.get("id"))] = asyncio.get_running_loop().create_future()
                try:
                    await asyncio.wait_for(waiter, self.ANSWER_TIMEOUT)
                except TimeoutError:
                    self._waiting.pop(_waiter(session, msg.get("id")), None)
        conn.pending = b"".join(out)  # the caller adds the stream's end and sends it all at once

    def _finish_events(self, conn: _Connection, key: int, status: int, headers: list, end: str | None) -> None:
        """End the stream as the recorded one ended: cleanly, or by dropping the connection (a server that
        expected a Last-Event-ID resume, or one that died)."""
        if end in (None, records.COMPLETE, records.CLIENT_DISCONNECTED, records.PROXY_STOPPED):
            conn.write(b"0\r\n\r\n")
            if self.log is not None:
                self.log.response(key, time.time(), status, _reason(status), headers, b"")
        else:
            conn.abort()
            if self.log is not None:
                self.log.failed(key, time.time(), records.UPSTREAM_RESET, f"replayed as recorded: {end}")

    def _log_stream(self, key: int, status: int, headers: list) -> SSEStream | None:
        if self.log is None:
            return None
        return self.log.response_head(key, time.time(), status, _reason(status), headers)

    async def _get_stream(self, conn: _Connection, key: int, session: LiveSession | None,
                          last_event_id: str | None) -> None:
        """A GET stream: with Last-Event-ID, the recorded resumption of that stream (its replayed events, then the
        rest, the POST's answer included); without, the session's standalone stream. What the recorded server
        sent is delivered, then the stream stays open until the session ends or the client leaves."""
        headers = [("content-type", http.SSE), ("cache-control", "no-cache")]
        if session is not None:
            headers.append((http.SESSION_ID, session.id))
        if last_event_id is not None and last_event_id in self._cut:  # resuming a stream an edit closed
            rest = self._cut.pop(last_event_id)
            await self._send_events(conn, key, 200, headers, rest, rest[0].get("t", 0) if rest else 0, session)
            return self._finish_events(conn, key, 200, headers, records.COMPLETE)
        outcome = self.replayer.resume(last_event_id, session)
        recorded = outcome.answer if outcome else None
        events = outcome.events if outcome else []
        waiting = []
        if last_event_id is None:  # the standalone stream: each event waits for the request it followed
            ready = next((i for i, e in enumerate(events)
                          if e.get("after") is not None and not self.replayer.asked(e["after"])), len(events))
            events, waiting = events[:ready], events[ready:]
        await self._send_events(conn, key, 200, headers, events, recorded.t if recorded else 0)
        if last_event_id is not None and recorded is not None and recorded.end == records.COMPLETE:
            return self._finish_events(conn, key, 200, headers, recorded.end)
        if session is not None and waiting:
            self._standalone[session.id] = (conn, self._log_stream_of(key), waiting)
        await self._stay_open(conn, key, session, 200, headers)
        if session is not None and self._standalone.get(session.id, (None,))[0] is conn:
            del self._standalone[session.id]

    async def _stay_open(self, conn: _Connection, key: int, session: LiveSession | None, status: int | None,
                         headers: list) -> None:
        """Keep a stream (or a request with no response yet) open until the session ends or the client leaves."""
        conn.flush()
        done = asyncio.Event()
        if session is not None:
            self._streams.setdefault(session.id, []).append(done)
        conn.on_close.append(done.set)
        await done.wait()
        if conn.closed:
            if self.log is not None:
                self.log.failed(key, time.time(), records.CLIENT_DISCONNECTED)
        elif status is None:  # no response was started: all we can do is hang up
            conn.abort()
            if self.log is not None:
                self.log.failed(key, time.time(), records.UPSTREAM_RESET, "the session ended")
        else:
            conn.write(b"0\r\n\r\n")
            if self.log is not None:
                self.log.response(key, time.time(), status, _reason(status), headers, b"")


async def _then(first: Awaitable, then: Callable[[], Coroutine | None]) -> None:
    """Await `first`, then run `then`, and await what it returns, if anything."""
    await first
    pending = then()
    if pending is not None:
        await pending


def _chunk(record: dict, stream: SSEStream | None, encoded: bytes | None = None) -> bytes:
    """One SSE event record as an HTTP chunk; recorded into the log's stream as it goes."""
    data = encoded or sse.encode(records.wire_event(record))
    if stream is not None:
        stream.record(data, record.get("injected", False))
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _framed(outcome: Outcome, sse_ok: bool) -> tuple[Outcome, bool, bool]:
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
        return dataclasses.replace(outcome, events=events), True, final is None
    return dataclasses.replace(outcome, body=final), False, final is None


def _from_encoded(record: dict, encoded: dict) -> bytes | None:
    msg = record.get("msg")
    if msg is None:
        return encoded.get(id(record))
    found = encoded.get(id(msg.get("result", msg.get("error")))) if isinstance(msg, dict) else None
    return None if found is None else found[0] + json_form.dumps(msg["id"]).encode() + found[1]


def _server_request(record: dict) -> bool:
    msg = record.get("msg")
    return isinstance(msg, dict) and "method" in msg and "id" in msg


def _waiter(session: LiveSession | None, request_id) -> tuple:
    return (session.id if session else "", jsonrpc.id_key(request_id))


class _Connection(asyncio.Protocol):
    def __init__(self, server: HttpReplay) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.current = Request()
        # requests (and answers still going out) wait here while an earlier answer is still going out
        self.queue: asyncio.Queue[Request | Coroutine | None] = asyncio.Queue()
        self.busy = False
        self.closed = False
        self.on_close: list[Callable[[], None]] = []
        self.worker: asyncio.Task | None = None
        self.keep_alive = True
        self.pending = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.worker = asyncio.get_running_loop().create_task(self._work())

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.write(_head(400, [("content-length", "0"), ("connection", "close")]))
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for callback in self.on_close:
            callback()
        self.queue.put_nowait(None)

    # httptools callbacks
    def on_url(self, url: bytes) -> None:
        self.current.target += url.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.current.headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_body(self, body: bytes) -> None:
        self.current.body += body

    def on_message_complete(self) -> None:
        req, self.current = self.current, Request()
        req.method = self.parser.get_method().decode()
        self.keep_alive = self.parser.should_keep_alive()
        if self.busy:  # an earlier answer is still going out: this request waits its turn (HTTP/1.1 order)
            self.queue.put_nowait(req)
            return
        pending = self._handle(req)  # most answers are written right here, with no task switch
        if pending is not None:
            self.busy = True
            self.queue.put_nowait(pending)
        elif not self.keep_alive:
            self.transport.close()

    def write(self, data: bytes) -> None:
        """Send `data`, after anything `pending` (the events of a stream, held to go out with its end)."""
        if self.pending:
            data, self.pending = self.pending + data, b""
        if data and not self.closed and self.transport is not None:
            self.transport.write(data)

    def flush(self) -> None:
        self.write(b"")

    def abort(self) -> None:
        if self.transport is not None:
            if self.pending and not self.closed:
                self.transport.write(self.pending)
            self.pending = b""
            self.transport.abort()

    def _handle(self, req: Request) -> Coroutine | None:
        try:
            return self.server.handle(req, self)
        except Exception as e:
            self._failed(e)
            return None

    def _failed(self, e: Exception) -> None:
        """A replay bug must not hang the client: answer 500 and say why."""
        body = f"mcptape replay failed: {type(e).__name__}: {e}".encode()
        self.write(_head(500, [("content-type", "text/plain"), ("content-length", str(len(body)))]) + body)

    async def _work(self) -> None:
        # what could not be answered at once, one at a time per connection, in order (HTTP/1.1 pipelining)
        while (item := await self.queue.get()) is not None:
            if isinstance(item, Request):
                item = self._handle(item)
            if item is not None:
                try:
                    await item
                except Exception as e:
                    self._failed(e)
            if not self.keep_alive:
                self.transport.close()
                break
            self.busy = not self.queue.empty()
