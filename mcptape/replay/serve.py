"""The replay's decisions, with no sockets: which recorded answer a live message gets, rewritten for the live run.

Ids are mapped both ways: the recorded response goes out with the live request's id, recorded progress
notifications with the live progress token, recorded session ids become fresh live ones. Each live `initialize`
opens a fresh session bound to the next recorded session, whose answers are searched first.

The recording is read, never changed: what this replay did with it (how often each answer was used up, which the
client asked, how each request looks to matching) is the Replayer's own, so several replays can share one
loaded tape.
"""

from __future__ import annotations

import uuid
from typing import Any

import msgspec

from .. import edits
from ..model import HANDSHAKE_VERSIONS, LEGACY_SSE
from ..wire import jsonrpc, pointer
from . import match
from .recorded import Answer, RecordedSession, Recording

MISS_CODE = -32603
MISS = "mcptape: no recorded answer"  # how the error for a request the tape has no answer for begins


class LiveSession(msgspec.Struct):
    id: str
    recorded: RecordedSession | None
    ended: bool = False
    # recorded -> live, filled as answers are served, so a message delivered later (on a resumed or GET stream)
    # still goes out with the live request's id and progress token
    ids: dict = {}
    tokens: dict = {}
    derived: bool = False  # opened by a handshake the replay derived from a recorded server/discover


class Reply(msgspec.Struct):
    """What to send back for one live message: the recorded answer (rewritten), or an error of our own."""

    answer: Answer | None = None
    status: int = 200
    body: Any = None  # for JSON framing (or our own error)
    events: list[dict] = []  # for SSE framing: sse.event records, rewritten
    # Answer.messages, rewritten: what stdio writes, and what HTTP frames an answer recorded over stdio from
    lines: list[dict] = []
    session: LiveSession | None = None


def sent(recording: Recording):
    """What the tape's client sent, in order, as edits.reach reads it."""
    return ((a.t, a.request, a.http_method or None, a.session) for a in recording.answers)


