"""The analysis model: a tape's records read as sessions -> exchanges -> calls.

It is built in one pass, record by record, so a tape of any length is analysed in flat memory: an exchange is
kept while it is open, a call while it is unsettled. Whoever reads the model (check, diff, show) subscribes to
what it settles: `Observer.record` sees every record with the model's view of it, `Observer.call` every call once
it is settled (answered, or at the end of the history), with its `outcome`; `Observer.noted` the records the model
noticed something on, as typed facts (facts.py); `Observer.exchange` each HTTP exchange once it is over, with its
records (the exports: HAR, mitmproxy flows). What it builds is in conversation.py, what it hands out in observer.py
and facts.py.

Correlation follows the protocol, not the transport: a response belongs to the request with the same id sent the
other way in the same session (both sides issue requests with their own id spaces), wherever it arrived: on the
POST's own stream, on a later GET (resumed stream), on a legacy SSE channel, or out of order on stdio.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

# what the model builds, hands its observers and the lifecycle's names, read by check, show and replay through the
# model too (re-exported)
from .conversation import (HANDSHAKE_VERSIONS, LEGACY_SSE, STATELESS, STDIO, STREAMABLE, Call,  # noqa: F401
                           Exchange, Passed, Session)
from .facts import (DuplicateRequest, LateResponse, Malformed, OrphanResponse, ProgressAfterResponse,
                    ResponseOnGetStream, SessionTransition, outcome_of)
from .lifecycle import (DELETED, ENDED, EXPIRED, OPENED, REFUSED, SUPERSEDED, State,  # noqa: F401
                        Transition, refusal_text)
from .memory import Recent, collector_paused  # noqa: F401
from .observer import Observer, Seen  # noqa: F401
from .tape import records
from .wire import http, jsonrpc

_NEW = State.NEW
_C2S, _S2C = records.C2S, records.S2C
_id_key = jsonrpc.id_key  # a string or an integer is its own key: the hot paths below call it for anything else


class Model:
    def __init__(self, observers: list[Observer]) -> None:
        self.observers = observers
        self.tape = ""
        self.truncated: dict[str, str] = {}
        self.sessions: dict[tuple[str, str], Session] = {}
        self._exchanges: dict[int, Exchange] = {}
        self._calls: dict[tuple[int, str, Any], Call] = {}  # (id(session), dir, id) -> open call
        self._progress_tokens: dict[tuple[int, Any], Call] = {}
        # Recently settled calls, to recognise a late answer or late progress; bounded, so memory stays flat.
        self._settled = Recent(4096)
        self._settled_tokens = Recent(4096)
        self._run = 0  # capture.start count within the tape: each stdio run is a new session
        self._legacy_paths: dict[str, Session] = {}
        self._started = False  # the tape holds a conversation's start (an initialize, a legacy channel opening)
        self._dead: list[Session] = []  # dead sessions the client has not yet replaced by a new one
        self._handlers = {
            records.CAPTURE_START: self._capture_start, records.HTTP_REQUEST: self._http_request,
            records.HTTP_RESPONSE: self._http_response, records.SSE_EVENT: self._sse_event,
            records.END: self._http_end, records.STDIO_LINE: self._stdio, records.STDIO_STDERR: self._stdio,
            records.STDIO_EXIT: self._stdio, records.STDIO_EOF: self._stdio, records.EDIT: self._edit,
        }
        self._noted_observers = [o for o in observers if type(o).noted is not Observer.noted]
        self._call_watchers = [o.call for o in observers if type(o).call is not Observer.call]
        self._exchange_observers = [o for o in observers if type(o).exchange is not Observer.exchange]
        self._over: list[Exchange] = []  # exchanges a record ended, for the exchange observers
        if self._exchange_observers:  # keep each exchange's records for them (check never pays for it)
            for kind in (records.HTTP_REQUEST, records.HTTP_RESPONSE, records.SSE_EVENT, records.END, records.EDIT):
                self._handlers[kind] = self._keeping(self._handlers[kind])
        self._settled_now: list[Call] = []  # calls a record settled, reused to spare an allocation per record
        # the hot loop's one lookup per record: the model's handler for its kind, and the bound `record` of each
        # observer that looks at records of that kind (of every kind, for kinds this mcptape does not know)
        watching = [o for o in observers if type(o).record is not Observer.record]
        self._unknown = (None, [o.record for o in watching if o.kinds is None])
        self._plans = {kind: (self._handlers.get(kind),
                              [o.record for o in watching if o.kinds is None or kind in o.kinds])
                       for kind in {*records.KINDS, *self._handlers}}

    # -- feeding ---------------------------------------------------------------------------------------------------

    def feed_tape(self, name: str | os.PathLike[str], items: Iterable[dict]) -> Iterator[Any]:
        """What the observers make of each record of a tape (usually nothing), in order. The hot loop of check,
        diff, show and replay: one pass, locals only."""
        self.tape = name = os.fspath(name)
        self._run = 0
        self._exchanges = {}
        self._started = False
        plans, unknown = self._plans, self._unknown
        noted, settled, over = self._noted_observers, self._settled_now, self._over
        for seq, record in enumerate(items):
            kind = record.get("kind")
            seen = Seen(name, seq, record, kind, record.get("t", 0.0), record.get("msg"))
            handler, watchers = plans.get(kind, unknown)
            if handler is not None:
                handler(seen, settled)
            for watch in watchers:
                found = watch(seen, self)
                if found:
                    yield from found
            if "problem" in record:
                seen.note(Malformed(record["problem"]))
            if seen.notes:
                for observer in noted:
                    found = observer.noted(seen, self)
                    if found:
                        yield from found
            if settled:
                for call in settled:
                    yield from self._settle(call)
                settled.clear()
            if over:
                yield from self._exchanges_over(over)
        if self._exchange_observers:  # the tape ended before these did
            yield from self._exchanges_over(list(self._exchanges.values()))

    def _exchanges_over(self, over: list[Exchange]) -> list[Any]:
        out: list[Any] = []
        for ex in over:
            for observer in self._exchange_observers:
                found = observer.exchange(ex, self)
                if found:
                    out += found
            ex.passed = None
        over.clear()
        return out

    def _keeping(self, handler: Callable[[Seen, list[Call]], None]) -> Callable[[Seen, list[Call]], None]:
        """A handler that also files the record with its exchange's records (Passed), and hands out the exchanges
        it ended: by their end record, or by a new request taking their number."""
        def keep(seen: Seen, settled: list[Call]) -> None:
            kind = seen.kind
            replaced = self._exchanges.get(seen.record.get("exchange")) if kind == records.HTTP_REQUEST else None
            handler(seen, settled)
            ex = seen.exchange
            if ex is None:
                return
            if kind == records.HTTP_REQUEST:
                ex.passed = Passed(seen.record, records=[seen.record])
                if replaced is not None:
                    self._over.append(replaced)
                return
            passed = ex.passed
            if passed is None:
                return
            passed.records.append(seen.record)
            if kind == records.HTTP_RESPONSE:
                passed.response = seen.record
            elif kind == records.SSE_EVENT:
                passed.events.append(seen.record)
            elif kind == records.END:
                passed.end = seen.record
                self._over.append(ex)
        return keep

    def _capture_start(self, seen: Seen, settled: list[Call]) -> None:
        self._run += 1

    def finish(self) -> Iterator[Any]:
        for call in list(self._calls.values()):
            yield from self._settle(call)
        for observer in self.observers:
            yield from observer.finish(self)

    def _settle(self, call: Call) -> list[Any]:
        key = call.key
        if self._calls.get(key) is call:
            del self._calls[key]
        call.outcome = outcome_of(call)
        out = [finding for watch in self._call_watchers if (found := watch(call, self)) for finding in found]
        call.request = call.response = None  # see Call
        call.progress = ()
        self._settled.remember(key, call)
        token_key = call.token_key
        if token_key is not None:
            if self._progress_tokens.get(token_key) is call:
                del self._progress_tokens[token_key]
            self._settled_tokens.remember(token_key, call)
        return out

    # -- sessions --------------------------------------------------------------------------------------------------

    def session(self, label: str, transport: str) -> Session:
        key = (self.tape if transport == STDIO else "", label)
        found = self.sessions.get(key)
        if found is None:
            found = self.sessions[key] = Session(label, self.tape, transport)
        return found

    def _sent_session(self, label: str, transport: str) -> Session:
        """The session a request carries; one the tape never saw opened is unknown, or was opened before the
        capture began."""
        session = self.sessions.get(("", label)) or self.session(label, transport)  # (no stdio session: keyed "")
        if session.life.state is _NEW:
            session.life.met(self._started)
        return session

    def _transition(self, seen: Seen, session: Session, kind: str, status: int | None = None,
                    injected: bool = False) -> bool:
        """A step of the session's life, if its lifecycle takes it from where the session stands."""
        step = Transition(kind, seen.seq, seen.t, status, injected)
        if not session.life.take(step):
            return False
        seen.note(SessionTransition(session, step))
        return True

    def _http_request(self, seen: Seen, settled: list[Call]) -> None:
        r = seen.record
        headers = r.get("headers") or []
        version = r.get("protocol_version")
        if not isinstance(version, str):  # (_text, inlined: it runs for every request)
            version = None
        sent = r.get("session")
        session: Session | None = None
        if sent and self._legacy_paths and r.get("path") in self._legacy_paths:
            session = self._sent_session(sent, LEGACY_SSE)
        elif sent:
            session = self._sent_session(sent, STREAMABLE)
        elif version and version not in HANDSHAKE_VERSIONS:
            session = self.session(f"stateless:{self.tape}:conn{r.get('conn')}", STATELESS)
            session.version = version
        ex = Exchange(r.get("exchange"), seen.seq, seen.t, r.get("method", ""), r.get("conn"), session, sent, version,
                      headers, r.get("msg"), injected=bool(r.get("injected")), mcp=r.get("mcp", True))
        if ex.method == "GET":
            ex.last_event_id = http.get(headers, http.LAST_EVENT_ID)
            if ex.last_event_id is not None and session is not None:
                session.resumed.add(ex.last_event_id)
        elif not sent and isinstance(ex.msg, dict) and ex.msg.get("method") == "initialize":
            self._started = True
            for dead in self._dead:  # the client starts anew: the sessions it lost are replaced
                self._transition(seen, dead, SUPERSEDED, injected=ex.injected)
            self._dead.clear()
        self._exchanges[ex.number] = ex
        seen.exchange, seen.session = ex, session
        if session is not None and "msg" in r:
            ex.calls_known = True
            self._messages(seen, session, records.C2S, r["msg"], ex, settled)

    def _http_response(self, seen: Seen, settled: list[Call]) -> None:
        r = seen.record
        ex = self._exchanges.get(r.get("exchange"))
        if ex is None:
            return
        seen.exchange = ex
        if r.get("injected"):
            ex.injected = True  # an edit changed what the client got from here on
        ex.status = status = r.get("status")
        if ex.method == "GET":
            ex.get_stream = http.media_type(http.get(r.get("headers") or [], "content-type")) == http.SSE
        sent = r.get("session")
        ok = status is not None and status < 400
        if ex.session is None and sent and ok:
            # the answer to initialize names the session it opened (ignore ids on error answers: the SDK mints a
            # throw-away one on its 400)
            ex.session = self.session(sent, STREAMABLE)
            self._transition(seen, ex.session, OPENED, status)
        if ex.session is None and ex.msg is not None and ok:
            # no session at all: a stateless server answering a handshake-era client
            ex.session = self.session(f"sessionless:{self.tape}:conn{ex.conn}", STREAMABLE)
        session = seen.session = ex.session
        if session is None:
            return
        if (ex.sent_session and session.transport == STREAMABLE and status is not None
                and (status >= 400 or ex.method == "DELETE")):  # (no other answer can move it: Life.answer)
            self._lifecycle(seen, ex, session, status)
        if ex.msg is not None and not ex.calls_known:
            # the request that opened the session (initialize) is read now that its session is known
            ex.calls_known = True
            request = Seen(self.tape, ex.seq, {"t": ex.t, "injected": ex.injected}, records.HTTP_REQUEST, ex.t, None,
                           session, ex)
            self._messages(request, session, records.C2S, ex.msg, ex, settled)
        if "msg" in r:
            self._messages(seen, session, records.S2C, r["msg"], ex, settled)

    def _lifecycle(self, seen: Seen, ex: Exchange, session: Session, status: int) -> None:
        """What the answer to a request that carried a session says of that session's life."""
        r = seen.record
        injected = bool(r.get("injected")) or ex.injected
        kind = session.life.answer(ex.method, status, injected, r)
        if kind is not None and self._transition(seen, session, kind, status, injected):
            self._dead.append(session)

    def _sse_event(self, seen: Seen, settled: list[Call]) -> None:
        r = seen.record
        ex = self._exchanges.get(r.get("exchange"))
        if ex is None:
            return
        seen.exchange = ex
        if r.get("injected"):
            ex.injected = True  # an edit changed what the client got from here on
        if r.get("id"):
            ex.last_sse_id = r["id"]
        if r.get("event") == "endpoint" and r.get("data"):
            ex.session = self.session(r.get("session") or f"sse:{self.tape}:{ex.number}", LEGACY_SSE)
            self._legacy_paths[urlsplit(r["data"]).path] = ex.session
            self._started = True
            self._transition(seen, ex.session, OPENED)
        session = seen.session = ex.session
        if session is not None and "msg" in r:
            self._messages(seen, session, records.S2C, r["msg"], ex, settled)

    def _http_end(self, seen: Seen, settled: list[Call]) -> None:
        r = seen.record
        ex = self._exchanges.pop(r.get("exchange"), None)
        if ex is None:
            return
        ex.end = r.get("reason")
        seen.exchange, seen.session = ex, ex.session
        if ex.session is not None and ex.session.transport == LEGACY_SSE and ex.get_stream:
            self._transition(seen, ex.session, ENDED, injected=ex.injected)
        ex.headers, ex.msg = [], None  # see Exchange

    def _stdio_session(self) -> Session:
        return self.session(f"stdio:{self.tape}#{self._run or 1}", STDIO)  # each recording run is a new process

    def _stdio(self, seen: Seen, settled: list[Call]) -> None:
        session = seen.session = self._stdio_session()
        r = seen.record
        if seen.kind == records.STDIO_EXIT:
            self._transition(seen, session, ENDED)
        elif seen.kind == records.STDIO_EOF:
            session.left.setdefault(r.get("dir"), seen.seq)
        elif "msg" in r:
            self._messages(seen, session, r.get("dir", records.C2S), r["msg"], None, settled)

    def _edit(self, seen: Seen, settled: list[Call]) -> None:
        """An edit fired: what it touched rests on it (an exchange, from here on; a stdio request, whatever becomes
        of it), so a finding about it is never blamed on a real peer."""
        r = seen.record
        ex = self._exchanges.get(r.get("exchange"))
        if ex is not None:
            ex.injected = True
            seen.exchange, seen.session = ex, ex.session
        elif "request_id" in r:
            call = self._calls.get((id(self._stdio_session()), records.C2S, jsonrpc.id_key(r["request_id"])))
            if call is not None:
                call.injected = True

    # -- messages --------------------------------------------------------------------------------------------------

    def _messages(self, seen: Seen, session: Session, direction: str, body: Any, ex: Exchange | None,
                  settled: list[Call]) -> None:
        """Each message of a body (one, or a batch's items) to what its shape makes it (jsonrpc.kind, inlined: this
        runs for every message of a tape)."""
        for msg in (body,) if type(body) is dict else jsonrpc.messages(body):
            if not isinstance(msg, dict):
                continue
            if "method" in msg:
                if type(msg["method"]) is str:
                    if "id" in msg:
                        self._request(seen, session, direction, msg, ex)
                    else:
                        self._notification(seen, session, direction, msg)
            elif "result" in msg or "error" in msg:
                self._response(seen, session, direction, msg, ex, settled)

    def _request(self, seen: Seen, session: Session, direction: str, msg: dict, ex: Exchange | None) -> None:
        ident = msg["id"]
        call = Call(self.tape, session, direction, ident, msg["method"], msg, seen.seq, seen.t, ex,
                    injected=bool(seen.record.get("injected")))
        key = call.key = (id(session), direction, ident if type(ident) is str or type(ident) is int else _id_key(ident))
        params = msg.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = None
        if isinstance(meta, dict):
            token = meta.get("progressToken")
            version = meta.get("io.modelcontextprotocol/protocolVersion")
            if isinstance(version, str):  # the 2026-07-28 era puts the protocol version on every request
                session.version = version
        calls = self._calls
        earlier = calls.get(key)
        if earlier is None and not (session.version or "").startswith("2026"):
            # before 2026-07-28 an id may never be used twice in a session; since then, not while in flight
            earlier = self._settled.get(key)
        if earlier is not None:
            seen.note(DuplicateRequest(earlier))
        calls[key] = call
        if token is not None:
            call.token_key = token_key = (id(session), token if type(token) is str or type(token) is int
                                          else _id_key(token))
            self._progress_tokens[token_key] = call
        if call.method == "initialize":
            session.initialized = False

    def _response(self, seen: Seen, session: Session, direction: str, msg: dict, ex: Exchange | None,
                  settled: list[Call]) -> None:
        if ex is not None and ex.get_stream and ex.last_event_id is None and session.transport == STREAMABLE:
            seen.note(ResponseOnGetStream(msg))
        asked = _C2S if direction == _S2C else _S2C
        ident = msg.get("id")
        key = (id(session), asked, ident if type(ident) is str or type(ident) is int else _id_key(ident))
        call = self._calls.get(key)
        if call is None:
            if ident is None and ex is not None:
                if asked == _C2S:
                    # an error with a null id (the id could not be read, or an HTTP-level rejection): it answers
                    # the request its HTTP exchange carried
                    call = next((c for c in self._calls.values() if c.exchange is ex), None)
                if call is None and (ex.status or 0) >= 400:
                    return  # the body of an HTTP error that answered no request (a DELETE or GET refused)
            if call is None:
                late = self._settled.get(key)
                seen.note(LateResponse(late) if late is not None else OrphanResponse(msg))
                return
        if call.response_seq is not None:  # answered already in this same record (a batch): a second answer
            seen.note(LateResponse(call))
            return
        call.response, call.response_seq = msg, seen.seq
        if call.method == "initialize" and "result" in msg:
            session.initialized = True
            self._transition(seen, session, OPENED)  # stdio and legacy: no id to hand out; the handshake opens it
            version = _text(msg["result"].get("protocolVersion")) if isinstance(msg["result"], dict) else None
            session.version = version or session.version
        settled.append(call)

    def _notification(self, seen: Seen, session: Session, direction: str, msg: dict) -> None:
        method = msg["method"]
        if method != "notifications/progress" and method != "notifications/cancelled":
            return  # the model follows no other notification
        params = msg.get("params")
        if not isinstance(params, dict):
            params = _EMPTY
        if method == "notifications/progress":
            token = params.get("progressToken")
            key = (id(session), token if type(token) is str or type(token) is int else _id_key(token))
            call = self._progress_tokens.get(key)
            if call is not None:
                entry = (seen.seq, seen.t, params.get("progress"))
                if call.progress:
                    call.progress.append(entry)
                else:
                    call.progress = [entry]  # see Call.progress
            elif (late := self._settled_tokens.get(key)) is not None:
                seen.note(ProgressAfterResponse(late))
        else:
            call = self._calls.get((id(session), direction, _id_key(params.get("requestId"))))
            if call is not None and call.cancel is None:
                call.cancel = (seen.seq, seen.t, params.get("reason"))

    def open_calls(self) -> Iterator[Call]:
        return iter(self._calls.values())


_EMPTY: dict = {}  # the params of a message that has none: read, never changed


def _text(value: object) -> str | None:
    """A protocol version as the tape gives it, if it is a string: a hostile tape may put anything there."""
    return value if isinstance(value, str) else None
