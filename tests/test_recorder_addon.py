"""The mitmproxy addon (capture/mitm/addon.py's Recorder) in process, with mitmproxy's own test helpers: a
`taddons.context` holds the addon and its options, `tflow` makes flows, and each test calls the hooks in the order
mitmproxy's HTTP layer calls them (proxy/layers/http), then reads the tape. No proxy process, no sockets: what a
whole proxy adds (listening, TLS, real peers) is covered by test_record_raw.py and test_record_sdk.py; these cover
what the addon does with each flow, with the recorder's clock injected so every `t` in the tape is known exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import warnings
from collections.abc import Iterator

import pytest
from mitmproxy import flow as mflow
from mitmproxy import http as mhttp
from mitmproxy.proxy.mode_specs import ProxyMode
from mitmproxy.test import tflow

with warnings.catch_warnings():
    # mitmproxy's master and addons use pyparsing and ldap3 names those libraries have deprecated: not ours to fix,
    # and the suite's output stays clean
    warnings.simplefilter("ignore", DeprecationWarning)
    from mitmproxy.test import taddons

from mcptape.capture.mitm import Recorder
from mcptape.tape.file import read

from .conftest import INIT, call

UPSTREAM = "http://127.0.0.1:8000"
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache"}


class Clock:
    """The recorder's clock, moved by the test: whatever the recorder stamps itself gets `now`."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextlib.contextmanager
def recorder(tape, clock: Clock, addon: Recorder | None = None, **options) -> Iterator[Recorder]:
    """The addon configured as `mcptape record --upstream UPSTREAM/mcp` configures it; closed (capture.stop) after."""
    addon = addon or Recorder(clock)
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mode=[f"reverse:{UPSTREAM}"], mcptape_tape=str(tape), mcptape_endpoint=["/mcp"],
                       **options)
        try:
            yield addon
        finally:
            addon.done()


def post(body: bytes | dict, t: float, headers: dict | None = None) -> mhttp.HTTPFlow:
    """A client's POST to the proxy, which mitmproxy stamped `t`."""
    raw = json.dumps(body).encode() if isinstance(body, dict) else body
    request = mhttp.Request.make("POST", f"{UPSTREAM}/mcp", raw, {**JSON_HEADERS, **(headers or {})})
    request.timestamp_start = t
    flow = tflow.tflow(req=request)
    flow.client_conn.proxy_mode = ProxyMode.parse(f"reverse:{UPSTREAM}")
    flow.client_conn.sockname = ("127.0.0.1", 8765)
    flow.server_conn.timestamp_end = None  # tflow's server connection is closed; these start open
    return flow


def answer(status: int, body: bytes | dict, headers: dict, t: float) -> mhttp.Response:
    """The server's response head (and body), which mitmproxy stamped `t`."""
    raw = json.dumps(body).encode() if isinstance(body, dict) else body
    response = mhttp.Response.make(status, b"", headers)
    response.raw_content = raw  # as it came off the wire: Response.make would encode it
    response.timestamp_start = t
    return response


def records(tape) -> list[dict]:
    return read(tape).records


def test_a_post_and_its_json_answer_are_recorded_with_redacted_headers(tmp_path):
    tape, clock = tmp_path / "run.mcptape", Clock(1000.0)
    with recorder(tape, clock) as addon:
        flow = post(INIT, 1001.0, {"authorization": "Bearer sekrit-token", "mcp-protocol-version": "2025-11-25"})
        asyncio.run(addon.request(flow))
        result = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}}
        flow.response = answer(200, result, {"content-type": "application/json", "mcp-session-id": "s-1",
                                             "set-cookie": "sid=sekrit-cookie"}, 1002.0)
        asyncio.run(addon.responseheaders(flow))
        assert not flow.response.stream  # JSON is not streamed: the response hook gets it whole
        clock.now = 1003.0
        asyncio.run(addon.response(flow))
        clock.now = 1004.0
    assert read(tape).header["t"] == 1000.0
    recorded = records(tape)
    assert [(r["kind"], r["t"]) for r in recorded] == [
        ("capture.start", 1000.0), ("http.request", 1001.0), ("http.response", 1002.0), ("end", 1003.0),
        ("capture.stop", 1004.0)]
    request, response, end = recorded[1:4]
    assert request["msg"] == INIT and request["method"] == "POST" and request["path"] == "/mcp" and request["mcp"]
    assert request["protocol_version"] == "2025-11-25" and request["session"] is None
    auth = dict(request["headers"])["authorization"]
    assert auth.startswith("Bearer <redacted:") and "sekrit" not in auth
    assert response["status"] == 200 and response["msg"] == result and response["session"] == "s-1"
    assert dict(response["headers"])["set-cookie"].startswith("<redacted:")
    assert end == {**end, "exchange": 0, "reason": "complete"}
    assert b"sekrit" not in tape.read_bytes()  # redacted before anything was written