class Replayer:
    def __init__(self, recording: Recording, ignore: list[str] = (), editor: edits.Editor | None = None,
                 match_meta: bool = False) -> None:
        self.recording = recording
        self.match_meta = match_meta  # compare every _meta key (match.py), not only those with protocol meaning
        self.editor = editor  # the faults to inject (edits.py), if any
        self.ignore = [pointer.parse(p) for p in ignore]
        self.sessions: dict[str, LiveSession] = {}
        self._next_session = 0
        self.unmatched: list[str] = []
        self.misses: list[str] = []  # for each request that got the miss error: the request, then the error's text
        self.legacy = any(s.transport == LEGACY_SSE for s in recording.sessions)
        if editor is not None:
            edits.check_transport(editor.edits, legacy=self.legacy)  # what this tape has no room for, refused up front
        # an edit that cannot fire on this tape is refused, one past its end warned about: before the first client
        self.warnings = edits.reach(editor.edits, sent(recording)) if editor is not None else []
        # an initialize-based conversation gets Streamable HTTP sessions, whatever transport recorded it: a stdio
        # tape served over HTTP hands out Mcp-Session-Id as a server of its era would
        self.session_era = not self.legacy and any(s.initialize is not None for s in recording.sessions)
        self.sessionless = LiveSession("", None)  # the id maps of stateless traffic
        # A 2026-07-28 tape (the client probed, the server answered server/discover, no initialize): a client that
        # falls back to initialize (an edit refused its probe) gets a handshake derived from the discover answer.
        self.discover = None if self.session_era or self.legacy else _discovered(recording)
        # a fallen-back client's requests lack the era's per-request _meta: its session matches without it
        self.era_ignore = [*self.ignore, *(pointer.parse(p) for p in ERA_META)]
        # (recorded session, method, derived) -> the candidates, each with its shape (match.normalize, once per
        # answer and per way of matching)
        self._pools: dict[tuple[str | None, Any, bool], list[tuple[Answer, Any]]] = {}
        self._shapes: dict[tuple[Answer, bool], Any] = {}
        self._used: dict[Answer, int] = {}  # how often each answer went out as recorded
        self._asked: set[Answer] = set()  # the answers the client asked for, delivered or not

    # -- sessions --------------------------------------------------------------------------------------------------

    def open_derived_session(self) -> LiveSession:
        """A live initialize on a 2026-07-28 tape: a session as a session-era server mints one."""
        live = LiveSession(uuid.uuid4().hex, None, derived=True)
        self.sessions[live.id] = live
        return live

    def open_session(self) -> LiveSession:
        """A live initialize without a session id (or a legacy GET): bind it to the next recorded session that
        began with one."""
        with_init = [s for s in self.recording.sessions if s.initialize is not None]
        recorded = None
        if with_init:
            recorded = with_init[min(self._next_session, len(with_init) - 1)]
            self._next_session += 1
        live = LiveSession(uuid.uuid4().hex, recorded)
        self.sessions[live.id] = live
        return live

    def dead_status(self) -> int:
        """What an unknown or ended session id gets: the status the recorded server used, else 404."""
        statuses = [s.dead_status for s in self.recording.sessions if s.dead_status]
        return statuses[0] if statuses else 404

    # -- answering -------------------------------------------------------------------------------------------------

    def answer(self, live: dict, session: LiveSession | None, stdio: bool = False, consume: bool = True) -> Reply:
        """`stdio`: the answer goes out as lines (Reply.lines), whatever transport recorded it. `consume`: it goes
        out as recorded, so it is used up; one an edit withholds or answers in place of (edits.delivers) is left
        for a retry."""
        if session is not None and session.derived:
            if live.get("method") in DERIVED:
                return self._derived(live, session)
            if live.get("params") is None and "method" in live:  # a 2026-07-28 request always has params (_meta)
                live = {**live, "params": {}}
        if live.get("method") == "initialize" and session is not None and session.recorded is not None:
            recorded = session.recorded.initialize
        else:
            recorded = match.find(live, self._pool(session, live.get("method")), self._ignore(session), self._used,
                                  self.match_meta)
        if recorded is None and live.get("method") == "ping" and "id" in live and self._has_ping(session):
            pong = {"jsonrpc": "2.0", "id": live["id"], "result": {}}  # "MUST respond promptly with an empty response"
            return Reply(body=pong, lines=[{"msg": pong}], session=session)
        if recorded is None:
            return self._miss(live, session)
        self._asked.add(recorded)
        if consume:
            self._used[recorded] = self._used.get(recorded, 0) + 1
        maps = session or self.sessionless
        if isinstance(recorded.request, dict) and "id" in recorded.request:
            maps.ids[jsonrpc.id_key(recorded.request["id"])] = live.get("id")
        token = jsonrpc.progress_token(recorded.request)
        if token is not None:
            maps.tokens[jsonrpc.id_key(token)] = jsonrpc.progress_token(live)
        return self._outcome(recorded, maps, session, stdio)

    def _derived(self, live: dict, session: LiveSession) -> Reply:
        """The handshake a session-era server built from the recorded discover answer would give: its
        capabilities, server info and instructions, at the client's revision when the server era knows it (else
        the newest it knows). notifications/initialized is accepted."""
        if "id" not in live:
            return Reply(status=202, session=session)
        if live.get("method") == "logging/setLevel":  # the era has none (2026-07-28 asks for a level per request)
            answer = {"jsonrpc": "2.0", "id": live["id"], "result": {}}
            return Reply(body=answer, lines=[{"msg": answer}], session=session)
        found = self.discover
        params = live.get("params") if isinstance(live.get("params"), dict) else {}
        asked = params.get("protocolVersion")
        meta = found.get("_meta") if isinstance(found.get("_meta"), dict) else {}
        result = {"protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
                  "capabilities": found.get("capabilities") if isinstance(found.get("capabilities"), dict) else {},
                  "serverInfo": found.get("serverInfo") or meta.get("io.modelcontextprotocol/serverInfo")
                  or {"name": "mcptape-replay", "version": "0"}}
        if isinstance(found.get("instructions"), str):
            result["instructions"] = found["instructions"]
        answer = {"jsonrpc": "2.0", "id": live["id"], "result": result}
        return Reply(body=answer, lines=[{"msg": answer}], session=session)

    def asked(self, recorded: Answer) -> bool:
        """Whether the client has asked for this recorded answer (a message the recorded server sent after it may
        go out now)."""
        return recorded in self._asked

    def _has_ping(self, session: LiveSession | None) -> bool:
        """ping exists in every revision before 2026-07-28 (which removed it)."""
        recorded = session.recorded if session is not None else None
        version = recorded.version if recorded is not None else self.recording.version
        return not (version or "").startswith("2026")

    def resume(self, last_event_id: str | None, session: LiveSession | None) -> Reply | None:
        """A GET: with Last-Event-ID, the recorded GET that resumed from that event; without, the session's
        recorded standalone stream (its messages are delivered on the live one)."""
        pool = session.recorded.answers if session is not None and session.recorded else self.recording.answers
        for recorded in pool:
            if (recorded.http_method == "GET" and recorded.last_event_id == last_event_id
                    and recorded not in self._used):
                self._used[recorded] = 1
                self._asked.add(recorded)
                return self._outcome(recorded, session or self.sessionless, session)
        return None

    def channel(self, recorded: Answer, session: LiveSession) -> list[dict]:
        """Legacy HTTP+SSE: what the recorded server sent on the GET stream in answer to this POST."""
        events = [self._rewrite_event(e, session) for e in recorded.channel]
        return [e for e in events if e is not None]

    def _outcome(self, recorded: Answer, maps: LiveSession, session: LiveSession | None,
                 stdio: bool = False) -> Reply:
        if recorded.http_method and not stdio:  # recorded over HTTP, served over HTTP: framed as it was
            events = [self._rewrite_event(e, maps) for e in recorded.events]
            return Reply(recorded, recorded.status or 200, self._rewrite(recorded.body, maps),
                           [e for e in events if e is not None], [], session)
        lines = [m for m in (self._rewrite_event(m, maps) for m in recorded.messages) if m is not None]
        request = jsonrpc.kind(recorded.request) == "request"
        if not lines and request and (recorded.status or 0) >= 400:
            # Refused by HTTP status with no JSON-RPC body (a 404 for an ended session, a 400 from a gateway):
            # the recorded server said nothing a stdio client could read. Writing nothing would leave the client
            # waiting for an answer that is never coming, so it gets an error of ours, labelled as a miss is.
            lines = [{"msg": self._rewrite({"jsonrpc": "2.0", "id": recorded.request["id"], "error": {
                "code": MISS_CODE, "message": f"mcptape: the recorded server refused this request with HTTP "
                                              f"{recorded.status} and no JSON-RPC body, which stdio cannot carry"}},
                maps)}]
        # over HTTP (a stdio answer): a request's stream or JSON body, else 202 with nothing (streamable.py frames it)
        return Reply(recorded, 200 if request else 202, None, [], lines, session)

    def _pool(self, session: LiveSession | None, method: Any) -> list[tuple[Answer, Any]]:
        """The answers a request of this method may get, the live session's recorded session first, each with its
        shape; built once."""
        if type(method) is not str:
            return []  # not a request (jsonrpc.kind): nothing recorded answers it
        label = session.recorded.label if session is not None and session.recorded is not None else None
        derived = session is not None and session.derived
        pool = self._pools.get((label, method, derived))
        if pool is None:
            pool = self._pools[(label, method, derived)] = [(a, self._shape(a, derived))
                                                            for a in self._candidates(session) if a.method == method]
        return pool

    def _ignore(self, session: LiveSession | None) -> list[list[str]]:
        return self.era_ignore if session is not None and session.derived else self.ignore

    def _shape(self, recorded: Answer, derived: bool = False) -> Any:
        """A recorded request as matching sees it: this replay's own, for it depends on its ignore pointers (and,
        for a session whose handshake the replay derived, without the era's _meta)."""
        shape = self._shapes.get((recorded, derived))
        if shape is None:
            ignore = self.era_ignore if derived else self.ignore
            shape = self._shapes[(recorded, derived)] = match.normalize(recorded.request, ignore, self.match_meta)
        return shape

    def _candidates(self, session: LiveSession | None) -> tuple[Answer, ...]:
        if session is not None and session.recorded is not None:
            mine = session.recorded.answers
            return (*mine, *(a for a in self.recording.answers if a.session != session.recorded.label))
        return self.recording.answers

    def _miss(self, live: dict, session: LiveSession | None) -> Reply:
        method = live.get("method")
        self.unmatched.append(jsonrpc.describe(live))
        if "id" not in live:
            return Reply(status=202, session=session)  # a notification needs no answer
        best, diff = match.closest(live, self._candidates(session), self._ignore(session), self.match_meta)
        where = f"closest: record {best.seq} {best.method}" if best else "the tape has no requests"
        if best is not None:
            differs = match.paths(diff)
            where += f", differs at {', '.join(differs[:5])}" if differs else ", identical once normalized"
        message = f"{MISS} for {method} ({where})"
        self.misses.append(f"{self.unmatched[-1]}: {message.removeprefix('mcptape: ')}")
        error = {"jsonrpc": "2.0", "id": live.get("id"), "error": {
            "code": MISS_CODE, "message": message,
            "data": {"closest": {"record": best.seq, "request": best.request} if best else None,
                     "difference": _json_safe(diff)}}}
        return Reply(status=200, body=error, lines=[{"msg": error}], session=session)

    def unused(self) -> list[Answer]:
        return [a for a in self.recording.answers
                if a not in self._used and isinstance(a.request, dict) and "id" in a.request]

    # -- rewriting -------------------------------------------------------------------------------------------------

    def _rewrite(self, msg: Any, maps: LiveSession) -> Any:
        if isinstance(msg, list):
            return [self._rewrite(m, maps) for m in msg]
        if not isinstance(msg, dict):
            return msg
        out = msg
        if ("result" in msg or "error" in msg) and jsonrpc.id_key(msg.get("id")) in maps.ids:
            out = {**msg, "id": maps.ids[jsonrpc.id_key(msg.get("id"))]}
        params = msg.get("params")
        if msg.get("method") == "notifications/progress" and isinstance(params, dict):
            token = jsonrpc.id_key(params.get("progressToken"))
            if token in maps.tokens:
                if maps.tokens[token] is None:
                    return None  # the live client asked for no progress
                out = {**out, "params": {**params, "progressToken": maps.tokens[token]}}
        return out

    def _rewrite_event(self, event: dict, maps: LiveSession) -> dict | None:
        if "msg" not in event:
            return event
        msg = self._rewrite(event["msg"], maps)
        return None if msg is None else {**event, "msg": msg}


DERIVED_HANDSHAKE = "derived-handshake"  # what the replay log's edit record names when it derived the handshake
# What a derived session answers itself; the rest is served from the recorded 2026-07-28 answers. A session-era
# client that sees `logging` declared may set a level, which a 2026-07-28 tape cannot hold: it gets an empty result.
DERIVED = ("initialize", "notifications/initialized", "logging/setLevel")
# 2026-07-28 requests carry the era's per-request _meta (protocol version, client info and capabilities), which a
# client fallen back to initialize does not send: in a session whose handshake was derived, _meta is not matched.
ERA_META = ("/params/_meta",)


def _discovered(recording: Recording) -> dict | None:
    """The result of the recorded server/discover answer, if the tape has one."""
    for answer in recording.answers:
        if answer.method == "server/discover":
            for message in answer.messages:
                if isinstance(message["msg"].get("result"), dict):
                    return message["msg"]["result"]
    return None


def _json_safe(diff: dict) -> Any:
    """deepdiff results hold types and sets; the error's data must be plain JSON."""
    import json

    return json.loads(json.dumps(diff, default=str))
