"""What a tape says the server did, arranged for serving it back: recorded sessions, each a list of answers.

An answer is one recorded exchange (HTTP) or one call (stdio): the request it answered, and what went back, in
order and with its framing: status, headers, a JSON body or the SSE events (ids, retry, priming events, the
notifications sent before the response). `Answer.messages` is the same answer without its framing, for the
transport that did not record it. Built by reading the tape through the analysis model, so a session here is the
session `check` names.

A loaded recording never changes: what a replay did with it (which answers it used up, what the client asked)
is that replay's own state (serve.Replayer), as vcrpy keeps its play counts beside the cassette, so one loaded
tape can back several replays at once. While the tape is read, answers and sessions are drafts; `load` freezes
them.
"""

from __future__ import annotations

from functools import cached_property
from types import SimpleNamespace
from typing import Any

import msgspec

from ..model import LEGACY_SSE, Model, Observer, Seen
from ..tape import json_form, records
from ..tape.file import Reader
from ..wire import http, jsonrpc, sse


# (msgspec Structs, not dataclasses: docs/compiled.md.) eq=False: an answer is equal only to itself and hashed by
# identity, so a replay can key its counts by it.
class Answer(msgspec.Struct, frozen=True, eq=False, dict=True):  # (dict: room for its cached properties)
    seq: int  # the request's record
    session: str | None  # recorded session label (None: not JSON-RPC, or before a session existed)
    http_method: str  # POST / GET / DELETE; "" on stdio
    request: Any  # the JSON-RPC request or notification the client sent, if any
    status: int | None = None
    headers: tuple = ()
    body: Any = None  # the JSON body of a JSON-framed response
    raw: bytes | None = None  # a body that was not JSON
    # sse.event records, in order; on a standalone GET stream each carries "after": the answer it followed in the
    # recording, so the replay sends it once that answer has been asked (None: before any request)
    events: tuple[dict, ...] = ()
    lines: tuple[dict, ...] = ()  # stdio: {"msg", "t"} for each message written back, in order
    t: float = 0.0
    last_event_id: str | None = None  # a GET that resumed a stream
    end: str | None = None  # how the recorded exchange ended
    path: str = "/"
    channel: tuple[dict, ...] = ()  # legacy HTTP+SSE: what came back on the session's GET stream
    body_t: float = 0.0  # when the JSON body came back
    # sse.event records sent in its course on other streams: the resumption of its dropped stream, and the
    # standalone GET stream's messages that followed it (see _other_streams)
    elsewhere: tuple[dict, ...] = ()
    # the recorded server refused a session that was gone by then (the model's lifecycle: refused, deleted, or
    # expired by an edit): a replay that serves this answer ends the live session too, so what the client sends
    # next meets a dead session, as it did
    ends_session: bool = False

    @property
    def method(self) -> str | None:
        return _method(self.request)

    # Computed once, when first served: they depend on the recording alone, and the replay's hot path reads them
    # per call.
    @cached_property
    def sse(self) -> bool:
        return http.media_type(http.get(self.headers, "content-type")) == http.SSE

    @cached_property
    def asks_client(self) -> bool:
        """The recorded server sent a request of its own in the course of this answer (sampling, elicitation,
        roots), and waited for the client's answer."""
        return any(jsonrpc.kind(m.get("msg")) == "request" for m in (self.events if self.http_method else self.lines))

    @cached_property
    def encoded(self) -> dict[int, bytes | tuple[bytes, bytes]]:
        """The SSE events as they go out, encoded once. From run to run only a response's id changes (the replay
        answers with the live id), so a response is kept as the bytes before and after its id, keyed by id() of
        its result (or error) object, which the rewritten copy shares; an event with no message is kept whole,
        keyed by its own id(). The answer holds all of them, so no other live object has those ids."""
        out: dict[int, bytes | tuple[bytes, bytes]] = {}
        for event in self.events:
            msg = event.get("msg")
            if msg is None:
                out[id(event)] = sse.encode(records.wire_event(event))
                continue
            body = msg.get("result", msg.get("error")) if isinstance(msg, dict) and "method" not in msg else None
            if isinstance(body, dict) and "id" in msg:
                text = sse.encode(records.wire_event({**event, "msg": {**msg, "id": _HOLE}}))
                before, hole, after = text.partition(_HOLE_JSON)
                if hole and _HOLE_JSON not in after:
                    out[id(body)] = (before, after)
        return out

    @cached_property
    def messages(self) -> list[dict]:
        """What went back, whatever transport recorded it: each JSON-RPC message as {"msg", "t"}, in the order
        sent, framing left out (priming events, ids, statuses). Both servers read it when the tape's framing is not
        theirs: stdio writes each message as a line; HTTP frames a stdio answer from it."""
        if not self.http_method:
            return self.lines
        sent = [{"msg": m, "t": e["t"]} for e in (*self.events, *self.channel, *self.elsewhere) if "msg" in e
                for m in jsonrpc.messages(e["msg"])]
        if self.body is not None:
            sent += [{"msg": self._refusal(m), "t": self.body_t} for m in jsonrpc.messages(self.body)]
        sent.sort(key=lambda m: m["t"])  # stable: each stream keeps its order; streams interleave as they passed
        return [m for m in sent if jsonrpc.kind(m["msg"]) != "invalid"]

    def _refusal(self, msg: Any) -> Any:
        """A request refused by HTTP status with a JSON-RPC error whose id is null (refused before its id was
        read): the status tied it to this POST's request; without HTTP only the id can, so it gets the request's
        id, as the SDK's HTTP client delivers it."""
        if (self.status or 0) >= 400 and jsonrpc.kind(msg) == "error" and msg.get("id") is None \
                and jsonrpc.kind(self.request) == "request":
            return {**msg, "id": self.request["id"]}
        return msg

    @cached_property
    def served_headers(self) -> list[tuple[str, str]]:
        """The recorded headers the replay sends again: framing and session headers are the replay's own."""
        return [(k, v) for k, v in self.headers if k.lower() not in _OWN_HEADERS]


