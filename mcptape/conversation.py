"""What the analysis model (model.py) builds from a tape's records: sessions, the HTTP exchanges they use, and the
calls in them, with the transports a session can come by. The model fills them in as it reads; its observers read
them (check, diff, report, show, replay)."""

from __future__ import annotations

from typing import Any

from .facts import Outcome
from .lifecycle import Life, Transition
from .tape import records

# How a session reached us. The rules each transport obeys differ (docs/transports.md).
STDIO = "stdio"
LEGACY_SSE = "http+sse"  # 2024-11-05
STREAMABLE = "streamable-http"  # 2025-03-26 ... 2025-11-25, sessions
STATELESS = "stateless-http"  # 2026-07-28
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


# A session's life (opened, refused, deleted, expired, ended, superseded) is decided by lifecycle.py's table, which
# the model asks; check, show, diff and replay read it (docs/sessions.md).


class Session:
    """A session, as its records made it (an entity: equal only to itself)."""

    __slots__ = ("label", "tape", "transport", "version", "initialized", "life", "left", "resumed")
    label: str  # the session id as recorded, or a stable label where the transport has none
    tape: str
    transport: str
    version: str | None  # negotiated: initialize's answer, or the 2026 header
    initialized: bool
    life: Life  # its state, and the steps that made it (lifecycle.py)
    # stdio: where each side left (the record that closed its stream), keyed by the direction it wrote in: c2s, the
    # client closed the server's stdin; s2c, the server closed its stdout
    left: dict[str, int]
    resumed: set[str]  # the Last-Event-ID values the client's GETs resumed from

    # (The model's classes are plain classes, their __init__ written out: @dataclass builds each class's methods by
    # compiling their source when the module is imported, 0.3 ms a class, a sixth of `mcptape replay`'s start
    # with the other classes on its path; and mypyc leaves the __init__ it generates interpreted, docs/compiled.md.
    # A new field is set here too.)
    def __init__(self, label: str, tape: str, transport: str) -> None:
        self.label, self.tape, self.transport = label, tape, transport
        self.version, self.initialized, self.life = None, False, Life()
        self.left, self.resumed = {}, set()

    def __repr__(self) -> str:
        return f"Session({self.label!r}, {self.transport}, {self.life.state.value})"

    # Read through its life: the step that opened it, made it dead (refused, deleted or expired: the first that
    # happened), ended it or superseded it; the status it was refused with once gone; how it was first met.
    # (plain properties, not property(attrgetter(...)): mypyc compiles these, docs/compiled.md)
    @property
    def opened(self) -> Transition | None:
        return self.life.opened

    @property
    def dead(self) -> Transition | None:
        return self.life.dead

    @property
    def ended(self) -> Transition | None:
        return self.life.ended

    @property
    def superseded(self) -> Transition | None:
        return self.life.superseded

    @property
    def refused_with(self) -> int | None:
        return self.life.refused_with

    @property
    def unknown(self) -> bool:
        return self.life.unknown

    @property
    def midway(self) -> bool:
        return self.life.midway

    @property
    def short(self) -> str:
        """How show and diff name it: the start of its id; stdio#N (the Nth run of a stdio server); stateless."""
        if self.transport == STDIO:
            return "stdio" + self.label[self.label.rfind("#"):]
        if self.transport == STATELESS:
            return "stateless"
        return self.label[:8]