PROGRESS = b'id: 1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}\n\n'
RESULT = b'id: 2\ndata: {"jsonrpc":"2.0","id":2,"result":{"content":[]}}\n\n'


def test_sse_is_recorded_event_by_event_as_chunks_pass_and_forwarded_unchanged(tmp_path):
    tape, clock = tmp_path / "run.mcptape", Clock(1000.0)
    # events split across chunks: each is recorded by the chunk that completes it, stamped at that moment
    chunks = [PROGRESS[:20], PROGRESS[20:] + RESULT[:10], RESULT[10:-1], RESULT[-1:]]
    expected_events = [[], [1], [1], [1, 2]]
    with recorder(tape, clock) as addon:
        flow = post(call(2, "countdown", {"steps": 1}, token="p"), 1001.0)
        asyncio.run(addon.request(flow))
        flow.response = answer(200, b"", {**SSE_HEADERS, "mcp-session-id": "s-1"}, 1002.0)
        asyncio.run(addon.responseheaders(flow))
        tap = flow.response.stream
        assert callable(tap)  # streamed through the recorder, never buffered
        sent = []
        for n, (chunk, events) in enumerate(zip(chunks, expected_events)):
            clock.now = 1010.0 + n
            sent.append(tap(chunk))
            recorded = [r for r in records(tape) if r["kind"] == "sse.event"]
            assert [int(r["id"]) for r in recorded] == events, n  # on disk as soon as it is whole
        clock.now = 1020.0
        sent.append(tap(b""))  # mitmproxy's end of the body
        asyncio.run(addon.response(flow))
    # the first event is held until it is whole (a legacy endpoint in it may need relocating to the proxy); from
    # then on every chunk goes on as it came, and the client gets exactly the server's bytes
    sent = [b"".join(s) if isinstance(s, list) else s for s in sent]
    assert sent == [b"", chunks[0] + chunks[1], chunks[2], chunks[3], b""]
    assert b"".join(sent) == PROGRESS + RESULT
    recorded = records(tape)
    assert [(r["kind"], r["t"]) for r in recorded[1:]] == [
        ("http.request", 1001.0), ("http.response", 1002.0), ("sse.event", 1011.0), ("sse.event", 1013.0),
        ("end", 1020.0), ("capture.stop", 1020.0)]
    head, progress, result = recorded[2:5]
    assert head["status"] == 200 and head["session"] == "s-1" and "msg" not in head  # the body is in the events
    assert progress["msg"]["params"]["progress"] == 1 and result["msg"] == json.loads(RESULT.split(b"data: ")[1])
    assert recorded[5]["reason"] == "complete"


def test_bodies_that_are_not_json_are_kept_raw_with_their_problem(tmp_path):
    tape, clock = tmp_path / "run.mcptape", Clock(1000.0)
    bodies = [
        (b"{not json", answer(200, b"<html>oops</html>", {"content-type": "application/json"}, 1002.0)),
        (INIT, answer(200, b"this is not gzip", {"content-type": "application/json", "content-encoding": "gzip"},
                      1004.0)),
    ]
    with recorder(tape, clock) as addon:
        for n, (body, response) in enumerate(bodies):
            flow = post(body, 1001.0 + 2 * n)
            asyncio.run(addon.request(flow))
            flow.response = response
            asyncio.run(addon.responseheaders(flow))
            asyncio.run(addon.response(flow))
    by_kind = {(r["kind"], r.get("exchange")): r for r in records(tape)}
    request = by_kind["http.request", 0]
    assert request["raw"] == b"{not json" and "not JSON" in request["problem"] and request["t"] == 1001.0
    html = by_kind["http.response", 0]
    assert html["raw"] == b"<html>oops</html>" and "not JSON" in html["problem"] and html["t"] == 1002.0
    assert by_kind["http.request", 1]["msg"] == INIT
    gzipped = by_kind["http.response", 1]
    assert gzipped["raw"] == b"this is not gzip" and "could not be decoded" in gzipped["problem"]
    assert by_kind["end", 0]["reason"] == by_kind["end", 1]["reason"] == "complete"