_HOLE = "\x00mcptape:id\x00"  # stands in for a response's id while it is encoded
_HOLE_JSON = json_form.dumps(_HOLE).encode()
_OWN_HEADERS = {"content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding", "date",
                "server", http.SESSION_ID}


class RecordedSession(msgspec.Struct, frozen=True, eq=False):
    label: str
    transport: str
    answers: tuple[Answer, ...] = ()
    initialize: Answer | None = None
    dead_status: int | None = None  # what the server answered an unknown/ended session with, when the tape shows it
    version: str | None = None  # the protocol revision it negotiated


class Recording(msgspec.Struct, frozen=True):
    sessions: tuple[RecordedSession, ...]
    answers: tuple[Answer, ...]  # every answer, in tape order
    paths: frozenset[str]  # HTTP paths the MCP traffic used
    entry: str  # the path a client starts at (the MCP endpoint, or a legacy server's SSE path)
    version: str | None = None  # the revision the tape's traffic negotiated first
    truncated: str | None = None  # where the tape was torn, when it was (the records before it are served)
    count: int = 0  # its records


def _method(request: Any) -> str | None:
    return request.get("method") if isinstance(request, dict) else None


_DEFAULTS = dict(zip(Answer.__struct_fields__[-len(Answer.__struct_defaults__):], Answer.__struct_defaults__))
_SEQUENCES = ("headers", "events", "lines", "channel", "elsewhere")  # lists in a draft, tuples once frozen


class _Draft(SimpleNamespace):
    """An answer while the tape is read: its records fill it in as they pass (a response, each SSE event, a
    message on the legacy channel or on another stream); `load` freezes it into an Answer."""

    def __init__(self, **given: Any) -> None:
        super().__init__(**{**_DEFAULTS, **{name: [] for name in _SEQUENCES}, **given})

    @property
    def method(self) -> str | None:
        return _method(self.request)

    def freeze(self) -> Answer:
        return Answer(**{k: tuple(v) if k in _SEQUENCES else v for k, v in vars(self).items()})


