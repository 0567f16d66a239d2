"""mcptape at home in mitmproxy (issue 25): the MCP contentview rendering real traffic through mitmproxy's own
contentview machinery; tapes exported as flow files and read back by mitmproxy's reader; a plain `mitmdump -w`
capture and a HAR of one session imported into tapes that check like the tape `mcptape record` made of it."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mitmproxy import contentviews, io
from mitmproxy.test import taddons, tflow

from mcptape.capture.mitm import mcp_view
from mcptape.check import check
from mcptape.demo.client import script
from mcptape.tape.file import read

from .conftest import BIN, INIT, by_exchange, free_port, run_mcptape, spawn_demo, start_recording, stop, wait_for_port
from .test_cli import one_line_error
from .test_record_raw import fetch, raw  # noqa: F401 (raw: the misbehaving upstream's fixture)
from .test_report_browser import browser  # noqa: F401 (Debian's Chromium through Playwright)


def mitmdump_w(upstream: str, flows: Path) -> tuple[subprocess.Popen, str]:
    """Plain `mitmdump -w` in reverse mode (no mcptape addon): the capture a user already has."""
    port = free_port()
    proc = subprocess.Popen([str(BIN / "mitmdump"), "-q", "--listen-host", "127.0.0.1", "-p", str(port),
                             "--mode", f"reverse:{upstream}", "-w", str(flows)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_port(port, proc)
    return proc, f"http://127.0.0.1:{port}"


def post(base: str, body: dict, session: str | None = None) -> tuple[int, dict, bytes]:
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    conn.request("POST", "/mcp", json.dumps(body), headers)
    response = conn.getresponse()
    out = (response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    conn.close()
    return out


@pytest.fixture(scope="module")
def same_session(tmp_path_factory) -> dict[str, str]:
    """One session captured twice at once: the SDK client talks to `mcptape record`, whose upstream is a plain
    `mitmdump -w` in front of the SDK demo server. After the SDK client's script, a raw client opens a session,
    calls an unknown tool, deletes the session and goes on using it (the server answers 404, twice): faults for
    check to find in both captures."""
    folder = tmp_path_factory.mktemp("same")
    out = {"flows": str(folder / "capture.flows"), "tape": str(folder / "recorded.mcptape")}
    port = free_port()
    server = spawn_demo(port)
    dump, dump_url = mitmdump_w(f"http://127.0.0.1:{port}", Path(out["flows"]))
    try:
        recording = start_recording(f"{dump_url}/mcp", Path(out["tape"]))
        base = recording.url.rsplit("/mcp", 1)[0]
        try:
            assert "countdown counted down from 3" in " ".join(anyio.run(script, recording.url, "legacy"))
            status, headers, _ = post(base, INIT)
            session = headers["mcp-session-id"]
            assert status == 200
            post(base, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
            post(base, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "no-such-tool", "arguments": {}}}, session)
            conn = http.client.HTTPConnection(base.removeprefix("http://"), timeout=10)
            conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
            assert conn.getresponse().status == 200
            conn.close()
            for n in (3, 4):
                assert post(base, {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                   "params": {"name": "add", "arguments": {"a": n, "b": 1}}}, session)[0] == 404
        finally:
            assert recording.stop()[0] == 0
    finally:
        assert stop(dump, signal.SIGINT) == 0, dump.stderr.read()
        stop(server)
    return out


def tool_calls(tape: str) -> list[tuple]:
    """Each tools/call with its outcome: (tool, arguments, status, result or error), in request order."""
    out = []
    for records in by_exchange(read(tape)).values():
        request = records[0].get("msg")
        if not (isinstance(request, dict) and request.get("method") == "tools/call"):
            continue
        answers = [r["msg"] for r in records[1:] if isinstance(r.get("msg"), dict)
                   and r["msg"].get("id") == request["id"] and ("result" in r["msg"] or "error" in r["msg"])]
        status = next(r["status"] for r in records if r["kind"] == "http.response")
        outcome = answers[0].get("result", answers[0].get("error")) if answers else None
        out.append((request["params"]["name"], request["params"]["arguments"], status, outcome))
    return out


def findings(tape: str) -> list[tuple]:
    return [(f.rule, f.blames, f.method, f.request_id, f.session is not None, f.injected) for f in check([tape])]


# -- import --------------------------------------------------------------------------------------------------------

def test_a_mitmdump_capture_imports_into_a_tape_that_checks_like_the_recorded_one(same_session, tmp_path):
    tape = tmp_path / "imported.mcptape"
    result = run_mcptape("import", same_session["flows"], "-o", str(tape))
    assert result.returncode == 0, result.stderr
    assert "no per-event times" in result.stderr and "wrote " in result.stderr
    recorded, imported = tool_calls(same_session["tape"]), tool_calls(str(tape))
    assert [c[0] for c in recorded] == ["add", "countdown", "no-such-tool", "add", "add"]
    assert imported == recorded
    assert recorded[2][3]["isError"] is True and [c[2] for c in recorded[3:]] == [404, 404]
    expected = findings(same_session["tape"])
    assert expected and any(blames == "client" for _, blames, *_ in expected)  # the dead session kept in use
    assert findings(str(tape)) == expected
    start = read(tape).records[0]
    assert start["kind"] == "capture.start" and start["source"]["format"] == "mitmproxy flow file"
    assert start["source"]["event_times"] is False and start["source"]["missing"][0].startswith("no per-event times")
    # the progress of countdown, split into events as the recorder split them
    def progress(t):
        return [r["msg"]["params"]["progress"] for r in read(t).records
                if r["kind"] == "sse.event" and (r.get("msg") or {}).get("method") == "notifications/progress"]
    assert progress(str(tape)) == progress(same_session["tape"]) == [1, 2, 3]
    assert run_mcptape("report", str(tape)).returncode == 0
    from mcptape.replay import replaying

    with replaying(str(tape)) as url:  # the imported capture serves the SDK client as the server did
        assert "countdown counted down from 3" in anyio.run(script, url, "legacy")


def test_a_har_of_the_session_imports_with_its_event_times(same_session, tmp_path):
    har = tmp_path / "run.har"
    assert run_mcptape("export", same_session["tape"], "--format", "har", "-o", str(har)).returncode == 0
    tape = tmp_path / "from-har.mcptape"
    result = run_mcptape("import", str(har), "-o", str(tape))
    assert result.returncode == 0, result.stderr
    assert tool_calls(str(tape)) == tool_calls(same_session["tape"])
    assert findings(str(tape)) == findings(same_session["tape"])
    times = [[r["t"] for r in read(t).records if r["kind"] == "sse.event"] for t in (str(tape), same_session["tape"])]
    assert times[0] == pytest.approx(times[1], abs=1e-6)  # each event at its own time, from _eventSourceMessages
    assert read(tape).records[0]["source"]["event_times"] is True


def test_import_refuses_what_it_cannot_read_in_one_line(tmp_path):
    for name, data in (("x.txt", b"hello"), ("x.json", b'{"foo": 1}'), ("bad.flows", b"12:not a flow,")):
        path = tmp_path / name
        path.write_bytes(data)
        result = run_mcptape("import", str(path), "-o", str(tmp_path / "out.mcptape"))
        one_line_error(result, str(path))
        assert not (tmp_path / "out.mcptape").exists()
    (tmp_path / "nohar.har").write_text('{"log": {"version": "1.2"}}')
    one_line_error(run_mcptape("import", str(tmp_path / "nohar.har"), "-o", str(tmp_path / "o.mcptape")),
                   "not a HAR: no log.entries")


# -- export --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["session", "stateless", "edited"])
def test_a_tape_exported_as_flows_is_read_back_by_mitmproxy(real_tapes, tmp_path, name):
    tape, out = real_tapes[name], tmp_path / "run.flows"
    assert run_mcptape("export", tape, "--format", "mitm", "-o", str(out)).returncode == 0
    with open(out, "rb") as f:
        flows = list(io.FlowReader(f).stream())
    exchanges = by_exchange(read(tape))
    assert len(flows) == len(exchanges)
    for flow, records in zip(flows, sorted(exchanges.values(), key=lambda rs: rs[0]["t"])):
        request = records[0]
        assert flow.request.method == request["method"] and flow.request.path.split("?")[0] == request["path"]
        assert flow.request.timestamp_start == request["t"]
        if "msg" in request:
            assert json.loads(flow.request.content) == request["msg"]
        events = [r for r in records if r["kind"] == "sse.event"]
        response = next((r for r in records if r["kind"] == "http.response"), None)
        if response is not None:
            assert flow.response.status_code == response["status"]
            assert flow.response.timestamp_start == response["t"]
        if events:  # the stream's events, in order, as its body
            body = flow.response.content.decode()
            assert [f"id: {e['id']}" in body for e in events if "id" in e] == [True] * len([e for e in events
                                                                                            if "id" in e])
            assert flow.response.timestamp_end == max(r["t"] for r in records)
        assert (flow.error is None) == (records[-1]["kind"] == "end" and records[-1]["reason"] == "complete")
    if name == "edited":
        assert any("edit changed" in f.comment for f in flows)
    back = tmp_path / "back.mcptape"  # and mcptape reads its own export
    assert run_mcptape("import", str(out), "-o", str(back)).returncode == 0
    assert tool_calls(str(back)) == tool_calls(tape)


def test_a_stdio_tape_is_refused_for_mitm_in_one_line(real_tapes, tmp_path):
    out = tmp_path / "x.flows"
    one_line_error(run_mcptape("export", real_tapes["stdio"], "--format", "mitm", "-o", str(out)),
                   "a stdio tape has no HTTP exchanges for a mitmproxy flow file; export it as json or jsonl")
    assert not out.exists()


# -- the contentview -----------------------------------------------------------------------------------------------

@pytest.fixture(autouse=True, scope="module")
def view_registered():
    mcp_view.register()
    with taddons.context():
        yield


def render(message, flow) -> tuple[str, str]:
    result = contentviews.prettify_message(message, flow)
    return result.view_name, result.text


def test_the_view_reads_a_plain_mitmdump_capture(same_session):
    with open(same_session["flows"], "rb") as f:
        flows = [f for f in io.FlowReader(f).stream() if f.response is not None]
    calls = [f for f in flows if b'"countdown"' in f.request.content]
    view, text = render(calls[0].request, calls[0])
    assert view == "MCP" and text.splitlines()[0].startswith("request tools/call #") and text.endswith("}")
    assert '"steps": 3' in text
    view, text = render(calls[0].response, calls[0])  # an SSE answer with progress
    lines = text.splitlines()
    assert view == "MCP" and lines[0] == "SSE stream: 7 events"  # 3 progress, 3 log messages, the result
    assert [line for line in lines if line.startswith("event ")] == [f"event {n} · type message" for n in range(1, 8)]
    assert "    notification notifications/message info" in lines
    assert [line.strip() for line in lines if "notifications/progress" in line] == [
        "notification notifications/progress 1/3", "notification notifications/progress 2/3",
        "notification notifications/progress 3/3"]
    assert any(line.strip().startswith("result #") and line.endswith("· answers tools/call countdown")
               for line in lines)
    unknown = next(f for f in flows if b"no-such-tool" in f.request.content)
    view, text = render(unknown.response, unknown)
    assert view == "MCP" and "· answers tools/call no-such-tool · isError" in text
    dead = [f for f in flows if f.response.status_code == 404]
    view, text = render(dead[0].response, dead[0])
    assert view == "MCP" and text.splitlines()[0].startswith("error ") and "Session not found" in text
    other = tflow.tflow(resp=True)  # other traffic keeps mitmproxy's views
    other.response.headers["content-type"] = "application/json"
    other.response.content = b'{"hello": "world"}'
    assert render(other.response, other)[0] == "JSON"


def test_the_view_reads_json_answers_a_batch_a_non_json_body_and_a_legacy_endpoint(demo_server, record, raw,
                                                                                   tmp_path):
    # a JSON-answering SDK server, a legacy HTTP+SSE one, and a raw server echoing a batch and sending HTML
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    rec = record(demo_server("--json"))
    anyio.run(script, rec.url, "legacy")
    assert rec.stop()[0] == 0
    flows = exported(rec.tape, tmp_path)
    rec = record(demo_server("--sse"))

    async def legacy() -> None:
        async with sse_client(rec.url) as streams, ClientSession(*streams) as session:
            await session.initialize()
            await session.call_tool("add", {"a": 4, "b": 5})

    anyio.run(legacy)
    assert rec.stop()[0] == 0
    flows += exported(rec.tape, tmp_path)
    rec = record(raw.url)
    batch = [{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add"}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    assert fetch(rec.url, "echo", json.dumps(batch).encode())[0] == 200
    assert fetch(rec.url, "not-json")[0] == 200
    rec.stop()
    flows += exported(rec.tape, tmp_path)

    texts = {}
    for flow in flows:
        for message in (flow.request, flow.response):
            if message is not None and message.raw_content:
                view, text = render(message, flow)
                texts.setdefault(view, []).append(text)
    mcp = texts["MCP"]
    assert any(t.startswith("result #") and "· answers tools/call add" in t.splitlines()[0]
               and '"result": 5' in t for t in mcp)  # a JSON answer (--json)
    endpoint = next(t for t in mcp if "type endpoint" in t)
    assert "(legacy HTTP+SSE: the client POSTs its messages here)" in endpoint and "session_id=" in endpoint
    batch_text = next(t for t in mcp if t.startswith("batch of 2 messages"))
    assert "[1] request tools/call #7 add" in batch_text and "[2] notification notifications/initialized" in batch_text
    html = next(t for t in mcp if "<html>oops</html>" in t)
    assert html.splitlines()[0].startswith("not a JSON-RPC message: not JSON")


def exported(tape, tmp_path) -> list:
    out = tmp_path / (Path(tape).stem + ".flows")
    assert run_mcptape("export", str(tape), "--format", "mitm", "-o", str(out)).returncode == 0
    with open(out, "rb") as f:
        return list(io.FlowReader(f).stream())


BODIES = st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode),
                   st.lists(st.sampled_from([b"data: ", b"id: 1", b"event: endpoint", b"retry: x", b": c", b"\n",
                                             b"\r\n", b'{"jsonrpc":"2.0","id":1,"result":{}}', b"[", b"]", b"\xff",
                                             b'{"jsonrpc":"2.0","method":"m"}', b","]), max_size=30).map(b"".join))


@settings(max_examples=300, deadline=None)
@given(body=BODIES, ctype=st.sampled_from(["application/json", "text/event-stream", "text/plain", None]),
       mcp_headers=st.booleans())
def test_the_view_never_raises_on_any_body(body, ctype, mcp_headers):
    flow = tflow.tflow(resp=True)
    if mcp_headers:
        flow.request.headers["mcp-session-id"] = "s"
    for message in (flow.request, flow.response):
        if ctype:
            message.headers["content-type"] = ctype
        message.content = body
        metadata = contentviews.Metadata(flow=flow, content_type=ctype, http_message=message)
        assert mcp_view.view.render_priority(body, metadata) in (0, 2)
        assert isinstance(mcp_view.view.prettify(body, metadata), str)
        assert render(message, flow)[0] is not None


# -- store_streamed_bodies -----------------------------------------------------------------------------------------

def test_the_record_addon_keeps_sse_bodies_for_mitmweb_when_asked(demo_server, tmp_path):
    """mitmdump with the record addon and mcptape_store_streamed_bodies: the -w file holds each SSE body (as the
    client got it), the view splits it into events, and the tape is recorded as always."""
    flows_file, tape = tmp_path / "kept.flows", tmp_path / "kept.mcptape"
    upstream = demo_server()
    port = free_port()
    proc = subprocess.Popen([str(BIN / "mitmdump"), "-q", "--listen-host", "127.0.0.1", "-p", str(port),
                             "--mode", f"reverse:{upstream.rsplit('/mcp', 1)[0]}", "-w", str(flows_file),
                             "-s", run_mcptape("addons", "record").stdout.strip(),
                             "--set", f"mcptape_tape={tape}", "--set", "mcptape_store_streamed_bodies=1m"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc)
        anyio.run(script, f"http://127.0.0.1:{port}/mcp", "legacy")
    finally:
        assert stop(proc, signal.SIGINT) == 0, proc.stderr.read()
    with open(flows_file, "rb") as f:
        flows = [f for f in io.FlowReader(f).stream() if f.response is not None
                 and f.response.headers.get("content-type", "").startswith("text/event-stream")]
    countdown = next(f for f in flows if b'"countdown"' in f.request.content)
    view, text = render(countdown.response, countdown)
    assert view == "MCP" and text.startswith("SSE stream: 7 events") and "notifications/progress 3/3" in text
    assert countdown.response.content.count(b"\r\n\r\n") == 7  # the SDK ends lines with CRLF
    assert any(r["kind"] == "sse.event" for r in read(tape).records)


def test_a_stream_past_the_cap_is_not_kept_and_the_flow_says_so():
    from mcptape.capture.http import HttpCapture, Scope
    from mcptape.capture.mitm.taps import Tap
    from mcptape.formats.imported import Records
    from mcptape.redact.redactor import Redactor

    capture = HttpCapture(Records(), Redactor(), Scope())
    for cap, chunks in ((1000, [b"data: {}\n\n", b"data: {}\n\n"]), (15, [b"data: {}\n\n", b"data: {}\n\n"])):
        flow = tflow.tflow(resp=True)
        flow.response.raw_content = None
        capture.request(flow.id, 1, 0.0, "POST", "/mcp", [], json.dumps(INIT).encode())
        tap = Tap(capture.response_head(flow.id, 0.0, 200, "OK", [("content-type", "text/event-stream")]), flow, cap)
        assert [tap(chunk) for chunk in chunks] == chunks
        tap(b"")  # the end of the stream
        if cap == 1000:
            assert flow.response.raw_content == b"".join(chunks)
        else:
            assert flow.response.raw_content is None and "passed 15b and was not kept" in flow.comment


def test_the_view_never_fails_on_the_bodies_of_the_bad_input_tests(raw, record, tmp_path):
    from .test_record_raw import BAD

    rec = record(raw.url)
    for behaviour, *_ in BAD:
        fetch(rec.url, behaviour)
    for body in (b"{not json", b'{"jsonrpc":"2.0","id":null,"method":"x"}', b"\xff\xfe\x00"):
        fetch(rec.url, "echo", body)
    assert rec.stop()[0] == 0
    flows = exported(rec.tape, tmp_path)
    assert len(flows) == len(BAD) + 3
    shown = 0
    for flow in flows:
        for message in (flow.request, flow.response):
            data = message.get_content(strict=False)
            metadata = contentviews.Metadata(flow=flow, content_type=message.headers.get("content-type"),
                                             http_message=message)
            assert isinstance(mcp_view.view.prettify(data, metadata), str)  # directly: nothing caught for us
            result = contentviews.prettify_message(message, flow)
            assert "failed to parse as MCP" not in result.description
            shown += result.view_name == "MCP"
    assert shown >= len(BAD) + 3  # every request is MCP, and so are most answers


# -- mitmweb in a real browser -------------------------------------------------------------------------------------

def test_a_recorded_flow_opens_in_mitmweb_with_the_mcp_view(browser, real_tapes, tmp_path):  # noqa: F811
    """mitmweb opens an exported tape with the contentview addon; headless Chromium shows a tools/call's SSE answer
    through the MCP view. mitmweb 12 asks for an access token: we give it one. The screenshot is kept."""
    from .test_report_browser import ARTIFACTS

    flows_file = tmp_path / "session.flows"
    assert run_mcptape("export", real_tapes["session"], "--format", "mitm", "-o", str(flows_file)).returncode == 0
    with open(flows_file, "rb") as f:
        countdown = next(f for f in io.FlowReader(f).stream() if b'"countdown"' in f.request.content)
    web, token = free_port(), "mcptape-test-token"
    proc = subprocess.Popen([str(BIN / "mitmweb"), "-r", str(flows_file), "--listen-host", "127.0.0.1",
                             "-p", str(free_port()), "--web-host", "127.0.0.1", "--web-port", str(web),
                             "--set", "web_open_browser=false", "--set", f"web_password={token}",
                             "-s", run_mcptape("addons", "contentview").stdout.strip()],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(web, proc)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"http://127.0.0.1:{web}/?token={token}#/flows/{countdown.id}/response", wait_until="load")
        body = page.locator(".contentview")
        body.get_by_text("SSE stream:", exact=False).first.wait_for(timeout=15000)
        text = body.first.inner_text()
        assert "answers tools/call countdown" in text and "notification notifications/progress 3/3" in text
        assert page.locator("text=MCP").first.is_visible()  # the view mitmweb chose, named in its view picker
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "mitmweb-mcp-view.png"), full_page=True)
        page.close()
    finally:
        stop(proc, signal.SIGINT)
