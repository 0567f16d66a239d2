"""`mcptape export`: JSON and JSON Lines (`show --format json|jsonl` is the same), and HAR 1.2 read back by
mitmproxy's own HAR reader and validated by hario-core (a HAR parser from PyPI whose pydantic models of HAR 1.2 and
of Chrome's extensions check every field's type); SSE events kept in order with their times."""

from __future__ import annotations

import json

import pytest
from hario_core.parse import parse as parse_har
from mitmproxy import io as mitm_io

from mcptape.tape.file import read

from .conftest import run_mcptape
from .test_cli import one_line_error


def export(tape: str, fmt: str, *args: str) -> str:
    result = run_mcptape("export", tape, "--format", fmt, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_json_exports_are_shows_and_import_reads_them_back(real_tapes, tmp_path, fmt):
    tape = real_tapes["session"]
    text = export(tape, fmt)
    assert text == run_mcptape("show", tape, "--format", fmt).stdout  # the alias stays
    out = tmp_path / f"run.{fmt}"
    assert export(tape, fmt, "-o", str(out)) == "" and out.read_text() == text
    back = tmp_path / "back.mcptape"
    assert run_mcptape("import", str(out), "-o", str(back)).returncode == 0
    assert read(back).records == read(tape).records


@pytest.mark.parametrize("name", ["session", "stateless", "edited"])
def test_har_opens_in_mitmproxy_and_validates_in_hario_core(real_tapes, tmp_path, name):
    tape = real_tapes[name]
    har_file = tmp_path / f"{name}.har"
    export(tape, "har", "-o", str(har_file))
    har = json.loads(har_file.read_text())
    entries = har["log"]["entries"]
    requests = [r for r in read(tape).records if r["kind"] == "http.request"]
    assert har["log"]["version"] == "1.2" and len(entries) == len(requests)
    assert [e["_mcptape"]["exchange"] for e in entries] == [r["exchange"] for r in requests]

    flows = list(mitm_io.read_flows_from_paths([str(har_file)]))  # mitmproxy's own HAR reader
    assert len(flows) == len(entries)
    for flow, entry, request in zip(flows, entries, requests):
        assert flow.request.method == request["method"] and flow.request.path == request["path"]
        assert flow.request.timestamp_start == pytest.approx(request["t"], abs=0.001)
        assert flow.response.status_code == entry["response"]["status"]
        if "msg" in request:
            assert json.loads(flow.request.content) == request["msg"]

    parsed = parse_har(har_file)  # every entry checked against the HAR 1.2 model (and Chrome's extensions)
    assert parsed.version == "1.2" and len(parsed.entries) == len(entries)
    for parsed_entry, entry, request in zip(parsed.entries, entries, requests):
        assert parsed_entry.request.method == request["method"] and parsed_entry.resourceType == "fetch"
        assert parsed_entry.request.url == entry["request"]["url"] and parsed_entry.request.url.endswith("/mcp")
        assert parsed_entry.response.status == entry["response"]["status"] and parsed_entry.time == entry["time"]
        assert parsed_entry.startedDateTime.timestamp() == pytest.approx(request["t"], abs=0.001)
        assert parsed_entry.timings.wait + parsed_entry.timings.receive == pytest.approx(entry["time"], abs=0.01)

    posted = {r["exchange"]: r.get("msg", {}) for r in requests}
    streams = [e for e in entries if e.get("_eventSourceMessages")]
    assert streams  # every era answers some POSTs with SSE
    tape_events = {}
    for r in read(tape).records:
        if r["kind"] == "sse.event":
            tape_events.setdefault(r["exchange"], []).append(r)
    for entry in streams:
        events = entry["_eventSourceMessages"]
        recorded = tape_events[entry["_mcptape"]["exchange"]]
        assert [e["time"] for e in events] == [r["t"] for r in recorded]  # in order, each at its own time
        assert [e["eventId"] for e in events] == [r.get("id", "") for r in recorded]
        assert entry["response"]["content"]["mimeType"] == "text/event-stream"
        for event in events:
            assert event["data"] in entry["response"]["content"]["text"]
    if name == "edited":  # the edit answered the countdown with a 404 in place of its stream
        injected = [e for e in entries if e["_mcptape"]["injected"]]
        assert injected and all(e["response"]["status"] == 404 for e in injected)
        return
    countdown = next(e for e in streams if isinstance(posted[e["_mcptape"]["exchange"]], dict)
                     and (posted[e["_mcptape"]["exchange"]].get("params") or {}).get("name") == "countdown"
                     and e["response"]["status"] == 200)
    progress = [json.loads(e["data"])["params"]["progress"] for e in countdown["_eventSourceMessages"]
                if '"notifications/progress"' in e["data"]]
    assert progress == [1, 2, 3]


def test_a_stdio_tape_is_refused_for_har_in_one_line(real_tapes, tmp_path):
    out = tmp_path / "x.har"
    one_line_error(run_mcptape("export", real_tapes["stdio"], "--format", "har", "-o", str(out)),
                   "a stdio tape has no HTTP exchanges for a HAR; export it as json or jsonl")
    assert not out.exists()
    one_line_error(run_mcptape("export", str(tmp_path / "missing.mcptape"), "--format", "har"), "cannot open")


def test_odd_exchanges_still_make_a_valid_har(tmp_path):
    """No answer at all (the upstream was unreachable), a body that is not UTF-8, a query string, an SSE stream
    whose bytes could not be read as SSE, an OAuth request that is not MCP."""
    from mcptape.tape import records

    from .conftest import write_tape

    tape = write_tape(tmp_path / "odd.mcptape", [
        records.capture_start(10.0, "t", {"modes": ["reverse:https://example.test:8443"]}, {}),
        records.http_request(11.0, 0, 0, "POST", "/mcp", [["api_key", "<redacted:0123456789ab>"], ["x", "1 2"]],
                             [["content-type", "application/json"]], None, None, True,
                             records.body(b"\xff\xfe not json")),
        records.end(11.5, 0, records.UPSTREAM_UNREACHABLE, "connection refused"),
        records.http_request(12.0, 1, 0, "GET", "/mcp", [], [["accept", "text/event-stream"]], "s1", "2025-11-25",
                             True, {}),
        records.http_response(12.1, 1, 200, "OK", [["content-type", "text/event-stream"]], "s1", {}),
        records.sse_raw(12.2, 1, b"\x1f\x8b broken gzip", "undecodable gzip"),
        records.end(12.3, 1, records.UPSTREAM_RESET),
        records.http_request(13.0, 2, 1, "GET", "/.well-known/oauth-authorization-server", [], [], None, None,
                             False, {}),
        records.http_response(13.1, 2, 404, "Not Found", [], None, {}),
        records.end(13.1, 2, records.COMPLETE),
    ])
    out = tmp_path / "odd.har"
    export(tape, "har", "-o", str(out))
    entries = json.loads(out.read_text())["log"]["entries"]
    unreachable, stream, oauth = entries
    assert unreachable["request"]["url"] == "https://example.test:8443/mcp?api_key=%3Credacted%3A0123456789ab%3E&x=1+2"
    assert unreachable["response"]["status"] == 0 and unreachable["response"]["_error"] == "connection refused"
    assert unreachable["request"]["postData"]["text"] == "//4gbm90IGpzb24="  # base64 of the bytes as they came
    assert stream["response"]["content"]["text"].endswith("broken gzip") and "_eventSourceMessages" not in stream
    assert stream["_mcptape"]["end"] == "upstream-reset" and oauth["response"]["status"] == 404
    assert len(parse_har(out).entries) == 3
    assert [f.request.path for f in mitm_io.read_flows_from_paths([str(out)])] == [
        "/mcp?api_key=%3Credacted%3A0123456789ab%3E&x=1+2", "/mcp", "/.well-known/oauth-authorization-server"]


ODD_BODY = ('{ "jsonrpc" : "2.0", "id" : 2, "result" : {"z": 1.0, "a": -0.0, "big": 123456789012345678901234567890,'
            ' "exact": 0.10000000000000000001, "\\u00e9t\\u00e9": "caf\\u00e9 \\/", "d": 1, "d": 2, "content":'
            ' [{"type": "text", "text": "{\\n  \\"name\\" : \\"caf\\\\u00e9\\",\\n  \\"n\\": 1e3,\\n  \\"n\\": 1.50\\n}"},'
            ' {"type": "text", "text": "{\\"api_key\\": \\"<redacted:0123456789ab>\\",  \\"x\\":[1 ,2]}"}]}}')


def test_a_body_that_is_not_canonical_json_round_trips_through_export_and_import(tmp_path):
    """Key order, `1.0`, `-0.0`, big and exact numbers, escapes, a key written twice, and JSON text inside strings
    (pretty-printed, a redacted one among them): what export writes, import reads back as the same records."""
    from mcptape.testing.builder import Conversation
    from mcptape.wire import jsonrpc

    answer = jsonrpc.loads(ODD_BODY)
    tape = Conversation()
    tape.initialize()
    tape.call("tools/call", {"name": "odd"}, result=answer["result"])
    path = tape.write(tmp_path / "odd.mcptape")
    for fmt in ("json", "jsonl"):
        out = tmp_path / f"odd.{fmt}"
        export(path, fmt, "-o", str(out))
        back = tmp_path / f"back-{fmt}.mcptape"
        assert run_mcptape("import", str(out), "-o", str(back)).returncode == 0
        assert repr(read(back).records) == repr(read(path).records)  # every value of its type, every string as it was
    answered = [r["msg"]["result"] for r in read(back).records if "content" in r.get("msg", {}).get("result", {})]
    assert [c["text"] for c in answered[0]["content"]] == [c["text"] for c in answer["result"]["content"]]
    assert list(answered[0]) == ["z", "a", "big", "exact", "été", "d", "content"] and answered[0]["d"] == 2