class _Session(msgspec.Struct):
    """A recorded session while the tape is read."""

    label: str
    transport: str
    answers: list[_Draft] = []  # (a new list for each: msgspec copies an empty one)
    initialize: _Draft | None = None
    seen: Any = None  # the model's session, to read what it learned of it once the tape is read

    def freeze(self, frozen: dict[int, Answer]) -> RecordedSession:
        initialize = frozen[id(self.initialize)] if self.initialize is not None else None
        # the model's lifecycle says how the server refused the session, if it did
        return RecordedSession(self.label, self.transport, tuple(frozen[id(a)] for a in self.answers), initialize,
                               self.seen.refused_with, self.seen.version)


class _Collect(Observer):
    def __init__(self) -> None:
        self.answers: list[_Draft] = []
        self.by_exchange: dict[int, _Draft] = {}
        self.sessions: dict[str, _Session] = {}
        self.stdio_open: dict[Any, _Draft] = {}
        self.paths: set[str] = set()

    def _session(self, seen: Seen) -> _Session | None:
        s = seen.session
        if s is None:
            return None
        found = self.sessions.get(s.label)
        if found is None:
            found = self.sessions[s.label] = _Session(s.label, s.transport, seen=s)
        return found

    def record(self, seen: Seen, model: Model) -> None:
        r, kind = seen.record, seen.kind
        if kind == records.HTTP_REQUEST and r.get("mcp"):
            answer = _Draft(seq=seen.seq, session=None, http_method=r.get("method", ""), request=r.get("msg"),
                            t=seen.t, last_event_id=http.get(r.get("headers") or [], http.LAST_EVENT_ID),
                            path=r.get("path", "/"))
            self.by_exchange[r["exchange"]] = answer
            self.answers.append(answer)
            self.paths.add(r.get("path", "/"))
            if seen.session is not None and seen.session.transport == LEGACY_SSE:
                # its answer may come back on the channel before its own 202 does: file it under the session now
                self._bind(answer, seen)
        elif kind == records.HTTP_RESPONSE and (answer := self.by_exchange.get(r.get("exchange"))):
            answer.status, answer.headers = r.get("status"), r.get("headers") or []
            answer.body, answer.raw, answer.body_t = r.get("msg"), r.get("raw"), seen.t
            # the model has read this response already: a refusal of a session it now knows to be gone
            answer.ends_session = (r.get("status") or 0) >= 400 and seen.session is not None \
                and seen.session.dead is not None
            if answer.session is None:
                self._bind(answer, seen)
        elif kind == records.SSE_EVENT and (answer := self.by_exchange.get(r.get("exchange"))):
            if answer.session is None and seen.session is not None:
                self._bind(answer, seen)  # a legacy GET learns its session from its endpoint event
            answer.events.append(r)
            if answer.session is not None and self.sessions[answer.session].transport == LEGACY_SSE:
                self._legacy_channel(self.sessions[answer.session], r)
        elif kind == records.END and (answer := self.by_exchange.get(r.get("exchange"))):
            answer.end = r.get("reason")
        elif kind == records.STDIO_LINE and "msg" in r:
            self._stdio(seen)
        return None

    def _legacy_channel(self, session: _Session, event: dict) -> None:
        """On the 2024-11-05 transport every answer comes back on the GET stream: file each message under the
        POST it answers (by id, or by progress token), so the replay can send it when that POST arrives."""
        msg = event.get("msg")
        if not isinstance(msg, dict):
            return
        posts = [a for a in session.answers if a.http_method == "POST" and isinstance(a.request, dict)]
        if "id" in msg and "method" not in msg:
            owner = next((a for a in reversed(posts) if a.request.get("id") == msg["id"]), None)
        else:
            token = jsonrpc.progress_of(msg)
            owner = next((a for a in reversed(posts)
                          if token is not None and jsonrpc.progress_token(a.request) == token), None)
            owner = owner or next((a for a in reversed(posts) if "id" in a.request), None)
        if owner is not None:
            owner.channel.append(event)

    def _bind(self, answer: _Draft, seen: Seen) -> None:
        session = self._session(seen)
        if session is None:
            return
        answer.session = session.label
        session.answers.append(answer)
        if answer.method == "initialize" and session.initialize is None:
            session.initialize = answer

    def _stdio(self, seen: Seen) -> None:
        r, msg = seen.record, seen.record["msg"]
        session = self._session(seen)
        for message in jsonrpc.messages(msg):
            kind = jsonrpc.kind(message)
            if r["dir"] == records.C2S:
                if kind in ("request", "notification"):
                    answer = _Draft(seq=seen.seq, session=session.label, http_method="", request=message,
                                    t=seen.t)
                    self.answers.append(answer)
                    session.answers.append(answer)
                    if kind == "request":
                        self.stdio_open[jsonrpc.id_key(message.get("id"))] = answer
                    if message.get("method") == "initialize" and session.initialize is None:
                        session.initialize = answer
            elif kind in ("response", "error"):
                answer = self.stdio_open.pop(jsonrpc.id_key(message.get("id")), None)
                if answer is not None:
                    answer.lines.append({"msg": message, "t": seen.t})
            elif kind in ("notification", "request"):
                # notifications and server-initiated requests (sampling, elicitation, roots) go out before the
                # answer of the call they belong to: by progress token, or the one call in flight
                token = jsonrpc.progress_of(message)
                owner = next((a for a in self.stdio_open.values()
                              if token is not None and jsonrpc.progress_token(a.request) == token),
                             None)
                if owner is None and len(self.stdio_open) == 1:
                    owner = next(iter(self.stdio_open.values()))
                if owner is not None:
                    owner.lines.append({"msg": message, "t": seen.t})


