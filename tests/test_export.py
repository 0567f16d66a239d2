"""`mcptape export`: JSON and JSON Lines (`show --format json|jsonl` is the same), and HAR 1.2 read back by
mitmproxy's own HAR reader and by haralyzer, a HAR parser from PyPI; SSE events kept in order with their times."""

from __future__ import annotations

import json

import pytest
from haralyzer import HarParser
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
def test_har_opens_in_mitmproxy_and_in_haralyzer(real_tapes, tmp_path, name):
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

    parsed = HarParser(har)
    [page] = parsed.pages  # haralyzer files entries without a page under one page of their own
    assert len(page.entries) == len(entries)
    for parsed_entry, entry in zip(page.entries, entries):
        assert parsed_entry.request.method == entry["request"]["method"]
        assert parsed_entry.request.url == entry["request"]["url"] and parsed_entry.request.url.endswith("/mcp")
        assert parsed_entry.status == entry["response"]["status"] and parsed_entry.time == entry["time"]
        assert parsed_entry.startTime.timestamp() == pytest.approx(flows[0].request.timestamp_start, abs=60)

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