class Exchange:
    """One HTTP request and what came back, while it is open. When it ends, its headers and bodies are dropped:
    calls remembered after they settle still point at their exchange, and thousands of them would otherwise keep
    every request's headers and body alive."""

    __slots__ = ("number", "seq", "t", "method", "conn", "session", "sent_session", "version_header", "headers", "msg",
                 "status", "get_stream", "last_event_id", "last_sse_id", "end", "injected", "calls_known", "mcp",
                 "passed")
    number: int
    seq: int
    t: float
    method: str
    conn: int | None
    session: Session | None
    sent_session: str | None  # the Mcp-Session-Id the client put on it
    version_header: str | None
    headers: list
    msg: Any
    status: int | None
    get_stream: bool  # a GET answered with an event stream: the standalone stream, or a resumed one
    last_event_id: str | None  # on a GET: the stream it resumes
    last_sse_id: str | None  # the last event id its SSE stream carried: a stream the client could resume
    end: str | None
    injected: bool
    calls_known: bool  # its request body was read into calls (delayed until the session is known)
    mcp: bool  # sent to the MCP endpoint (else OAuth, discovery…: recorded, but no protocol)
    passed: Passed | None  # its records, while an observer reads whole exchanges

    # (written out, as Session's; a new field is set here too)
    def __init__(self, number: int, seq: int, t: float, method: str, conn: int | None, session: Session | None,
                 sent_session: str | None, version_header: str | None, headers: list, msg: Any = None,
                 injected: bool = False, mcp: bool = True) -> None:
        self.number, self.seq, self.t, self.method, self.conn, self.session = number, seq, t, method, conn, session
        self.sent_session, self.version_header, self.headers, self.msg = sent_session, version_header, headers, msg
        self.injected, self.mcp = injected, mcp
        self.status = self.last_event_id = self.last_sse_id = self.end = self.passed = None
        self.get_stream = self.calls_known = False


class Passed:
    """An exchange's records as they passed, for whoever exports whole exchanges (HAR, mitmproxy flows): the
    request, the head of the response, the SSE events, the end, and every record about it in order (edits
    included). Kept only while an observer reads exchanges (Observer.exchange): check never pays for it."""

    __slots__ = ("request", "response", "events", "end", "records")
    request: dict
    response: dict | None
    events: list[dict]
    end: dict | None
    records: list[dict]

    def __init__(self, request: dict, records: list[dict]) -> None:
        self.request, self.records = request, records
        self.response = self.end = None
        self.events = []


class Call:
    """A JSON-RPC request and everything that happened to it. Once it has settled and its observers have seen it
    whole, it drops its messages (`request`, `response` and `progress` are emptied) and is remembered for a while
    as it is, to recognise a late answer, late progress or a reused id: thousands are remembered, and with their
    messages, keeping and freeing them cost check a tenth of its time on a large tape (as Exchange, for the same
    reason)."""

    __slots__ = ("tape", "session", "dir", "id", "method", "request", "seq", "t", "exchange", "response",
                 "response_seq", "progress", "cancel", "injected", "outcome", "key", "token_key")
    tape: str
    session: Session
    dir: str  # who sent the request: c2s (client request) or s2c (server request)
    id: Any
    method: str
    request: dict | None
    seq: int
    t: float
    exchange: Exchange | None  # the HTTP exchange that carried the request
    response: dict | None
    response_seq: int | None
    # (seq, t, progress) of each progress notification; a list from the first one on (most calls never get one)
    progress: list[tuple[int, float, Any]] | tuple[()]
    cancel: tuple[int, float, Any] | None
    injected: bool
    outcome: Outcome | None  # how it ended: decided when it settles, before its messages are dropped
    # where the model files it: (id(session), dir, id) among the calls, (id(session), token) among progress tokens
    key: tuple
    token_key: tuple | None

    # (written out, as Exchange's; a new field is set here too)
    def __init__(self, tape: str, session: Session, dir: str, id: Any, method: str, request: dict | None, seq: int,
                 t: float, exchange: Exchange | None = None, injected: bool = False) -> None:
        self.tape, self.session, self.dir, self.id, self.method, self.request = tape, session, dir, id, method, request
        self.seq, self.t, self.exchange, self.injected = seq, t, exchange, injected
        self.response = self.response_seq = self.cancel = self.outcome = self.token_key = None
        self.progress = self.key = ()

    def __repr__(self) -> str:
        return f"Call({self.method!r}, id={self.id!r}, {self.dir}, seq={self.seq}, {self.outcome})"

    @property
    def answered(self) -> bool:
        return self.response_seq is not None  # still true once a settled call has dropped its messages

    @property
    def rejected_status(self) -> int | None:
        """An HTTP error status that refused the request outright (no JSON-RPC answer follows)."""
        ex = self.exchange
        if ex is not None and ex.status is not None and ex.status >= 400 and self.dir == records.C2S:
            return ex.status
        return None
