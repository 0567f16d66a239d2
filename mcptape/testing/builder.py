"""A conversation builder: tests state an MCP conversation in a few lines and get the records a recorder would
have written for it (as mitmproxy's `test/tflow.py` gives flows). Records are plain dicts made by
`mcptape.tape.records`, so whatever reads a tape reads these; nothing here opens a socket or a process.

    tape = Conversation()                          # Streamable HTTP, 2025-11-25
    tape.initialize()                              # initialize + its answer (a session id) + initialized
    tape.call("tools/call", {"name": "add"}, result={"content": []})
    tape.call("tools/call", status=404, reply=None) # refused: the session is gone
    findings = tape.check()                         # every rule, in memory

    stdio = Conversation(transport=STDIO, revision="2025-06-18")
    stdio.initialize()
    stdio.request("tools/call", {"name": "slow"})  # sent, never answered
    stdio.exit(0)

The transports are the model's: Streamable HTTP with sessions (2025-03-26 … 2025-11-25), the legacy HTTP+SSE
channel (2024-11-05), stateless HTTP (2026-07-28, `server/discover` instead of a handshake) and stdio. Low-level
steps (`exchange`, `line`, `edit`, `raw`) write anything else, malformed messages included.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..check.modern import CACHED
from ..model import LEGACY_SSE, STATELESS, STDIO, STREAMABLE
from ..tape import records as rec
from ..wire import header_value, jsonrpc, sse

TRANSPORTS = (STREAMABLE, LEGACY_SSE, STATELESS, STDIO)
_DEFAULT_REVISION = {STREAMABLE: "2025-11-25", LEGACY_SSE: "2024-11-05", STATELESS: "2026-07-28",
                     STDIO: "2025-11-25"}
_MISSING: Any = object()  # `result=` not given: the builder answers with an empty result
# What the builder's peers declare unless told otherwise: every feature, so a conversation is correct until a test
# declares less (`initialize(capabilities={})`).
SERVER_CAPABILITIES = {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True},
                       "prompts": {"listChanged": True}, "logging": {}, "completions": {}}
CLIENT_CAPABILITIES = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}}
JSON_TYPE = [("content-type", "application/json")]
SSE_TYPE = [("content-type", "text/event-stream")]


def request(id_: Any, method: str, params: dict | None = None) -> dict:
    msg: dict = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: dict | None = None) -> dict:
    msg: dict = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def result(id_: Any, value: Any = None) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "result": {} if value is None else value}


def error(id_: Any, code: int, message: str, data: Any = _MISSING) -> dict:
    err: dict = {"code": code, "message": message}
    if data is not _MISSING:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": err}


def _standard_headers(msg: dict) -> list[tuple[str, str]]:
    """The headers a 2026-07-28 client repeats from the body: Mcp-Method, and Mcp-Name for a call by name (in the
    =?base64?…?= form when it is not plain ASCII)."""
    headers = [("mcp-method", str(msg["method"]))]
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    name = params.get("uri") if msg["method"] == "resources/read" else params.get("name")
    if msg["method"] in ("tools/call", "resources/read", "prompts/get") and isinstance(name, str):
        headers.append(("mcp-name", header_value.encode(name)))
    return headers


@dataclass
class Event:
    """One SSE event of a streamed answer: a message (or any text as `data`), with an optional event id."""

    msg: Any = None
    id: str | None = None
    data: str | None = None
    event: str | None = None


@dataclass
class Conversation:
    """Records of one conversation, in order, with a clock that ticks a second per step unless told otherwise."""

    transport: str = STREAMABLE
    revision: str | None = None
    name: str = "test"
    t: float = 0.0
    step: float = 1.0
    records: list[dict] = field(default_factory=list)
    session: str | None = None  # the session id in use (Streamable HTTP) or the legacy channel's
    capabilities: dict = field(default_factory=lambda: dict(SERVER_CAPABILITIES))  # the server's, as initialize
    # answers them

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport {self.transport!r}: one of {', '.join(TRANSPORTS)}")
        self.revision = self.revision or _DEFAULT_REVISION[self.transport]
        self._ids = itertools.count(1)
        self._exchanges = itertools.count(0)
        self._sessions = itertools.count(1)
        self._legacy_stream: int | None = None
        self.capture_start()

    # -- the clock and plain records ---------------------------------------------------------------------------

    def tick(self, seconds: float | None = None) -> float:
        self.t += self.step if seconds is None else seconds
        return self.t

    def raw(self, record: dict) -> dict:
        """Append a record as it is (any kind, any fields: hostile tapes included)."""
        self.records.append(record)
        return record

    def next_id(self) -> int:
        return next(self._ids)

    def capture_start(self) -> dict:
        return self.raw(rec.capture_start(self.t, "mcptape-builder", {}, {}))

    # -- HTTP --------------------------------------------------------------------------------------------------

    def exchange(self, msg: Any = None, *, method: str = "POST", path: str = "/mcp", session: Any = _MISSING,
                 headers: Sequence[tuple[str, str]] = (), query: Sequence[tuple[str, str]] = (),
                 status: int | None = 200, reply: Any = None, events: Iterable[Event | dict] | None = None,
                 reply_headers: Sequence[tuple[str, str]] = (), new_session: str | None = None,
                 raw_reply: bytes | None = None, reason: str = "", end: str | None = rec.COMPLETE,
                 injected: bool = False, conn: int = 0, version_header: Any = _MISSING) -> int:
        """One HTTP exchange: the request (a JSON body `msg`, or none), then the answer: `status` with a JSON
        `reply`, or an SSE stream of `events` (messages or Event), or no answer at all (`status=None`), then how
        it ended (`end=None`: still open when the tape stops). `session` defaults to the conversation's session;
        `headers` are sent as given, in place of the builder's own of the same name (a client that sends a wrong
        Mcp-Method); `injected` marks the answer as an edit's. Returns the exchange number."""
        number = next(self._exchanges)
        sent = self.session if session is _MISSING else session
        version = self._version_header(msg) if version_header is _MISSING else version_header
        own = []
        if method == "POST" and self.transport != LEGACY_SSE:
            own.append(("accept", "application/json, text/event-stream"))  # what a client must send
        if sent is not None and self.transport == STREAMABLE:
            own.append(("mcp-session-id", sent))
        if version is not None:
            own.append(("mcp-protocol-version", version))
        if self.transport == STATELESS and isinstance(msg, dict) and "method" in msg:
            own += _standard_headers(msg)
        given = {name.lower() for name, _ in headers}  # a header given replaces the builder's own
        request_headers = [*headers, *(h for h in own if h[0] not in given)]
        body = rec.body(jsonrpc.dumps(msg).encode()) if msg is not None else {}
        self.raw(rec.http_request(self.tick(), number, conn, method, path, list(query), request_headers, sent,
                                      version, True, body))
        if status is not None:
            streamed = events is not None
            content = SSE_TYPE if streamed else (JSON_TYPE if reply is not None else [])
            answer_headers = [*content, *reply_headers]
            if new_session is not None:
                answer_headers.append(("mcp-session-id", new_session))
            fields = {"raw": raw_reply} if raw_reply is not None else (
                rec.body(jsonrpc.dumps(reply).encode()) if reply is not None and not streamed else {})
            response = rec.http_response(self.tick(0), number, status, reason, answer_headers, new_session,
                                             fields)
            if injected:
                self.edit(["builder"], f"answered {status}", exchange=number)
                response["injected"] = True
            self.raw(response)
            for item in events or ():
                self.sse(number, item)
        if end is not None:
            self.end(number, end)
        return number

    def sse(self, exchange: int, item: Event | dict, injected: bool = False) -> dict:
        """One event on an exchange's stream (a message, or an Event)."""
        ev = item if isinstance(item, Event) else Event(msg=item)
        data = jsonrpc.dumps(ev.msg) if ev.msg is not None else ev.data
        record = rec.sse_event(self.tick(0), exchange, sse.Event(id=ev.id, event=ev.event, data=data))
        if injected:
            record["injected"] = True
        return self.raw(record)

    def end(self, exchange: int, reason: str = rec.COMPLETE, detail: str | None = None) -> dict:
        return self.raw(rec.end(self.tick(0), exchange, reason, detail))

    def _version_header(self, msg: Any) -> str | None:
        """The MCP-Protocol-Version header a client of this revision sends: none on the handshake, none before
        2025-06-18 (the header's first revision), none on legacy SSE."""
        if self.transport == LEGACY_SSE or self.revision in ("2024-11-05", "2025-03-26"):
            return None
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            return None
        return self.revision

    # -- stdio -------------------------------------------------------------------------------------------------

    def line(self, direction: str, msg: Any = _MISSING, raw: bytes | None = None, injected: bool = False) -> dict:
        """One stdio line: a message (c2s: to the server's stdin; s2c: from its stdout) or raw bytes."""
        data = raw if raw is not None else jsonrpc.dumps(msg).encode()
        record = rec.stdio_line(self.tick(), direction, data)
        if injected:
            record["injected"] = True
        return self.raw(record)

    def stderr(self, text: str) -> dict:
        return self.raw(rec.stdio_stderr(self.tick(0), text.encode()))

    def eof(self, direction: str = rec.C2S) -> dict:
        return self.raw(rec.stdio_eof(self.tick(0), direction))

    def exit(self, code: int | None = 0, signal: str | None = None) -> dict:
        return self.raw(rec.stdio_exit(self.tick(0), code, signal))

    # -- edits -------------------------------------------------------------------------------------------------

    def edit(self, edits: list[str], detail: str, exchange: int | None = None, request_id: Any = None,
             withheld: Any = None) -> dict:
        return self.raw(rec.edit(self.tick(0), edits, detail, exchange, withheld, request_id))

    # -- messages, whatever the transport ----------------------------------------------------------------------

    def send(self, msg: Any, *, reply: Any = None, status: int = 202, **http: Any) -> int | None:
        """The client sends one message (or a batch). Over HTTP a POST whose answer is `reply` (202 and no body
        by default, as for a notification); on stdio one line, and `reply` a line back when given."""
        if self.transport == STDIO:
            self.line(rec.C2S, msg)
            if reply is not None:
                self.line(rec.S2C, reply)
            return None
        if self.transport == LEGACY_SSE:
            return self._legacy_post(msg, reply, **http)
        if reply is not None and status == 202:
            status = 200
        return self.exchange(msg, status=status, reply=reply, **http)

    def request(self, method: str, params: dict | None = None, *, id: Any = None, **http: Any) -> Any:
        """The client sends a request that gets no answer (yet). Returns its id."""
        id_ = self.next_id() if id is None else id
        msg = request(id_, method, self._params(params))
        if self.transport == STDIO:
            self.line(rec.C2S, msg)
        elif self.transport == LEGACY_SSE:
            self._legacy_post(msg, None, **http)
        else:
            http.setdefault("status", None)
            http.setdefault("end", None)
            self.exchange(msg, **http)
        return id_

    def call(self, method: str, params: dict | None = None, *, result: Any = _MISSING, error: Any = None,
             reply: Any = _MISSING, id: Any = None, stream: bool = False, event_ids: bool = False,
             before: Sequence[Any] = (), **http: Any) -> Any:
        """The client sends a request and the server answers it: with `result` (an empty one by default), or
        `error` (a (code, message) pair or an error object), or exactly `reply` (None: no body, for a refusal
        by status). `stream`: over SSE, with `before` sent first on the stream (progress, server requests) and
        each event numbered when `event_ids`. Returns the request's id."""
        id_ = self.next_id() if id is None else id
        msg = request(id_, method, self._params(params))
        if reply is _MISSING:
            reply = self._answer(id_, self._result(method, result), error)
        if self.transport == STDIO:
            self.line(rec.C2S, msg)
            for item in before:
                self.line(rec.S2C, item)
            if reply is not None:
                self.line(rec.S2C, reply)
            return id_
        if self.transport == LEGACY_SSE:
            self._legacy_post(msg, None, **http)
            for item in [*before, *([reply] if reply is not None else [])]:
                self.sse(self._legacy_channel(), item)
            return id_
        if stream:
            items = [*before, *([reply] if reply is not None else [])]
            http["events"] = [Event(msg=m, id=str(n) if event_ids else None) for n, m in enumerate(items, 1)]
            self.exchange(msg, **http)
            return id_
        self.exchange(msg, reply=reply, **http)
        return id_

    def notify(self, method: str, params: dict | None = None, **http: Any) -> None:
        """The client sends a notification."""
        self.send(notification(method, params), **http)

    def server_says(self, msg: Any) -> None:
        """The server sends a message on its own: a stdio line, an event on the legacy channel, or an event on
        a Streamable HTTP GET stream (opened here when the conversation has none)."""
        if self.transport == STDIO:
            self.line(rec.S2C, msg)
        elif self.transport == LEGACY_SSE:
            self.sse(self._legacy_channel(), msg)
        else:
            if self._legacy_stream is None:
                self._legacy_stream = self.exchange(method="GET", headers=[("accept", "text/event-stream")],
                                                    events=[], end=None)
            self.sse(self._legacy_stream, msg)

    # -- the handshake -----------------------------------------------------------------------------------------

    def initialize(self, session: str | None = None, *, capabilities: dict | None = None,
                   client_capabilities: dict | None = None, revision: str | None = None,
                   initialized: bool = True) -> str | None:
        """The lifecycle's first phase: initialize, its answer (with a new session id over Streamable HTTP), and
        `notifications/initialized`. On stateless HTTP (2026-07-28) the client discovers instead. Returns the
        session id (None where the transport has none)."""
        revision = revision or self.revision
        if capabilities is not None:
            self.capabilities = capabilities
        if self.transport == STATELESS:
            self.call("server/discover", {}, result={"supportedVersions": [revision],
                                                     "capabilities": self.capabilities,
                                                     "serverInfo": {"name": "builder", "version": "1"}})
            return None
        if self.transport == LEGACY_SSE:
            self.open_legacy_channel(session)
        id_ = self.next_id()
        msg = request(id_, "initialize", {"protocolVersion": revision, "capabilities": CLIENT_CAPABILITIES if client_capabilities is None
                                          else client_capabilities,
                                          "clientInfo": {"name": "builder", "version": "1"}})
        answer = result(id_, {"protocolVersion": revision, "capabilities": self.capabilities,
                              "serverInfo": {"name": "builder", "version": "1"}})
        if self.transport == STREAMABLE:
            session = session or f"session-{next(self._sessions):04d}-0123456789abcdef"
            self.exchange(msg, session=None, reply=answer, new_session=session)
            self.session = session
        else:
            self.call("initialize", msg["params"], id=id_, reply=answer)
        if initialized:
            self.notify("notifications/initialized")
        return self.session

    def open_legacy_channel(self, session: str | None = None,
                            endpoint: str = "/messages?sessionId={session}") -> int:
        """The 2024-11-05 transport: a GET whose first event names where to POST (`endpoint`, with the session in
        the query)."""
        self.session = session or f"legacy{next(self._sessions):04d}"
        self._legacy_stream = self.exchange(method="GET", path="/sse", session=None,
                                            headers=[("accept", "text/event-stream")],
                                            events=[Event(event="endpoint",
                                                          data=endpoint.format(session=self.session))], end=None)
        self.records[-1]["session"] = self.session
        return self._legacy_stream

    def _legacy_channel(self) -> int:
        if self._legacy_stream is None:
            self.open_legacy_channel()
        assert self._legacy_stream is not None
        return self._legacy_stream

    def _legacy_post(self, msg: Any, reply: Any, **http: Any) -> int:
        self._legacy_channel()
        http.setdefault("status", 202)
        return self.exchange(msg, path="/messages", query=[("sessionId", self.session or "")], reply=reply, **http)

    def _params(self, params: dict | None) -> dict | None:
        """On 2026-07-28 every request carries its protocol version, capabilities and client in `_meta`."""
        if self.transport != STATELESS:
            return params
        params = dict(params or {})
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": self.revision,
                           "io.modelcontextprotocol/clientCapabilities": {},
                           "io.modelcontextprotocol/clientInfo": {"name": "builder", "version": "1"},
                           **(params["_meta"] if isinstance(params.get("_meta"), dict) else {})}
        return params

    def _result(self, method: str, value: Any) -> Any:
        """On 2026-07-28 a result says its resultType, and a cacheable one its caching hints (unless given)."""
        if self.transport != STATELESS or not (value is _MISSING or isinstance(value, dict)):
            return value
        hints = {"ttlMs": 0} if method in CACHED else {}
        return {"resultType": "complete", **hints, **(value if isinstance(value, dict) else {})}

    @staticmethod
    def _answer(id_: Any, value: Any, err: Any) -> dict:
        if err is not None:
            if isinstance(err, tuple):
                return error(id_, *err)
            return {"jsonrpc": "2.0", "id": id_, "error": err}
        return result(id_, None if value is _MISSING else value)

    # -- reading it back ---------------------------------------------------------------------------------------

    def findings(self, *more: Conversation) -> list:
        """What `check` finds, this conversation and `more` read as one history (in memory)."""
        from ..check import check_records

        return list(check_records([(c.name, c.records) for c in (self, *more)]))

    def rules(self, *more: Conversation) -> list[str]:
        """The rule ids of the findings, in tape order."""
        return [f.rule for f in self.findings(*more)]

    def write(self, path: Any) -> str:
        """The conversation as a tape file, for what only reads files (the CLI)."""
        from ..tape.file import Writer

        with Writer(path, rec.header(0.0, "mcptape-builder"), "force") as writer:
            for record in self.records:
                writer.write(record)
        return str(path)
