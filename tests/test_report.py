"""`mcptape report`: real tapes of each era and transport read as one page (Markdown with Mermaid, HTML, JSON),
and the fast in-process cases: a long conversation folded, text from a tape that tries to break out of the page.
The HTML in a real browser: test_report_browser.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

from mcptape.formats import har
from mcptape.report import build, diagram, render
from mcptape.tape import records
from mcptape.tape.file import Reader
from mcptape.wire import sse

from .conftest import BIN, run_mcptape, write_tape
from .test_cli import one_line_error


def report_json(*tapes: str) -> dict:
    result = run_mcptape("report", *tapes, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_session_the_client_lost_to_an_edit(real_tapes, tmp_path):
    tape = real_tapes["edited"]
    data = report_json(tape)
    [session] = data["sessions"]
    assert session["transport"] == "streamable-http" and session["version"] == "2025-11-25"
    assert session["dead"]["kind"] == "expired" and session["dead"]["status"] == 404 and session["dead"]["injected"]
    calls = {(c["method"], c["name"]): c for c in data["calls"]}
    assert calls[("tools/call", "add")]["outcome"] == "result" and calls[("tools/call", "add")]["duration_ms"] >= 0
    countdown = calls[("tools/call", "countdown")]
    assert countdown["outcome"] == "error" and countdown["injected"] and countdown["error"]["code"] == -32600
    assert data["statuses"]["404"] >= 2 and data["edits"][0]["edits"] == ["expire-session at=tools/call#2"]
    findings = {f["rule"]: f for f in data["findings"]}
    assert {"no-reinitialize", "dead-session-reuse"} <= set(findings)
    reuse = findings["dead-session-reuse"]
    assert reuse["blames"] == "client" and reuse["injected"] and "MUST start a new session" in reuse["spec"]
    assert any("Session not found" in e["body"] for e in reuse["excerpts"])  # the injected 404 it rests on
    assert any('"resources/read"' in e["body"] for e in reuse["excerpts"])  # the request that reused the session
    assert data["summary"]["error"] == 2 and data["summary"]["calls"] == len(data["calls"]) == 5

    out = tmp_path / "report.md"
    result = run_mcptape("report", tape, "-o", str(out))
    assert result.returncode == 0 and result.stdout == "" and f"wrote {out}" in result.stderr
    md = out.read_text()
    mermaid = run_mcptape("report", tape, "--format", "mermaid").stdout
    assert f"```mermaid\n{mermaid}```" in md  # the same diagram, as GitHub renders it
    assert mermaid.startswith("sequenceDiagram\n") and "participant M as mcptape (edits)" in mermaid
    assert re.search(r"M--xC: error #35;4 -32600 Session not found", mermaid)  # the answer mcptape made up
    assert re.search(r"Note over C,S: session [0-9a-f]{8}… expired 404 by an edit", mermaid)
    # the two findings about one event are one story: one note, one section, their evidence once
    assert mermaid.count("Note over C,S: error#58; ") == 1
    assert "error#58; dead-session-reuse + no-reinitialize, blames the client (rests on an edit)" in mermaid
    assert re.search(r"C->>M: tools/call #35;4 countdown", mermaid)  # answered by the edit: it never reached S
    assert "C->>M: DELETE" in mermaid and "M--xC: HTTP 404 (DELETE)" in mermaid  # every exchange drawn
    assert md.splitlines()[2].startswith("**The client is blamed (dead-session-reuse and no-reinitialize): ")
    assert "It rests on what mcptape injected (an edit)" in md.splitlines()[2]
    for text in ("### 1. error: dead-session-reuse + no-reinitialize, blames the client",
                 "blames the client; rests on what mcptape injected", "<details><summary>record", "```json",
                 "## Sessions", "| tools/call |", "expire-session at=tools/call"):
        assert text in md, text
    summaries = re.findall(r"<summary>(.*)</summary>", md)
    assert len(summaries) == len(set(summaries)) and not any("\\" in s for s in summaries), summaries
    assert any("POST /mcp [2025-11-25]" in s for s in summaries)  # raw HTML: no Markdown backslashes


def test_a_2026_stateless_conversation(real_tapes):
    data = report_json(real_tapes["stateless"])
    assert {s["transport"] for s in data["sessions"]} == {"stateless-http"}
    assert {s["version"] for s in data["sessions"]} == {"2026-07-28"}
    assert [c["method"] for c in data["calls"]] == ["tools/list", "tools/call", "tools/call", "resources/read"]
    assert all(c["outcome"] == "result" and c["duration_ms"] is not None for c in data["calls"])
    assert data["findings"] == [] and data["statuses"] == {"200": 4}
    md = render(data, "md")
    assert "| (no session, conn" in md and "no session on this wire" in md and "alive at the end" not in md
    assert "**Sessions**: 0 (2 connection(s) without a session)" in md
    assert "C->>S: tools/call #35;2 add" in md and "S-->>C: result #35;2" in md
    page = render(data, "html")
    assert page.count("<svg") == 1 and "tools/call #2 add" in page


def test_a_stdio_conversation(real_tapes):
    data = report_json(real_tapes["stdio"])
    [session] = data["sessions"]
    assert session["transport"] == "stdio" and session["opened"] and session["ended"]["kind"] == "ended"
    assert data["peers"] == {"client": "mcp 0.1.0", "server": "mcptape-demo"}
    countdown = next(c for c in data["calls"] if c["name"] == "countdown")
    assert countdown["progress"] == 3 and countdown["duration_ms"] > 0
    assert data["statuses"] == {} and data["exits"][0]["code"] == 0
    md = render(data, "md")
    assert "session stdio#35;1 opened (2025-11-25)" in md and "session stdio#35;1 ended" in md
    assert "## HTTP statuses" not in md and "| stdio#1 | stdio | 2025-11-25 |" in md


def _stdio_conversation(path, calls: int, failing: set[int] = frozenset(), name: str = "add") -> str:
    def line(t, direction, msg):
        return records.stdio_line(t, direction, json.dumps(msg).encode())

    items = [records.capture_start(0.0, "t", {"stdio": ["server"]}, {}),
             line(0.1, records.C2S, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                 "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}),
             line(0.2, records.S2C, {"jsonrpc": "2.0", "id": 0, "result": {
                 "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                 "serverInfo": {"name": "s", "version": "1"}}}),
             line(0.3, records.C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"})]
    t = 1.0
    for i in range(1, calls + 1):
        t += 0.01
        items.append(line(t, records.C2S, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                           "params": {"name": name, "arguments": {}}}))
        answer = {"error": {"code": -32000, "message": "boom"}} if i in failing else {"result": {"content": []}}
        items.append(line(t + 0.002, records.S2C, {"jsonrpc": "2.0", "id": i, **answer}))
    return write_tape(path, items)


def test_a_long_conversation_is_folded_around_the_calls_that_matter(tmp_path):
    data = build([_stdio_conversation(tmp_path / "long.mcptape", 5000, failing={2500})])
    drawn = diagram.steps(data)
    assert len(drawn) < 20
    notes = [s.text for s in drawn if s.style == "summary"]
    assert notes == ["… 2497 more calls answered: tools/call ×2497", "… 2498 more calls answered: tools/call ×2498"]
    assert any(s.text == "error #2500 -32000 boom (2 ms)" for s in drawn)  # the failure is drawn, not folded
    md = render(data, "md")
    assert "## Calls that matter" in md and "| tools/call #2500 add | error -32000 boom |" in md
    assert "1 of 5001 calls matter" not in md and "2 of 5001 calls matter" in md  # the handshake and the failure
    assert data["summary"]["calls"] == 5001 and len(data["calls"]) < 2100  # the report keeps what it shows
    listed = json.loads(render(data, "json"))["calls"]  # and the JSON lists every call, from its spool
    assert len(listed) == 5001 and listed[2500]["outcome"] == "error" and listed[4999]["id"] == 4999


def test_a_finding_about_a_notification_draws_the_notification(tmp_path):
    tape = _stdio_conversation(tmp_path / "log.mcptape", 40)  # long enough that ordinary calls are folded
    items = [*Reader(tape), records.stdio_line(9.0, records.S2C, json.dumps({
        "jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}).encode())]
    data = build([write_tape(tmp_path / "logged.mcptape", items)])
    [logged] = [f for f in data["findings"] if f["rule"] == "declare-logging"]  # no logging capability declared
    [arrow] = [s for s in diagram.steps(data) if s.at == f"{logged['tape']}#{logged['record']}"]
    assert (arrow.kind, arrow.text, arrow.frm, arrow.to) == ("arrow", "notifications/message", "server", "client")


def test_text_from_a_tape_stays_text_in_every_format(tmp_path):
    evil = "x```\n</details><script>alert(1)</script>; C->>S: forged\n# heading | cell"
    data = build([_stdio_conversation(tmp_path / "evil.mcptape", 3, failing={2}, name=evil)])
    mermaid = render(data, "mermaid")
    statement = re.compile(r"^(sequenceDiagram|    participant [CMS] as [^:]+|    [CMS](->>|-->>|--x)[CMS]: .*"
                           r"|    Note over [CMS](,[CMS])?: .*)$")
    assert all(statement.match(line) for line in mermaid.splitlines()), mermaid
    assert "<script>" not in mermaid and "forged" in mermaid and "C->>S: forged" not in mermaid
    page = render(data, "html")
    assert "<script" not in page and "&lt;script&gt;" in page
    md = render(data, "md")
    assert "<script>" not in md.replace("```", "")  # only inside a fence, where it is text
    for line in md.splitlines():
        assert not line.startswith("# heading") and not line.startswith("</details><script>")


def test_bad_input_is_one_line(tmp_path):
    one_line_error(run_mcptape("report", str(tmp_path / "missing.mcptape")), "cannot open")
    (tmp_path / "junk.mcptape").write_bytes(b"not a tape")
    one_line_error(run_mcptape("report", str(tmp_path / "junk.mcptape")), "not an mcptape tape")
    tape = _stdio_conversation(tmp_path / "ok.mcptape", 1)
    one_line_error(run_mcptape("report", tape, "-o", str(tmp_path / "no" / "r.md")), "not a file in an existing directory")


def test_the_docs_examples_run_as_written(real_tapes, tmp_path):
    readme = (Path(__file__).parent.parent / "docs" / "reports.md").read_text()
    section = readme.split("## Reports, exports and bundles", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    shutil.copy(real_tapes["session"], tmp_path / "run.mcptape")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    for line in block.splitlines():
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (line, done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bug.zip", "report.html", "report.json", "report.md",
                                                          "run.har", "run.jsonl", "run.mcptape"]


def test_times_held_as_exact_decimals(tmp_path):
    """A tape imported from JSON may hold its times as exact decimals: the report and the HAR still read them."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow"}}
    tape = write_tape(tmp_path / "decimal.mcptape", [
        records.capture_start(Decimal("1.5"), "t", {}, {}),
        records.http_request(Decimal("2.25"), 0, 0, "POST", "/mcp", [], [], "s1", "2025-11-25", True, {"msg": request}),
        records.http_response(Decimal("2.5"), 0, 200, "OK", [["content-type", "text/event-stream"]], "s1", {}),
        records.sse_event(Decimal("2.75"), 0, sse.Event(data=json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}))),
        records.end(Decimal("3"), 0, records.COMPLETE),
        records.http_request(Decimal("4"), 1, 0, "POST", "/mcp", [], [], "s1", "2025-11-25", True,
                             {"msg": {**request, "id": 2}}),
        records.end(Decimal("4.5"), 1, records.UPSTREAM_RESET),
    ])
    data = build([tape])
    assert [c["duration_ms"] for c in data["calls"]] == [500.0, None] and data["findings"]
    assert all(render(data, fmt) for fmt in ("md", "html", "mermaid", "json"))
    assert [e["time"] for e in har.document(Reader(tape))["log"]["entries"]] == [750.0, 500.0]
