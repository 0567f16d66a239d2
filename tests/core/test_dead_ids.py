"""`dead-id-reuse` on synthetic tapes, in process: ids issued in any server message (a log line of a cancelled call,
a resource's contents, an error's data), refused in another session or tape (a JSON-RPC error, an `isError` result,
an error log line tied to the call); the protocol's own ids, short ids and refusals in the issuing session never
count."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptape.check import check
from mcptape.tape import records
from mcptape.tape.file import Writer
from mcptape.wire import sse

THREAD = "3f2b8c1e-9a4d-4e7f-b6c5-0d1e2f3a4b5c"  # a UUID
CONVERSATION = "conv_01HZX3K7Q9V2M4N6P8R0S1T3W5"  # a prefixed ULID
JOB = "job_7f3a9c2e4b1d8f60"
VERSION = "2025-11-25"


class Tape:
    """Records of one tape, written with the records constructors, in the order they are added."""

    def __init__(self, path) -> None:
        self.path = path
        self.t = 1_700_000_000.0
        self.records: list[dict] = []
        self.exchange = 0

    def add(self, record: dict) -> int:
        self.records.append(record)
        self.t += 0.001
        return len(self.records) - 1  # its seq

    def write(self) -> str:
        with Writer(self.path, records.header(self.t, "test"), mode="force") as w:
            for record in self.records:
                w.write(record)
        return str(self.path)

    # stdio: each run is a session of its own

    def run(self) -> None:
        self.add(records.capture_start(self.t, "test", {"command": ["server"]}, {}))
        self.c2s(request(0, "initialize", {"protocolVersion": VERSION}))
        self.s2c(result(0, {"protocolVersion": VERSION, "capabilities": {}}))
        self.c2s({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def c2s(self, msg: dict) -> int:
        return self.add(records.stdio_line(self.t, records.C2S, json.dumps(msg).encode()))

    def s2c(self, msg: dict) -> int:
        return self.add(records.stdio_line(self.t, records.S2C, json.dumps(msg).encode()))

    def exit(self) -> None:
        self.add(records.stdio_exit(self.t, 0))

    # Streamable HTTP (sessions)

    def http_session(self, session: str) -> None:
        ex = self.post(None, request(0, "initialize", {"protocolVersion": VERSION}), answered_with=session)
        self.event(ex, result(0, {"protocolVersion": VERSION, "capabilities": {}}))
        self.end(ex)

    def post(self, session: str | None, msg: dict, answered_with: str | None = None, status: int = 200) -> int:
        """A POST and the head of its answer: an SSE stream (the events follow), or 202 for a notification."""
        self.exchange += 1
        sent = [["content-type", "application/json"]] + ([["mcp-session-id", session]] if session else [])
        self.add(records.http_request(self.t, self.exchange, 0, "POST", "/mcp", [], sent, session,
                                      VERSION if session else None, True, {"msg": msg}))
        session = answered_with or session
        kind = "text/event-stream" if status == 200 else "text/plain"
        self.add(records.http_response(self.t, self.exchange, status, "OK", [["content-type", kind],
                                       ["mcp-session-id", session]], session, {}))
        return self.exchange

    def get_stream(self, session: str) -> int:
        self.exchange += 1
        self.add(records.http_request(self.t, self.exchange, 0, "GET", "/mcp", [], [["mcp-session-id", session]],
                                      session, VERSION, True, {}))
        self.add(records.http_response(self.t, self.exchange, 200, "OK", [["content-type", "text/event-stream"]],
                                       session, {}))
        return self.exchange

    def event(self, exchange: int, msg: dict) -> int:
        return self.add(records.sse_event(self.t, exchange, sse.Event(event="message", data=json.dumps(msg))))

    def end(self, exchange: int, reason: str = records.COMPLETE) -> None:
        self.add(records.end(self.t, exchange, reason))

    def notify(self, session: str, msg: dict) -> None:
        self.end(self.post(session, msg, status=202))


def request(id_, method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def call_tool(id_, name: str, **arguments) -> dict:
    return request(id_, "tools/call", {"name": name, "arguments": arguments})


def result(id_, value: dict) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "result": value}


def tool_error(id_, text: str) -> dict:
    return result(id_, {"content": [{"type": "text", "text": text}], "isError": True})


def error(id_, message: str, data=None) -> dict:
    body = {"code": -32602, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": body}


def log(level: str, data) -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": level, "data": data}}


def dead_ids(*tapes: Tape) -> list:
    return [f for f in check([tape.write() for tape in tapes]) if f.rule == "dead-id-reuse"]


def test_an_id_only_in_a_log_line_of_a_cancelled_call_is_refused_in_a_later_tape(tmp_path):
    first, second = Tape(tmp_path / "first.mcptape"), Tape(tmp_path / "second.mcptape")
    first.http_session("session-a")
    ex = first.post("session-a", call_tool(1, "start_thread", message="hi"))
    issued = first.event(ex, log("info", {"msg": "thread opened", "thread_id": THREAD}))
    first.notify("session-a", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    first.end(ex, records.CLIENT_DISCONNECTED)  # the call never got its result
    second.http_session("session-b")
    ex = second.post("session-b", call_tool(1, "reply", thread_id=THREAD, message="again"))
    second.event(ex, log("info", {"resuming": {"thread_id": THREAD}}))  # an echo of what the client sent, no issue
    second.event(ex, tool_error(1, f"Session not found for thread_id {THREAD}"))
    second.end(ex)
    [finding] = dead_ids(first, second)
    assert finding.message == (f"'{THREAD}' was issued in session session-a (tape {first.path}, record {issued}) and "
                               f"refused as not found here: it died with that session")
    assert (finding.tape, finding.session, finding.method, finding.blames) == (str(second.path), "session-b",
                                                                              "tools/call", "none")
    assert finding.severity == "warning" and "died with an earlier session" in finding.spec
    assert dead_ids(second) == []  # alone, the second tape cannot know where the id came from


def test_an_id_in_a_resources_contents_is_refused_in_another_session_of_the_same_tape(tmp_path):
    tape = Tape(tmp_path / "runs.mcptape")
    tape.run()
    tape.c2s(request(1, "resources/read", {"uri": "conversations://latest"}))
    issued = tape.s2c(result(1, {"contents": [{"uri": "conversations://latest", "mimeType": "application/json",
                                               "text": json.dumps({"conversationId": CONVERSATION, "turns": 3})}]}))
    tape.exit()
    tape.run()  # the server process was restarted: a new session
    tape.c2s(request(1, "resources/read", {"uri": f"conversations://{CONVERSATION}"}))  # the id inside a URI
    tape.s2c(error(1, "Resource not found"))
    tape.c2s(call_tool(2, "append", conversation_id=CONVERSATION, text="more"))
    tape.s2c(error(2, "Unknown conversation"))
    tape.exit()
    found = dead_ids(tape)
    assert [f.request_id for f in found] == [2]  # an id that is no UUID is not looked for inside a URI
    assert f"session stdio:{tape.path}#1" in found[0].message and f"record {issued}" in found[0].message
    assert found[0].session == f"stdio:{tape.path}#2"


def test_a_uuid_inside_a_uri_and_an_id_in_error_data(tmp_path):
    tape = Tape(tmp_path / "runs.mcptape")
    tape.run()
    tape.c2s(call_tool(1, "export", thread=THREAD))
    # an error that hands out an id: the export was queued as a job (not a refusal: it says nothing is missing)
    tape.s2c(error(1, "Export is queued, poll its job", {"job_id": JOB, "retry_after": 30}))
    tape.c2s(call_tool(2, "start_thread"))
    tape.s2c(result(2, {"content": [{"type": "text", "text": f"opened thread {THREAD}"}]}))  # a UUID in free text
    tape.exit()
    tape.run()
    tape.c2s(call_tool(1, "job_status", job=JOB))
    tape.s2c(tool_error(1, "no such job"))
    tape.c2s(request(2, "resources/read", {"uri": f"threads://{THREAD}/messages"}))  # a UUID inside a URI counts
    tape.s2c(error(2, "Resource does not exist"))
    tape.exit()
    found = dead_ids(tape)
    assert [(f.request_id, f.method) for f in found] == [(1, "tools/call"), (2, "resources/read")]
    assert repr(JOB) in found[0].message and repr(THREAD) in found[1].message


def test_an_error_log_line_on_the_calls_stream_refuses_it(tmp_path):
    tape = Tape(tmp_path / "http.mcptape")
    tape.http_session("session-a")
    ex = tape.post("session-a", call_tool(1, "start_thread"))
    tape.event(ex, result(1, {"content": [], "structuredContent": {"threadId": THREAD}}))
    tape.end(ex)
    tape.http_session("session-b")
    get = tape.get_stream("session-b")
    ex = tape.post("session-b", call_tool(1, "reply", thread_id=THREAD))
    # on the standalone GET stream: unrelated to any request, by the spec; it refuses nothing
    tape.event(get, log("error", f"thread {THREAD} not found"))
    tape.event(ex, result(1, {"content": [{"type": "text", "text": "ok"}]}))
    tape.end(ex)
    ex = tape.post("session-b", call_tool(2, "reply", thread_id=THREAD))
    tape.event(ex, log("error", {"error": "Thread not found", "thread_id": THREAD}))  # on the call's own stream
    tape.end(ex, records.CLIENT_DISCONNECTED)  # no result: the log line alone refused it
    [finding] = dead_ids(tape)
    assert finding.request_id == 2 and finding.session == "session-b"


def test_on_stdio_an_error_log_line_refuses_the_one_request_in_flight(tmp_path):
    tape = Tape(tmp_path / "stdio.mcptape")
    tape.run()
    tape.c2s(call_tool(1, "start_thread"))
    tape.s2c(result(1, {"content": [], "structuredContent": {"thread": {"id": CONVERSATION}}}))  # a nested `id`
    tape.exit()
    tape.run()
    tape.c2s(call_tool(1, "reply", thread_id=CONVERSATION))
    tape.s2c(log("error", "conversation expired"))
    tape.s2c(result(1, {"content": [{"type": "text", "text": "started afresh"}]}))
    tape.c2s(call_tool(2, "reply", thread_id=CONVERSATION))
    tape.c2s(call_tool(3, "reply", thread_id=CONVERSATION))
    tape.s2c(log("critical", "conversation expired"))  # two in flight: about which? neither
    tape.s2c(result(2, {"content": []}))
    tape.s2c(result(3, {"content": []}))
    tape.exit()
    assert [f.request_id for f in dead_ids(tape)] == [1]


def test_the_protocols_own_ids_never_count(tmp_path):
    token, cursor, task, server_request = ("tok_5d1f9e2a7c3b4e8f", "cursor_0a1b2c3d4e5f6a7b8c9d",
                                           "task_9e8d7c6b5a4f3e2d", "srv_request_0123456789")
    first, second = Tape(tmp_path / "first.mcptape"), Tape(tmp_path / "second.mcptape")
    first.run()
    first.c2s(request("client_request_0123456789", "tools/list", {"_meta": {"progressToken": token}}))
    first.s2c({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1}})
    first.s2c(result("client_request_0123456789", {"tools": [], "nextCursor": cursor}))  # a JSON-RPC id of id shape
    first.s2c(request(server_request, "roots/list", {}))  # the server's own JSON-RPC id
    first.c2s(result(server_request, {"roots": []}))
    first.s2c({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": server_request}})
    first.c2s(call_tool(2, "slow", _meta={"progressToken": token}))
    first.s2c(result(2, {"task": {"taskId": task, "status": "working"},
                         "_meta": {"io.example/threadId": THREAD, "io.modelcontextprotocol/related-task": {
                             "taskId": task}}}))
    first.exit()
    second.run()
    for n, value in enumerate([token, cursor, task, server_request, "client_request_0123456789", THREAD]):
        second.c2s(call_tool(n + 1, "use", value=value))
        second.s2c(tool_error(n + 1, f"unknown {value}"))
    second.c2s(request(9, "tools/list", {"cursor": cursor}))
    second.s2c(error(9, "cursor expired"))
    second.exit()
    assert dead_ids(first, second) == []


def test_the_mcp_session_id_in_a_body_is_the_protocols_but_an_apps_session_id_counts(tmp_path):
    mcp_session, browser_session = "5e1f0c2d9a8b4c7d6e5f4a3b2c1d0e9f", "browser-session-8c7b6a5d4e3f"
    tape = Tape(tmp_path / "http.mcptape")
    tape.http_session(mcp_session)
    ex = tape.post(mcp_session, call_tool(1, "open_browser"))
    tape.event(ex, result(1, {"content": [], "structuredContent": {"sessionId": browser_session,
                                                                   "mcp": {"session_id": mcp_session}}}))
    tape.end(ex)
    tape.http_session("session-b")
    for n, value in enumerate([mcp_session, browser_session], 1):
        ex = tape.post("session-b", call_tool(n, "navigate", session_id=value))
        tape.event(ex, tool_error(n, "Session not found"))
        tape.end(ex)
    [finding] = dead_ids(tape)
    assert repr(browser_session) in finding.message


def test_an_unknown_method_is_no_refusal_of_an_id(tmp_path):
    tape = Tape(tmp_path / "runs.mcptape")
    tape.run()
    tape.c2s(call_tool(1, "start_thread"))
    tape.s2c(result(1, {"content": [], "structuredContent": {"threadId": THREAD}}))
    tape.exit()
    tape.run()
    tape.c2s(request(1, "threads/get", {"threadId": THREAD}))
    tape.s2c({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}})
    tape.exit()
    assert dead_ids(tape) == []


def test_a_short_id_never_counts(tmp_path):
    tape = Tape(tmp_path / "runs.mcptape")
    tape.run()
    tape.c2s(call_tool(1, "start_thread"))
    tape.s2c(result(1, {"content": [], "structuredContent": {"thread_id": "42", "jobId": "short-id-15char"}}))
    tape.exit()
    tape.run()
    for n, value in enumerate(["42", "short-id-15char"], 1):
        tape.c2s(call_tool(n, "reply", thread_id=value))
        tape.s2c(tool_error(n, "thread not found"))
    tape.exit()
    assert dead_ids(tape) == []


def test_refused_in_the_session_that_issued_it_is_no_dead_id(tmp_path):
    tape = Tape(tmp_path / "runs.mcptape")
    tape.run()
    tape.c2s(call_tool(1, "start_thread"))
    tape.s2c(result(1, {"content": [], "structuredContent": {"threadId": THREAD}}))
    tape.c2s(call_tool(2, "reply", thread_id=THREAD))
    tape.s2c(tool_error(2, "thread expired"))  # it died, but in the session that issued it: not this rule's
    tape.exit()
    tape.run()
    tape.c2s(call_tool(1, "start_thread"))
    tape.s2c(result(1, {"content": [], "structuredContent": {"threadId": THREAD}}))  # handed out again here
    tape.c2s(call_tool(2, "reply", thread_id=THREAD))
    tape.s2c(tool_error(2, "thread expired"))
    tape.exit()
    assert dead_ids(tape) == []


def test_a_refusal_issues_nothing(tmp_path):
    tape = Tape(tmp_path / "runs.mcptape")
    tape.run()
    # the refusal names the id it refuses: were that taken for issuing it, the next session would blame this one
    tape.c2s(call_tool(1, "reply", thread_id=THREAD))
    tape.s2c(error(1, "Thread not found", {"thread_id": THREAD}))
    tape.c2s(call_tool(2, "reply", thread_id=CONVERSATION))
    tape.s2c(tool_error(2, json.dumps({"error": "unknown conversation", "conversationId": CONVERSATION})))
    tape.exit()
    tape.run()
    for n, value in enumerate([THREAD, CONVERSATION], 1):
        tape.c2s(call_tool(n, "reply", thread_id=value))
        tape.s2c(tool_error(n, "not found"))
    tape.exit()
    assert dead_ids(tape) == []


# Messages of every wrong shape where this rule looks (id-named keys, long strings, log levels, isError, nesting),
# over stdio and HTTP, in process: nothing may raise.
_long = st.sampled_from([THREAD, CONVERSATION, JOB, f"thread {THREAD} not found", '{"threadId": "%s"}' % JOB,
                         "x" * 20_000 + THREAD, "not found"])
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "error", "text"]), _long)
_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["id", "thread_id", "threadId", "text", "message", "data", "level", "type", "isError",
                     "content", "_meta", "requestId"]), inner, max_size=4), max_leaves=12)
_message = st.fixed_dictionaries({"jsonrpc": st.just("2.0")}, optional={
    "id": st.one_of(st.integers(1, 3), _long), "method": st.sampled_from(
        ["tools/call", "notifications/message", "notifications/progress", "notifications/cancelled", "x"]),
    "params": _value, "result": _value, "error": _value})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["c2s", "s2c", "sse", "run"]), st.one_of(_message, st.lists(_message,
                                                                                                    max_size=2))),
                max_size=12))
def test_no_message_makes_the_rule_raise(steps):
    with tempfile.TemporaryDirectory() as tmp:
        tape = Tape(Path(tmp) / "any.mcptape")
        tape.run()
        tape.http_session("session-a")
        ex = tape.post("session-a", call_tool(9, "x", thread_id=THREAD))
        for where, msg in steps:
            if where == "run":
                tape.run()
            elif where == "sse":
                tape.event(ex, msg)
            else:
                (tape.c2s if where == "c2s" else tape.s2c)(msg)
        assert all(f.rule and f.message for f in check([tape.write()]))
