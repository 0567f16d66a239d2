"""What a tape's client did, as a script to do again: the client's steps in recorded order, each with the server
messages it followed in the tape (its `needs`), so a re-drive sends it only once those have arrived again.

Sans-I/O: built by reading the tape through the analysis model (model.py), so a session here is the session
`check` and `diff` name. The server's messages are counted, not matched, by `server_key`: the Nth answer to a
request id, the Nth server request of a method, the Nth progress for a token, the Nth other notification of a
method, the HTTP answer to a recorded exchange. A re-drive counts what arrives with the same function; a step
waits until its session's counts reach what the tape held before it. Recorded concurrency and cancellations keep
their meaning: a cancellation sent after the second progress of a call goes out after the second progress again,
and what the server sent about that call after it is counted but never waited for (it may not come again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model import STDIO, Model, Observer, Seen
from ..redact.pseudonym import PSEUDONYM
from ..tape import records
from ..tape.file import Reader
from ..wire import http, jsonrpc, pointer

# Step kinds
POST, GET, DELETE = "POST", "GET", "DELETE"  # an HTTP request, by its method
CLOSE = "close"  # the client hung up on an exchange (2026-07-28: the cancellation; elsewhere a stream let go)
LINE = "line"  # a line to a stdio server's stdin
EOF = "eof"  # the client closed the stdio server's stdin

Key = tuple  # (session label, what): see server_key


@dataclass
class Step:
    kind: str
    seq: int  # its record in the tape
    session: str | None  # the recorded session label (for an initialize POST, known once its answer is read)
    needs: list[tuple[Key, int]] = field(default_factory=list)  # server messages that came before it
    exchange: int | None = None  # HTTP: the recorded exchange (CLOSE: the one to hang up on)
    conn: int | None = None  # HTTP: the recorded client connection (a 2026-07-28 session is one)
    sent_session: str | None = None  # the Mcp-Session-Id it carried, as recorded
    answer_session: str | None = None  # the Mcp-Session-Id its answer handed out, as recorded
    last_event_id: str | None = None  # a GET's Last-Event-ID, as recorded
    path: str = ""
    query: list = field(default_factory=list)
    headers: list = field(default_factory=list)
    body: dict = field(default_factory=dict)  # the record's body fields: msg, or raw bytes
    # answers to the server's own requests: recorded id -> (method, ordinal) of the request it answers
    answers: dict = field(default_factory=dict)
    resume: tuple[int, int] | None = None  # a GET with Last-Event-ID: (exchange, index) of the event it resumes
    # a cancellation (notifications/cancelled, or hanging up on a 2026-07-28 request) that had no server message
    # to wait for: the client gave up after a time, the only evidence there is. (what it gave up on, seconds)
    gave_up: tuple[Any, float] | None = None


@dataclass
class Script:
    tape: str
    transport: str | None = None  # the first session's (model.STDIO, STREAMABLE, …)
    steps: list[Step] = field(default_factory=list)
    final: list[tuple[Key, int]] = field(default_factory=list)  # what the server sent after the last step
    # the streams the server ended: at the end a re-drive lets them end too (verify stopping would cut them short)
    ended: list[tuple[Key, int]] = field(default_factory=list)
    methods: dict = field(default_factory=dict)  # (session, request id) -> the client request's method

    @property
    def stdio(self) -> bool:
        return self.transport == STDIO

    def redacted(self) -> list[tuple[Step, str, str]]:
        """Each redacted value the client sent (a header, a query parameter, a place in a message), as (step,
        pointer, value): verify cannot send what the tape no longer has."""
        out = []
        for step in self.steps:
            for name, value in step.headers:
                if PSEUDONYM.search(value):
                    out.append((step, f"/headers/{name.lower()}", value))
            for name, value in step.query:
                if PSEUDONYM.search(value):
                    out.append((step, f"/query/{name}", value))
            for where, value in redacted_pointers(step.body.get("msg")):
                out.append((step, where, value))
        return out


def redacted_pointers(value: Any, path: str = "") -> list[tuple[str, str]]:
    """(JSON pointer, value) for each string in a message that holds a pseudonym (a batch's items are /0, /1, …)."""
    if isinstance(value, str):
        return [(path, value)] if PSEUDONYM.search(value) else []
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return []
    return [p for k, v in items for p in redacted_pointers(v, path + pointer.encode([k]))]


def server_key(msg: Any) -> tuple | None:
    """How a server message is counted (see the module's docstring); None for what is not JSON-RPC."""
    kind = jsonrpc.kind(msg)
    if kind in ("response", "error"):
        return ("answer", jsonrpc.id_key(msg.get("id")))
    if kind == "request":
        return ("ask", msg["method"])
    if kind == "notification":
        if msg["method"] == "notifications/progress":
            return ("progress", jsonrpc.id_key(jsonrpc.progress_of(msg)))
        return ("note", msg["method"])
    return None


# Headers a re-drive never copies from the tape: the connection's own, and those it sets itself.
_NOT_COPIED = frozenset({"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade",
                         "accept-encoding", "te", "trailer", "proxy-connection", http.SESSION_ID, http.LAST_EVENT_ID})


class _Builder(Observer):
    def __init__(self, script: Script) -> None:
        self.script = script
        self.counts: dict[Key, int] = {}
        self.changed: dict[Key, None] = {}  # keys counted since the last step (ordered, no duplicates)
        self.by_exchange: dict[int, Step] = {}
        self.asks: dict[tuple[str, Any], tuple[str, int]] = {}  # (session, id) -> (method, ordinal)
        self.event_counts: dict[int, int] = {}
        self.event_at: dict[str, tuple[int, int]] = {}  # SSE event id -> (exchange, index): what a resume names
        self.sent_at: dict[Any, float] = {}  # recorded exchange, or (session, request id) -> when it was sent
        self.ended: set[int] = set()  # exchanges the server (not the client) ended
        self.tokens: dict[tuple, Any] = {}  # (session, request id) -> the progress token the request carried
        self.requests: dict[int, list[tuple]] = {}  # exchange -> the (session, request id)s its POST carried
        # What the server said about a request after the client cancelled it may come again or not: the receiver
        # only SHOULD stop, and "cancellation notifications may arrive after request processing has completed".
        # Such messages are counted (a re-drive counts them too) but no step waits for them: a step needs its
        # key's count less the messages that raced a cancellation.
        self.cancelled: set[tuple] = set()  # (session, request id)
        self.cancelled_tokens: set[tuple] = set()  # (session, progress token)
        self.racing: dict[Key, int] = {}

    def record(self, seen: Seen, model: Model) -> None:
        r, kind = seen.record, seen.kind
        label = seen.session.label if seen.session is not None else None
        if seen.session is not None and self.script.transport is None:
            self.script.transport = seen.session.transport
        ex = r.get("exchange")
        step = self.by_exchange.get(ex) if ex is not None else None
        if step is not None and step.session is None:
            step.session = label  # an initialize POST's session, or a legacy channel's, known now
        if kind == records.HTTP_REQUEST:
            if not r.get("mcp", True):
                return  # OAuth, discovery, …: not the conversation
            headers = [(k, v) for k, v in r.get("headers") or [] if k.lower() not in _NOT_COPIED]
            last = http.get(r.get("headers") or [], http.LAST_EVENT_ID)
            step = self._step(r.get("method", POST), seen, label, exchange=ex, conn=r.get("conn"),
                              path=r.get("path", "/"), query=list(r.get("query") or []), headers=headers,
                              body={k: r[k] for k in ("msg", "raw") if k in r}, last_event_id=last,
                              sent_session=http.get(r.get("headers") or [], http.SESSION_ID),
                              resume=self.event_at.get(last) if last is not None else None)
            self.by_exchange[ex] = step
            self.sent_at[ex] = seen.t
            if step.resume is not None:
                # a resumption: once the event it names has come again (and its stream ended, if it had); SSE
                # events are not counted otherwise (a priming event is no message, and servers differ in them)
                resumed = step.resume[0]
                step.needs.append(((None, "event", resumed), step.resume[1]))
                if resumed in self.ended:
                    step.needs.append(((None, "end", resumed), 1))
            self.requests[ex] = []  # (an exchange number a new request takes is a new exchange)
            self._answers(step, label, seen.t)
        elif kind == records.HTTP_RESPONSE and step is not None:
            step.answer_session = r.get("session")
            self._count(None, ("http", ex))  # exchanges are numbered across the tape: no session needed
            self._server(label, r.get("msg"), ex)
        elif kind == records.SSE_EVENT and step is not None:
            index = self.event_counts[ex] = self.event_counts.get(ex, 0) + 1
            if "id" in r:
                self.event_at[r["id"]] = (ex, index)
            if r.get("event") == "endpoint":
                self._count(label, ("endpoint",))
            self._server(label, r.get("msg"), ex)
        elif kind == records.END and step is not None:
            if r.get("reason") != records.CLIENT_DISCONNECTED:
                self.ended.add(ex)
            else:
                close = self._step(CLOSE, seen, label, exchange=ex)
                if not close.needs:
                    close.gave_up = (ex, seen.t - self.sent_at[ex])
        elif kind == records.STDIO_LINE:
            if r.get("dir") == records.S2C:
                self._server(label, r.get("msg"))
            else:
                step = self._step(LINE, seen, label, body={k: r[k] for k in ("msg", "raw") if k in r})
                self._answers(step, label, seen.t)
        elif kind == records.STDIO_EOF and r.get("dir") == records.C2S:
            self._step(EOF, seen, label)

    def _step(self, kind: str, seen: Seen, label: str | None, **fields) -> Step:
        step = Step(kind, seen.seq, label, self._needs(), **fields)
        self.script.steps.append(step)
        return step

    def _needs(self) -> list[tuple[Key, int]]:
        needs = [(key, self.counts[key] - self.racing.get(key, 0)) for key in self.changed]
        self.changed.clear()
        return needs

    def _count(self, label: str | None, what: tuple, racing: bool = False) -> int:
        key = (label, *what)
        n = self.counts[key] = self.counts.get(key, 0) + 1
        if racing:
            self.racing[key] = self.racing.get(key, 0) + 1
        else:
            self.changed[key] = None
        return n

    def _races(self, label: str | None, what: tuple, exchange: int | None) -> bool:
        """Whether a server message is about a request the client had already cancelled: its answer, its
        progress, or anything on the stream that answers it (a POST's SSE stream carries what concerns its
        request; stdio and a legacy channel's shared stream say nothing of whom a log line or a server request
        is for)."""
        if what[0] == "answer":
            return (label, what[1]) in self.cancelled
        if what[0] == "progress":
            return (label, what[1]) in self.cancelled_tokens
        asked = self.requests.get(exchange) if exchange is not None else None
        return bool(asked) and all(key in self.cancelled for key in asked)

    def _server(self, label: str | None, body: Any, exchange: int | None = None) -> None:
        if body is None:
            return
        for msg in jsonrpc.messages(body):
            what = server_key(msg)
            if what is None:
                continue
            n = self._count(label, what, bool(self.cancelled) and self._races(label, what, exchange))
            if what[0] == "ask":
                self.asks[(label, jsonrpc.id_key(msg.get("id")))] = (msg["method"], n)

    def _answers(self, step: Step, label: str | None, t: float) -> None:
        """What the client's messages in this step are about: its answers to the server's own requests (which
        request each answers, so the re-drive answers the live one under its live id), the requests it starts,
        the requests it cancels."""
        for msg in jsonrpc.messages(step.body.get("msg")):
            kind = jsonrpc.kind(msg)
            if kind == "request":
                key = (label, jsonrpc.id_key(msg.get("id")))
                self.script.methods[key] = msg["method"]
                self.sent_at[key] = t
                token = jsonrpc.progress_token(msg)
                if token is not None:
                    self.tokens[key] = jsonrpc.id_key(token)
                if step.exchange is not None:
                    self.requests[step.exchange].append(key)
            elif kind == "notification" and msg["method"] == "notifications/cancelled":
                params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
                key = (label, jsonrpc.id_key(params.get("requestId")))
                self.cancelled.add(key)
                if key in self.tokens:
                    self.cancelled_tokens.add((label, self.tokens[key]))
                if key in self.sent_at and not step.needs:
                    step.gave_up = (key, t - self.sent_at[key])
            elif kind in ("response", "error"):
                asked = self.asks.get((label, jsonrpc.id_key(msg.get("id"))))
                if asked is not None:
                    step.answers[jsonrpc.id_key(msg.get("id"))] = asked

    def finish(self, model: Model) -> tuple:
        self.script.final = self._needs()
        self.script.ended = [((None, "end", ex), 1) for ex in sorted(self.ended)]
        return ()


def build(path: str) -> Script:
    """The client's side of a tape, as a script. Raises tape.file.TapeError when the tape cannot be read."""
    reader = Reader(path)
    script = Script(reader.path)
    model = Model([_Builder(script)])
    for _ in model.feed_tape(reader.path, reader):
        pass
    for _ in model.finish():
        pass
    return script