def load(path: str) -> Recording:
    collect = _Collect()
    model = Model([collect])
    reader = Reader(path)
    for _ in model.feed_tape(path, reader):
        pass
    for _ in model.finish():
        pass
    for session in collect.sessions.values():
        _place_standalone_events(session)
        _other_streams(session)
    frozen = {id(draft): draft.freeze() for draft in collect.answers}
    for answer in frozen.values():
        for event in answer.events:
            if event.get("after") is not None:  # the drafts' events are shared with `elsewhere`: fixed in both
                event["after"] = frozen[id(event["after"])]
    answers = tuple(frozen.values())
    sessions = tuple(s.freeze(frozen) for s in collect.sessions.values())
    entry = next((a.path for a in answers if a.http_method), "/mcp")  # a stdio tape is served at /mcp
    versions = [s.version for s in sessions if s.version]
    return Recording(sessions, answers, frozenset(collect.paths), entry, versions[0] if versions else None,
                     reader.truncated, reader.count)


def _place_standalone_events(session: _Session) -> None:
    """What a server sent on its standalone GET stream happened at a point among the session's requests (a
    list_changed after a tool call): mark each event with the last request sent before it."""
    if session.transport == LEGACY_SSE:
        return  # there the GET stream is the channel every answer comes back on
    posts = [a for a in session.answers if a.http_method == "POST" and jsonrpc.kind(a.request) == "request"]
    for answer in session.answers:
        if answer.http_method != "GET" or answer.last_event_id is not None:
            continue
        answer.events = [{**e, "after": next((p for p in reversed(posts) if p.t <= e.get("t", 0.0)), None)}
                         for e in answer.events]


def _other_streams(session: _Session) -> None:
    """On Streamable HTTP an answer's messages may come on more than its own stream: a dropped stream's rest on the
    GET that resumed it (Last-Event-ID), a notification on the standalone GET stream while it ran. File them under
    the answer (`elsewhere`), for a transport with one channel (stdio) to send with it."""
    if session.transport == LEGACY_SSE:
        return  # there every message is on the channel already (Answer.channel)
    owner_of: dict[Any, _Draft] = {}  # SSE event id -> the answer whose stream it was on
    for answer in session.answers:
        if answer.http_method == "GET" and answer.last_event_id is None:
            for event in answer.events:
                if event.get("after") is not None and "msg" in event:
                    event["after"].elsewhere.append(event)
            continue
        owner = owner_of.get(answer.last_event_id) if answer.http_method == "GET" else answer
        if owner is None:
            continue
        for event in answer.events:
            if "id" in event:
                owner_of[event["id"]] = owner
            if owner is not answer and "msg" in event:
                owner.elsewhere.append(event)
