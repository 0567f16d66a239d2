"""`mcptape diff` on tapes of real traffic."""

from __future__ import annotations

import json
import sys

import anyio

from mcptape.demo.client import script

from .conftest import run_mcptape, wait_until
from .test_record_stdio import DEMO, RawClient, cancelled, wrapped


def session(tape, calls: list[dict], cancel_last: bool = False) -> None:
    client = RawClient(wrapped(tape, *DEMO))
    client.handshake()
    for n, params in enumerate(calls, start=2):
        client.send({"jsonrpc": "2.0", "id": n * 10, "method": "tools/call", "params": params})
        while "id" not in client.receive():
            pass
    if cancel_last:
        client.cancel_in_flight(999)
        # relayed and recorded while the client is still there
        wait_until(lambda: cancelled(tape, 999), what="the cancellation in the tape")
    client.close()


def diff(a, b, *extra) -> tuple[int, dict]:
    result = run_mcptape("diff", str(a), str(b), "--format", "json", *extra)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


ADD = {"name": "add", "arguments": {"a": 1, "b": 1}}


def test_two_runs_of_the_same_session_do_not_differ(demo_server, record):
    upstream = demo_server()
    tapes = []
    for _ in range(2):
        rec = record(upstream)
        anyio.run(script, rec.url, "legacy")
        rec.stop()
        tapes.append(rec.tape)
    code, report = diff(*tapes)
    assert code == 0 and report["differences"] == [], report
    text = run_mcptape("diff", *map(str, tapes))
    assert text.returncode == 0 and text.stdout.strip() == "no differences"


def test_changed_results_extra_calls_and_new_findings(tmp_path):
    a, b = tmp_path / "a.mcptape", tmp_path / "b.mcptape"
    session(a, [ADD])
    session(b, [{"name": "add", "arguments": {"a": 1, "b": 2}}, ADD], cancel_last=True)
    code, report = diff(a, b)
    assert code == 1
    kinds = {(d["kind"], d["path"]) for d in report["differences"]}
    assert ("request-changed", "/params/arguments/b") in kinds
    assert ("result-changed", "/result/structuredContent/result") in kinds
    assert any(k == "only-in-b" for k, _ in kinds)  # the second add and the cancelled countdown
    assert ("finding-new-in-b", "cancelled-without-response") in kinds
    changed = next(d for d in report["differences"] if d["path"] == "/result/structuredContent/result")
    assert (changed["a"], changed["b"]) == (2, 3) and changed["call"] == "session 1 (stdio#1) tools/call (1st) add"
    assert report["summary"]["differences"] == len(report["differences"])


def test_ignore_pointers_and_bad_input(tmp_path):
    a, b = tmp_path / "a.mcptape", tmp_path / "b.mcptape"
    session(a, [ADD])
    session(b, [{"name": "add", "arguments": {"a": 2, "b": 0}}])
    assert diff(a, b)[0] == 1
    ignored = ("--ignore", "/params/arguments", "--ignore", "/result/structuredContent", "--ignore", "/result/content")
    code, report = diff(a, b, *ignored)
    assert code == 0, report
    bad = run_mcptape("diff", str(a), str(b), "--ignore", "result")
    assert bad.returncode == 2 and "JSON pointer" in bad.stderr
    (tmp_path / "junk").write_text("x")
    assert run_mcptape("diff", str(a), str(tmp_path / "junk")).returncode == 2


def test_answered_in_a_only(tmp_path):
    from .test_check import SILENT

    a, b = tmp_path / "a.mcptape", tmp_path / "b.mcptape"
    session(a, [ADD])
    client = RawClient(wrapped(b, sys.executable, "-c", SILENT))  # answers initialize, then nothing
    client.handshake()
    client.send({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": ADD})
    client.close()
    code, report = diff(a, b)
    assert code == 1
    kinds = [d["kind"] for d in report["differences"]]
    assert "answered-in-a-only" in kinds and "finding-new-in-b" in kinds  # unanswered-request