def _unreachable(flow: mhttp.HTTPFlow, addon: Recorder) -> None:
    flow.server_conn.timestamp_tcp_setup = None  # the connection to the server never came up


def _reset(flow: mhttp.HTTPFlow, addon: Recorder) -> None:
    flow.server_conn.timestamp_end = 1004.0  # the server went away


def _stopping(flow: mhttp.HTTPFlow, addon: Recorder) -> None:
    addon.stopping = True  # SIGTERM: the proxy cut it, neither peer


ERRORS = [
    ("upstream-unreachable", "Connection refused", _unreachable),
    ("upstream-reset", "peer closed connection without sending complete message body (incomplete chunked read)",
     _reset),
    ("client-disconnected", "Client disconnected.", lambda flow, addon: None),
    ("proxy-stopped", "Client disconnected.", _stopping),
    ("proxy-error", "HTTP/2 protocol error: frame too large", lambda flow, addon: None),
]


@pytest.mark.parametrize("reason, message, situation", ERRORS, ids=[e[0] for e in ERRORS])
def test_a_failed_exchange_ends_with_the_reason_that_fits(tmp_path, reason, message, situation):
    """Mid-stream: the events that passed are kept, the cut one with its problem, and the end says who cut it."""
    tape, clock = tmp_path / "run.mcptape", Clock(1000.0)
    with recorder(tape, clock) as addon:
        flow = post(call(2, "countdown", {"steps": 3}, token="p"), 1001.0)
        asyncio.run(addon.request(flow))
        if reason != "upstream-unreachable":
            flow.response = answer(200, b"", SSE_HEADERS, 1002.0)
            asyncio.run(addon.responseheaders(flow))
            clock.now = 1003.0
            flow.response.stream(PROGRESS + b"data: half an ev")
        situation(flow, addon)
        flow.error = mflow.Error(message)
        clock.now = 1005.0
        addon.error(flow)
    exchange = [r for r in records(tape) if r.get("exchange") == 0]
    end = exchange[-1]
    assert end == {"kind": "end", "t": 1005.0, "exchange": 0, "reason": reason, "detail": message}
    if reason == "upstream-unreachable":
        assert [r["kind"] for r in exchange] == ["http.request", "end"]
    else:
        events = [r for r in exchange if r["kind"] == "sse.event"]
        assert events[0]["msg"]["params"]["progress"] == 1 and events[0]["t"] == 1003.0
        assert events[1]["data"] == "half an ev" and "blank line" in events[1]["problem"] and events[1]["t"] == 1005.0


def test_a_live_edit_answers_in_place_of_the_server(tmp_path):
    """`--edit 'status code=503 at=post:1'`: the first POST gets a 503 the server never saw, said so in the tape;
    the second goes to the server as it came."""
    tape, clock = tmp_path / "run.mcptape", Clock(1000.0)
    with recorder(tape, clock, mcptape_edit=["status code=503 at=post:1"]) as addon:
        first = post(INIT, 1001.0)
        clock.now = 1001.5
        asyncio.run(addon.request(first))
        assert first.response is not None and first.response.status_code == 503  # the server is not asked
        first.response.timestamp_start = 1002.0  # mitmproxy stamps an addon's response, then runs the hooks
        asyncio.run(addon.responseheaders(first))
        clock.now = 1003.0
        asyncio.run(addon.response(first))

        second = post(INIT, 1004.0)
        asyncio.run(addon.request(second))
        assert second.response is None  # on to the server
        second.response = answer(200, {"jsonrpc": "2.0", "id": 1, "result": {}}, {"content-type": "application/json"},
                                 1005.0)
        asyncio.run(addon.responseheaders(second))
        clock.now = 1006.0
        asyncio.run(addon.response(second))
    recorded = records(tape)
    assert [(r["kind"], r.get("exchange"), r["t"], r.get("injected", False)) for r in recorded[1:-1]] == [
        ("http.request", 0, 1001.0, False),
        ("edit", 0, 1001.5, True),
        ("http.response", 0, 1002.0, True),
        ("end", 0, 1003.0, True),
        ("http.request", 1, 1004.0, False),
        ("http.response", 1, 1005.0, False),
        ("end", 1, 1006.0, False),
    ]
    edit, refused = recorded[2], recorded[3]
    assert edit["edits"] == ["status code=503 at=post:1"] and "503" in edit["detail"]
    assert refused["status"] == 503 and {k.lower(): v for k, v in refused["headers"]}["retry-after"] == "1"


