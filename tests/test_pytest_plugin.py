"""The pytest plugin, as a user's suite meets it: `pytester` runs small suites that use the marker and fixture
against real peers (the SDK demo server over HTTP and over stdio, the SDK client)."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from mcptape.tape.file import read

from .conftest import free_port, spawn_demo, stop

DEMO_STDIO = [sys.executable, "-m", "mcptape.demo.server", "--stdio"]


@pytest.fixture
def suite(pytester, monkeypatch):
    """Write a test module (dedented) into a fresh pytester directory; the record mode comes from the test."""
    monkeypatch.delenv("MCPTAPE_RECORD_MODE", raising=False)
    monkeypatch.delenv("MCPTAPE_UPSTREAM", raising=False)

    def write(source: str, name: str = "test_app") -> pytester.path:
        return pytester.makepyfile(**{name: textwrap.dedent(source)})

    return write


def tape_at(pytester, module: str, test: str):
    return pytester.path / "cassettes" / module / f"{test}.mcptape"


CLIENT = """
    import anyio
    import pytest
    from mcp import StdioServerParameters
    from mcptape.demo.client import script

    def run_http(url):
        return anyio.run(script, url, "legacy")

    def run_stdio(argv):
        return anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")
"""


def test_once_records_over_http_then_none_replays_with_no_server(pytester, suite):
    port = free_port()
    server = spawn_demo(port)
    upstream = f"http://127.0.0.1:{port}/mcp"
    suite(CLIENT + f"""
    @pytest.mark.mcptape(upstream={upstream!r})
    def test_add(mcptape):
        lines = run_http(mcptape.url)
        assert 'add {{"result": 5}}' in lines
        assert [c.method for c in mcptape.log.requests("tools/call")] == ["tools/call", "tools/call"]
        assert mcptape.log.call("tools/call", 1).result["structuredContent"] == {{"result": 5}}
        mcptape.assert_clean()
    """)
    try:
        pytester.runpytest("--mcptape-record-mode=once").assert_outcomes(passed=1)
    finally:
        stop(server)
    tape = tape_at(pytester, "test_app", "test_add")
    recorded = read(tape)
    assert any(r["kind"] == "http.request" for r in recorded.records)
    assert not [p for p in tape.parent.iterdir() if p.name != tape.name]  # no partial file left behind
    # no server from here on: the default mode (none) replays
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert read(tape).records == recorded.records  # replaying leaves the tape alone
