"""Every requirement of the registry, broken and kept, in memory: a conversation that breaks it gets its finding
and the verdict fail or warn (an observation: its info finding and a pass); one that keeps it gets no finding and a
pass (an observation never put to the test: not-observed)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from mcptape.check import check_records
from mcptape.check.requirements import REGISTRY
from mcptape.check.verdicts import Exercise, Verdict, judge
from mcptape.model import LEGACY_SSE, STATELESS, STDIO
from mcptape.tape import records
from mcptape.testing.builder import Conversation, Event, error, notification, request, result

C2S, S2C = records.C2S, records.S2C
THREAD = "th-0123456789abcdef0123"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
ANSWER = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "t", "version": "1"}}


def stdio(revision: str = "2025-11-25", **init) -> Conversation:
    tape = Conversation(transport=STDIO, revision=revision)
    tape.initialize(**init)
    return tape


def http(revision: str = "2025-11-25", **init) -> Conversation:
    tape = Conversation(revision=revision)
    tape.initialize(**init)
    return tape


def progress(token, value) -> dict:
    return notification("notifications/progress", {"progressToken": token, "progress": value})


def cancel(id_) -> dict:
    return notification("notifications/cancelled", {"requestId": id_})


def judged(*tapes: Conversation) -> tuple[set[str], dict[str, Verdict]]:
    exercise = Exercise()
    findings = list(check_records([(t.name, t.records) for t in tapes], [exercise]))
    last = tapes[-1].name
    rows = {row.requirement.id: row.verdict for row in judge(findings, exercise, [last])}
    return {f.rule for f in findings if f.tape == last}, rows


# -- each requirement: (break, keep) ----------------------------------------------------------------------------

def _ping(tape: Conversation) -> Conversation:
    tape.call("ping")
    return tape


def _line(msg, answer=None, **init) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio(**init)
        tape.line(C2S, msg)
        if answer is not None:
            tape.line(S2C, answer)
        return tape
    return build


def _reply(reply) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        tape.call("ping", id=50, reply=reply)
        return tape
    return build


def _keep() -> Conversation:
    return _ping(stdio())


def _batch_initialize() -> Conversation:
    tape = Conversation(transport=STDIO, revision="2025-03-26")
    tape.line(C2S, [request(1, "initialize", {**INIT, "protocolVersion": "2025-03-26"})])
    tape.line(S2C, [result(1, {**ANSWER, "protocolVersion": "2025-03-26"})])
    return tape


def _init_2025_03() -> Conversation:
    return _ping(stdio("2025-03-26"))


def _duplicate_id() -> Conversation:
    tape = stdio()
    tape.call("ping", id=7)
    tape.call("ping", id=7)
    return tape


def _twice_answered() -> Conversation:
    tape = stdio()
    tape.call("ping", id=7)
    tape.line(S2C, result(7))
    return tape


def _unanswered() -> Conversation:
    tape = stdio()
    tape.request("tools/call", {"name": "slow"})
    tape.exit(0)
    return tape


def _ping_first() -> Conversation:
    tape = Conversation(transport=STDIO)
    tape.call("ping")
    tape.initialize()
    return tape


def _bare_initialize() -> Conversation:
    tape = Conversation()
    tape.exchange(request(1, "initialize", {"protocolVersion": "2025-11-25"}), session=None,
                  reply=result(1, ANSWER), new_session="session-0001-0123456789abcdef")
    return tape


def _result_without_capabilities() -> Conversation:
    tape = Conversation(transport=STDIO)
    tape.call("initialize", INIT, id=1, reply=result(1, {"protocolVersion": "2025-11-25"}))
    tape.notify("notifications/initialized")
    return tape


def _no_initialized() -> Conversation:
    tape = stdio(initialized=False)
    tape.call("tools/list", result={"tools": []})
    return tape


def _tools_list(tape: Conversation) -> Conversation:
    tape.call("tools/list", result={"tools": []})
    return tape


def _early_request() -> Conversation:
    tape = Conversation(transport=STDIO)
    tape.line(C2S, request(1, "initialize", INIT))
    tape.line(C2S, request(2, "tools/list"))
    tape.line(S2C, result(1, {**ANSWER, "capabilities": {"tools": {}}}))
    tape.line(S2C, result(2, {"tools": []}))
    tape.notify("notifications/initialized")
    return tape


def _server_asks(initialized: bool = True, client_capabilities=None, params=None,
                 method: str = "roots/list", answer=None) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio(initialized=initialized, client_capabilities=client_capabilities)
        tape.line(S2C, request(100, method, params))
        tape.line(C2S, result(100, answer if answer is not None else {"roots": []}))
        return tape
    return build


def _uses(method: str, params=None, value=None, **init) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio(**init)
        tape.call(method, params, result=value if value is not None else {})
        return tape
    return build


def _logs(**init) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio(**init)
        tape.server_says(notification("notifications/message", {"level": "info", "data": "hello"}))
        return tape
    return build


SAMPLE = {"messages": [], "maxTokens": 10}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}


def _token(token) -> Callable[[], Conversation]:
    return _uses("tools/call", {"name": "a", "_meta": {"progressToken": token}}, {"content": []})


def _tokens(first, second) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        for id_, token in ((10, first), (11, second)):
            tape.request("tools/call", {"name": "a", "_meta": {"progressToken": token}}, id=id_)
        tape.line(S2C, result(10, {"content": []}))
        tape.line(S2C, result(11, {"content": []}))
        return tape
    return build


def _progress(*values, after: bool = False, token="t") -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        tape.call("tools/call", {"name": "a", "_meta": {"progressToken": "t"}}, result={"content": []},
                  before=[] if after else [progress(token, v) for v in values])
        if after:
            tape.line(S2C, progress(token, values[0]))
        return tape
    return build


def _cancelled_initialize() -> Conversation:
    tape = Conversation(transport=STDIO)
    tape.line(C2S, request(1, "initialize", INIT))
    tape.line(C2S, cancel(1))
    tape.line(S2C, result(1, ANSWER))
    return tape


def _cancelled(answered: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        tape.request("tools/call", {"name": "slow"}, id=10)
        tape.line(C2S, cancel(10))
        if answered:
            tape.line(S2C, result(10, {"content": []}))
        tape.exit(0)
        return tape
    return build


def _cancelled_stream(closed: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = http()
        tape.request("tools/call", {"name": "slow"}, id=10, status=200, events=[],
                     end=records.COMPLETE if closed else None)
        tape.notify("notifications/cancelled", {"requestId": 10})
        return tape
    return build


def _http_call(method: str = "tools/list", value=None, **options) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = http()
        tape.call(method, result=value if value is not None else {"tools": []}, **options)
        return tape
    return build


def _get(accept: str = "text/event-stream", **answer) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = http()
        answer.setdefault("events", [])
        answer.setdefault("end", None)
        tape.exchange(method="GET", headers=[("accept", accept)], **answer)
        return tape
    return build


def _notice(status: int) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = http()
        tape.send(notification("notifications/roots/list_changed"), status=status)
        return tape
    return build


def _on_get_stream() -> Conversation:
    tape = http()
    tape.request("tools/list", id=77)
    tape.server_says(result(77, {"tools": []}))
    return tape


def _get_stream_kept() -> Conversation:
    tape = http()
    tape.server_says(notification("notifications/message", {"level": "info", "data": "x"}))
    return tape


def _batch_post() -> Conversation:
    tape = http()
    tape.send([request(5, "ping"), request(6, "ping")], reply=[result(5), result(6)])
    return tape


def _stateless(headers=()) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = Conversation(transport=STATELESS)
        tape.initialize()
        tape.call("tools/call", {"name": "add"}, result={"content": []}, headers=list(headers))
        return tape
    return build


def _after_close(sent: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        tape.eof(S2C)
        if sent:
            tape.request("tools/call", {"name": "late"})
        tape.exit(0)
        return tape
    return build


def _session_id(value: str) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = Conversation()
        tape.initialize(session=value)
        return tape
    return build


def _no_session() -> Conversation:
    tape = http()
    tape.call("tools/list", session=None, status=400,
              reply=error(None, -32600, "Bad Request: No valid session ID provided"))
    return tape


def _refused(then: str) -> Callable[[], Conversation]:
    """A session refused with 404, then: `reuse` it, `reinitialize`, or be told `wrong` (400 'Session not found')."""
    def build() -> Conversation:
        tape = http()
        tape.call("tools/list", status=404, reply=None)
        if then == "reinitialize":
            tape.initialize()
        elif then == "wrong":
            tape.call("tools/list", status=400, reply=error(None, -32600, "Session not found"))
        else:
            tape.call("tools/list", status=404, reply=None)
        return tape
    return build


def _closed_early(resumed: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = http()
        id_ = tape.call("tools/call", {"name": "slow"}, stream=True, event_ids=True, reply=None,
                        before=[notification("notifications/message", {"level": "info", "data": "working"})])
        if resumed:
            tape.exchange(method="GET", headers=[("accept", "text/event-stream"), ("last-event-id", "1")],
                          events=[Event(msg=result(id_, {"content": []}), id="2")])
        return tape
    return build


def _refused_with(status: int) -> Callable[[], Conversation]:
    return _http_call(status=status, reply=None)


def _thread(refused: bool) -> Callable[[], tuple[Conversation, ...]]:
    def build() -> tuple[Conversation, ...]:
        first, later = Conversation(name="first"), Conversation(name="later")
        first.initialize()
        first.call("tools/call", {"name": "start"}, result={"content": [], "structuredContent": {"thread_id": THREAD}})
        later.initialize("session-0002-0123456789abcdef")
        thread = THREAD if refused else "th-fedcba98765432100000"  # kept: refused an id nobody issued
        later.call("tools/call", {"name": "reply", "arguments": {"thread_id": thread}},
                   error=(-32602, f"Thread not found: {thread}"))
        return first, later
    return build


def _open_at_end(answered: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = http()
        if answered:
            tape.call("ping")
        else:
            tape.request("tools/call", {"name": "slow"})
        return tape
    return build


def _tools(*tools: dict) -> Callable[[], Conversation]:
    return _uses("tools/list", value={"tools": [{"inputSchema": {"type": "object"}, **tool} for tool in tools]})


OUTPUT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _structured(value, text: bool = True, schema=OUTPUT) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        tape.call("tools/list", result={"tools": [{"name": "count", "inputSchema": {"type": "object"},
                                                   **({"outputSchema": schema} if schema else {})}]})
        content = [{"type": "text", "text": json.dumps(value)}] if text else []
        tape.call("tools/call", {"name": "count"}, result={"content": content, "structuredContent": value})
        return tape
    return build


def _content(*items: dict) -> Callable[[], Conversation]:
    return _uses("tools/call", {"name": "draw"}, {"content": list(items)})


def _pages(cursor: str, answer: str = "result") -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        tape.call("tools/list", result={"tools": [], "nextCursor": "page-2"})
        if answer == "result":
            tape.call("tools/list", {"cursor": cursor}, result={"tools": []})
        else:
            tape.call("tools/list", {"cursor": cursor}, error=(-32602, "Invalid cursor"))
        return tape
    return build


URL_CAPABLE = {"elicitation": {"form": {}, "url": {}}}


def _url_elicitation(url: str, client_capabilities=None) -> Callable[[], Conversation]:
    return _server_asks(client_capabilities=client_capabilities, method="elicitation/create",
                        params={"mode": "url", "message": "sign in", "url": url, "elicitationId": "e-1"},
                        answer={"action": "accept"})


def _stateless_error(code: int) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = Conversation(transport=STATELESS)
        tape.initialize()
        tape.call("resources/read", {"uri": "file:///gone"}, error=(code, "Resource not found"))
        return tape
    return build


def _probe(reply, fall_back: bool) -> Callable[[], Conversation]:
    """An auto client's probe over HTTP answered with 400 and `reply`, then (or not) its fallback to initialize."""
    def build() -> Conversation:
        tape = Conversation()
        probe = request(tape.next_id(), "server/discover",
                        {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
        tape.exchange(probe, session=None, version_header="2026-07-28", headers=[("mcp-method", "server/discover")],
                      status=400, reply=reply)
        if fall_back:
            tape.initialize()
        return tape
    return build


def _discover(refused: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = Conversation(transport=STATELESS)
        if refused:
            tape.call("server/discover", {}, status=404, reply=None, raw_reply=b"Invalid session ID")
        else:
            tape.initialize()
        tape.call("tools/call", {"name": "add"}, result={"content": []})
        return tape
    return build


def _from_origin(status: int) -> Conversation:
    """A web page of another site reaches a server on loopback: answered `status`."""
    tape = http()
    answer = {"result": {"tools": []}} if status < 300 else {"reply": None}
    tape.call("tools/list", status=status, headers=[("host", "127.0.0.1:3001"), ("origin", "http://evil.example.com")],
              **answer)
    return tape


def _legacy(endpoint: str = "/messages?sessionId={session}", path: str = "/messages") -> Conversation:
    """A 2024-11-05 channel announcing `endpoint`, the handshake, then a ping POSTed to `path`."""
    tape = Conversation(transport=LEGACY_SSE)
    tape.open_legacy_channel(endpoint=endpoint)
    tape.call("initialize", {**INIT, "protocolVersion": "2024-11-05"},
              result={**ANSWER, "protocolVersion": "2024-11-05"})
    tape.notify("notifications/initialized")
    tape.exchange(request(50, "ping"), path=path, query=[("sessionId", tape.session)], status=202)
    tape.server_says(result(50))
    return tape


def _delete(session: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = http()
        tape.exchange(method="DELETE", status=200, **({} if session else {"session": None}))
        return tape
    return build


CASES: dict[str, tuple[Callable, Callable]] = {
    "jsonrpc-version": (_line({"jsonrpc": "1.0", "id": 9, "method": "ping"}, result(9)), _keep),
    "utf-8": (lambda: _raw_line(b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "\xff"}}'),
              _keep),
    "request-id-type": (_line(request(True, "ping"), result(True)), _keep),
    "request-id-not-null": (_line(request(None, "ping")), _keep),
    "notification-without-id": (_line({"jsonrpc": "2.0", "id": 5, "method": "notifications/roots/list_changed"}),
                                _keep),
    "response-result-or-error": (_reply({"jsonrpc": "2.0", "id": 50}), _keep),
    "response-not-both": (_reply({"jsonrpc": "2.0", "id": 50, "result": {}, "error": {"code": 1, "message": "x"}}),
                          _keep),
    "error-code-and-message": (_reply({"jsonrpc": "2.0", "id": 50, "error": {"code": -32601}}),
                               _reply(error(50, -32601, "Method not found"))),
    "error-code-integer": (_reply({"jsonrpc": "2.0", "id": 50, "error": {"code": 1.5, "message": "x"}}),
                           _reply(error(50, -32601, "Method not found"))),
    "initialize-not-in-batch": (_batch_initialize, _init_2025_03),
    "error-code-reserved": (_stateless_error(-32050), _stateless_error(-32602)),
    "error-code-retired": (_stateless_error(-32002), _stateless_error(-32602)),
    "malformed-message": (lambda: _raw_line(b"this is not json"), _keep),
    "duplicate-request-id": (_duplicate_id, _keep),
    "orphan-response": (_line(result(99)), _keep),
    "duplicate-response": (_twice_answered, _keep),
    "unanswered-request": (_unanswered, _keep),
    "initialize-first": (_ping_first, _keep),
    "initialize-request-fields": (_bare_initialize, lambda: _ping(http())),
    "initialize-result-fields": (_result_without_capabilities, _keep),
    "initialized-sent": (_no_initialized, lambda: _tools_list(stdio())),
    "request-before-initialize": (_early_request, lambda: _tools_list(stdio())),
    "server-request-before-initialized": (_server_asks(initialized=False), _server_asks()),
    "ping-empty-result": (_uses("ping", value={"pong": True}), _keep),
    "use-negotiated-capabilities": (_uses("tools/list", value={"tools": []}, capabilities={}),
                                    _uses("tools/list", value={"tools": []})),
    "declare-tools": (_uses("tools/list", value={"tools": []}, capabilities={}),
                      _uses("tools/list", value={"tools": []})),
    "declare-resources": (_uses("resources/list", value={"resources": []}, capabilities={}),
                          _uses("resources/list", value={"resources": []})),
    "declare-prompts": (_uses("prompts/list", value={"prompts": []}, capabilities={}),
                        _uses("prompts/list", value={"prompts": []})),
    "declare-logging": (_logs(capabilities={}), _logs()),
    "declare-completions": (_uses("completion/complete", value={"completion": {"values": []}}, capabilities={}),
                            _uses("completion/complete", value={"completion": {"values": []}})),
    "declare-sampling": (_server_asks(client_capabilities={}, method="sampling/createMessage", params=SAMPLE,
                                      answer=SAMPLED),
                         _server_asks(method="sampling/createMessage", params=SAMPLE, answer=SAMPLED)),
    "declare-roots": (_server_asks(client_capabilities={}), _server_asks()),
    "declare-elicitation": (_server_asks(client_capabilities={}, method="elicitation/create",
                                         params={"message": "?", "requestedSchema": {}}, answer={"action": "decline"}),
                            _server_asks(method="elicitation/create", params={"message": "?", "requestedSchema": {}},
                                         answer={"action": "decline"})),
    "sampling-tools-declared": (_server_asks(method="sampling/createMessage", params={**SAMPLE, "tools": []},
                                             answer=SAMPLED),
                                _server_asks(client_capabilities={"sampling": {"tools": {}}},
                                             method="sampling/createMessage", params={**SAMPLE, "tools": []},
                                             answer=SAMPLED)),
    "progress-token-type": (_token(1.5), _token(1)),
    "progress-token-unique": (_tokens("t", "t"), _tokens("t1", "t2")),
    "progress-known-token": (_progress(1, token="never"), _progress(1)),
    "progress-not-increasing": (_progress(2, 1), _progress(1, 2)),
    "progress-after-response": (_progress(1, after=True), _progress(1)),
    "cancel-not-initialize": (_cancelled_initialize, _cancelled(False)),
    "cancelled-without-response": (_cancelled(False), _cancelled(True)),
    "response-after-cancel": (_cancelled(True), _cancelled(False)),
    "dangling-stream": (_cancelled_stream(False), _cancelled_stream(True)),
    "post-accept-both": (_http_call(headers=[("accept", "application/json")]), _http_call()),
    "get-accept-sse": (_get("application/json"), _get()),
    "notification-202": (_notice(200), _notice(202)),
    "status-202-for-request": (_http_call(status=202, reply=None), _http_call()),
    "get-sse-or-405": (_get(reply={"jsonrpc": "2.0", "method": "x"}, events=None, end=records.COMPLETE), _get()),
    "response-on-get-stream": (_on_get_stream, _get_stream_kept),
    "post-single-message": (_batch_post, _http_call()),
    "header-mismatch": (_stateless([("mcp-method", "tools/list")]), _stateless()),
    "header-encoding": (_stateless([("mcp-name", "=?base64?%?=")]), _stateless()),
    "no-fallback": (_probe(None, False), _probe(None, True)),
    "fallback-on-modern-error": (_probe(error(1, -32022, "Unsupported protocol version"), True),
                                 _probe(error(1, -32022, "Unsupported protocol version"), False)),
    "discover-refused": (_discover(True), _discover(False)),
    "request-after-close": (_after_close(True), _after_close(False)),
    "session-id-visible-ascii": (_session_id("session 0001\t0123456789abcdef"),
                                 _session_id("session-0001-0123456789abcdef")),
    "missing-session-id": (_no_session, _http_call()),
    "protocol-version-mismatch": (_http_call(version_header="2025-03-26"), _http_call()),
    "version-header-invalid-400": (_http_call(version_header="banana"),
                                   _http_call(version_header="banana", status=400, reply=None)),
    "wrong-status-for-dead-session": (_refused("wrong"), _refused("reuse")),
    "dead-session-reuse": (_refused("reuse"), _refused("reinitialize")),
    "no-reinitialize": (_refused("reuse"), _refused("reinitialize")),
    "no-resume-after-close": (_closed_early(False), _closed_early(True)),
    "delete-with-session": (_delete(False), _delete(True)),
    "origin-validated": (lambda: _from_origin(200), lambda: _from_origin(403)),
    "sse-endpoint-event": (lambda: _legacy(endpoint="/messages?sessionId={session} {{}}"), _legacy),
    "sse-post-to-endpoint": (lambda: _legacy(path="/elsewhere"), _legacy),
    "auth-rejected": (_refused_with(401), _http_call()),
    "dead-id-reuse": (_thread(True), _thread(False)),
    "capture-incomplete": (_open_at_end(False), _open_at_end(True)),
    "tool-input-schema": (_tools({"name": "a", "inputSchema": None}), _tools({"name": "a"})),
    "tool-output-conforms": (_structured({"n": "seven"}), _structured({"n": 7})),
    "structured-content-text": (_structured({"n": 7}, text=False, schema=None), _structured({"n": 7}, schema=None)),
    "tool-name-length": (_tools({"name": "a" * 129}), _tools({"name": "a" * 128})),
    "tool-name-characters": (_tools({"name": "add numbers"}), _tools({"name": "add_numbers.v2-x"})),
    "tool-name-unique": (_tools({"name": "add"}, {"name": "add"}), _tools({"name": "add"}, {"name": "Add"})),
    "image-base64": (_content({"type": "image", "data": "not base64!", "mimeType": "image/png"}),
                     _content({"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"})),
    "audio-base64": (_content({"type": "audio", "data": "aGVsbG8=", "mimeType": "wav"}),
                     _content({"type": "audio", "data": "aGVsbG8=", "mimeType": "audio/wav"})),
    "embedded-resource-fields": (_content({"type": "resource", "resource": {"text": "hi"}}),
                                 _content({"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hi"}})),
    "resource-blob-base64": (_uses("resources/read", {"uri": "file:///a"},
                                   {"contents": [{"uri": "file:///a", "blob": "@@@"}]}),
                             _uses("resources/read", {"uri": "file:///a"},
                                   {"contents": [{"uri": "file:///a", "blob": "aGVsbG8="}]})),
    "cursor-opaque": (_pages("page-2-forged"), _pages("page-2")),
    "cursor-invalid-error": (_pages("page-2-forged"), _pages("page-2-forged", answer="error")),
    "elicitation-mode-supported": (_url_elicitation("https://example.com/sign-in"),
                                   _url_elicitation("https://example.com/sign-in", URL_CAPABLE)),
    "elicitation-url-valid": (_url_elicitation("sign in here", URL_CAPABLE),
                              _url_elicitation("https://example.com/sign-in", URL_CAPABLE)),
}


def _raw_line(data: bytes) -> Conversation:
    tape = stdio()
    tape.line(C2S, raw=data)
    return tape


def _tapes(build: Callable) -> tuple[Conversation, ...]:
    built = build()
    return built if isinstance(built, tuple) else (built,)


def test_every_requirement_has_a_break_and_a_keep():
    from .test_feature_requirements import CASES as FEATURES  # (that module reads this one's helpers)

    assert not CASES.keys() & FEATURES.keys()
    assert sorted({**CASES, **FEATURES}) == sorted(REGISTRY)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_broken(rule):
    found, verdicts = judged(*_tapes(CASES[rule][0]))
    assert rule in found
    expected = {Verdict.PASS} if REGISTRY[rule].observation else {Verdict.FAIL, Verdict.WARN}
    assert verdicts[rule] in expected


@pytest.mark.parametrize("rule", sorted(CASES))
def test_kept(rule):
    found, verdicts = judged(*_tapes(CASES[rule][1]))
    assert rule not in found
    expected = {Verdict.PASS, Verdict.NOT_OBSERVED} if REGISTRY[rule].observation else {Verdict.PASS}
    assert verdicts[rule] in expected


def test_a_correct_conversation_on_every_transport_breaks_nothing_and_leaves_nothing_unjudged_by_mistake():
    for tape in (http(), stdio(), Conversation(transport=STATELESS)):
        tape.call("tools/list", result={"tools": []})
        found, verdicts = judged(tape)
        assert found == set()
        assert Verdict.FAIL not in verdicts.values() and Verdict.WARN not in verdicts.values()


@pytest.mark.parametrize("revision, verdict", [("2025-03-26", Verdict.WARN), ("2025-06-18", Verdict.FAIL),
                                               ("2024-11-05", Verdict.WARN)])
def test_an_undeclared_capability_is_a_should_before_2025_06_18_and_a_must_from_it(revision, verdict):
    tape = stdio(revision, capabilities={})
    tape.call("prompts/list", result={"prompts": []})
    _, verdicts = judged(tape)
    assert verdicts["use-negotiated-capabilities"] == verdict


def test_a_requirement_of_another_revision_or_transport_is_not_applicable():
    _, verdicts = judged(_ping(stdio("2025-06-18")))
    assert verdicts["initialize-not-in-batch"] == Verdict.NOT_APPLICABLE  # 2025-03-26 only
    assert verdicts["post-accept-both"] == Verdict.NOT_APPLICABLE  # an HTTP clause on stdio
    assert verdicts["error-code-integer"] == Verdict.NOT_OBSERVED  # no error in the tape: never a pass


def test_hostile_messages_give_findings_never_a_crash():
    tape = stdio()
    tape.call("tools/list", {"cursor": {"not": "a string"}}, result={"tools": [
        "junk", {"name": ["x"]}, {"name": "a", "inputSchema": {"type": 12}},
        {"name": "b", "inputSchema": {"type": "object"}, "outputSchema": {"$ref": "https://example.com/remote.json"}},
        {"name": "c", "inputSchema": {"type": "object"}, "outputSchema": {"$schema": "urn:unknown", "type": "object"}}],
        "nextCursor": ["x"]})
    tape.call("tools/call", {"name": "b"}, result={"content": "not a list", "structuredContent": {"x": 1}})
    tape.call("tools/call", {"name": "c"}, result={"content": [{"type": "image"}], "structuredContent": []})
    tape.line(C2S, request(3.5, "tools/call", {"name": "a", "_meta": {"progressToken": {"x": 1}}}))
    tape.line(S2C, notification("notifications/progress", {"progressToken": [1]}))
    tape.line(S2C, {"jsonrpc": "2.0", "id": 3.5, "error": "boom"})
    found, verdicts = judged(tape)
    assert {"cursor-opaque", "tool-input-schema", "image-base64", "progress-token-type", "request-id-type",
            "error-code-and-message", "progress-known-token"} <= found
    assert set(verdicts.values()) <= set(Verdict)