def test_in_process_the_recorder_takes_the_parsed_editor_and_redactor_as_objects(tmp_path, monkeypatch):
    """`mcptape record` hands the addon its Editor and Redactor (as mitmproxy's Dumper takes its outfile): no
    option string is parsed again; the mcptape_edit and redaction options are for `mitmdump -s` only."""
    from mcptape.edits import Editor, language
    from mcptape.redact.redactor import Redactor

    editor = Editor([language.parse("status code=503 at=post:1")])
    redactor = Redactor(["x-team"], keep_paths=["/params/clientInfo/name"])
    monkeypatch.setattr(language, "parse", lambda text: pytest.fail(f"parsed {text!r} again"))
    tape, clock = tmp_path / "run.mcptape", Clock(1000.0)
    with recorder(tape, clock, Recorder(clock, editor=editor, redactor=redactor)) as addon:
        assert addon.editor is editor
        flow = post(INIT, 1001.0, {"x-team": "blue"})
        asyncio.run(addon.request(flow))
        assert flow.response is not None and flow.response.status_code == 503  # the given editor's edit
    assert editor.unfired() == []
    assert read(tape).header["redaction"] == redactor.describe()
    [request] = [r for r in records(tape) if r["kind"] == "http.request"]
    assert dict(request["headers"])["x-team"].startswith("<redacted:")  # the given redactor's extra header


def test_an_origin_let_in_goes_upstream_as_a_browser_writes_it_and_a_malformed_one_is_refused(tmp_path):
    # an SDK server behind the recorder compares Origin as a string: `HTTP://LOCALHOST:3000` got its 403
    with recorder(tmp_path / "run.mcptape", Clock(1000.0)) as addon:
        for sent, forwarded in (("HTTP://LocalHost.:3000", "http://localhost:3000"),
                                ("http://localhost:3000", "http://localhost:3000")):
            flow = post(INIT, 1001.0, {"origin": sent})
            addon.requestheaders(flow)
            assert flow.response is None and flow.request.headers.get_all("origin") == [forwarded]
        flow = post(INIT, 1002.0, {"origin": "http://evil.example\\@localhost:3000"})
        addon.requestheaders(flow)
        assert flow.response.status_code == 403


def test_the_recording_proxy_hands_each_hook_to_the_addons_that_have_it_in_chain_order():
    """`mcptape record`'s addon manager (capture/mitm/proxy.py) offers a hook only to the addons that have it,
    looked up once: an addon added or removed later, and a sub-addon a parent (mitmproxy's script loader) takes on
    while running, are seen as by mitmproxy's own manager, and a halt still stops the chain."""
    from mitmproxy import exceptions, master, options
    from mitmproxy.proxy.layers.http import HttpRequestHook

    from mcptape.capture.mitm.proxy import Addons

    got: list[str] = []

    class Hooked:
        def __init__(self, name: str, halt: bool = False) -> None:
            self.name, self.halt = name, halt

        async def request(self, flow) -> None:
            got.append(self.name)
            if self.halt:
                raise exceptions.AddonHalt

    class Parent:  # as mitmproxy's ScriptLoader: no hook of its own, children that change
        name = "parent"

        def __init__(self) -> None:
            self.addons: list = []

    class Silent:
        name = "silent"

    async def hooks_run() -> list[list[str]]:
        m = master.Master(options.Options())
        m.addons = Addons(m)
        first, parent = Hooked("first"), Parent()
        m.addons.add(first, Silent(), parent, Hooked("last"))
        seen = []
        for change in (lambda: None, lambda: parent.addons.append(m.addons.register(Hooked("child"))),
                       lambda: m.addons.add(Hooked("added")), lambda: m.addons.remove(first),
                       lambda: m.addons.add(Hooked("halts", halt=True), Hooked("after-halt"))):
            change()
            got.clear()
            await m.addons.handle_lifecycle(HttpRequestHook(tflow.tflow()))
            seen.append(list(got))
        return seen

    assert asyncio.run(hooks_run()) == [
        ["first", "last"], ["first", "child", "last"], ["first", "child", "last", "added"],
        ["child", "last", "added"], ["child", "last", "added", "halts"]]
