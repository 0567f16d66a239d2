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
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")

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


@pytest.fixture
def upstream():
    """The SDK demo server over HTTP, started and stopped by the test (so a replay provably runs without it)."""
    port = free_port()
    server = spawn_demo(port)
    yield f"http://127.0.0.1:{port}/mcp", server
    stop(server)


def test_once_records_a_stdio_server_then_replays_over_stdio_and_http(pytester, suite):
    suite(CLIENT + f"""
    @pytest.mark.mcptape(command={DEMO_STDIO!r})
    def test_stdio(mcptape):
        lines = run_stdio(mcptape.command)
        assert "countdown counted down from 3" in lines
        assert mcptape.log.call("tools/call", 2).result["content"][0]["text"] == "counted down from 3"
        if not mcptape.recording:  # replay works across transports: the stdio tape over HTTP too
            assert run_http(mcptape.url) == lines
        mcptape.assert_clean()
    """)
    pytester.runpytest("--mcptape-record-mode=once").assert_outcomes(passed=1)
    tape = read(tape_at(pytester, "test_app", "test_stdio"))
    assert any(r["kind"] == "stdio.line" for r in tape.records)
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_missing_tape_in_none_mode_fails_with_the_command_that_records_it(pytester, suite):
    suite(CLIENT + """
    @pytest.mark.mcptape
    def test_add(mcptape):
        run_http(mcptape.url)

    class TestGroup:
        @pytest.mark.mcptape(command=["python", "server.py"])
        @pytest.mark.parametrize("who", ["a/b"])
        def test_param(self, mcptape, who):
            pass
    """)
    result = pytester.runpytest()
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([
        "*mcptape: no tape at cassettes/test_app/test_add.mcptape (record mode none replays only). Record it with:",
        "*  pytest 'test_app.py::test_add' --mcptape-record-mode=once --mcptape-upstream URL",
        # pytest-recording's names: Class.test[param], '/' made '-'; the marker names the server, so no URL
        "*mcptape: no tape at cassettes/test_app/TestGroup.test_param[[]a-b[]].mcptape*",
        "*  pytest 'test_app.py::TestGroup::test_param[[]a/b[]]' --mcptape-record-mode=once",
    ])
    assert "Traceback" not in result.stdout.str()


def test_a_wrong_edit_in_a_marker_stops_the_run_at_collection(pytester, suite):
    suite("""
    import pytest

    @pytest.mark.mcptape(edits=["expire-sesion at=tools/call#2"])
    def test_x(mcptape):
        pass
    """)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*mcptape: test_app.py::test_x: edit 'expire-sesion at=tools/call#2': unknown "
                                 "action 'expire-sesion' (choose from expire-session,*"])


SESSION_CLIENT = CLIENT + """
    def expiry_checks(mcptape, lines):
        # the SDK client (session era) meets the 404 on its second tools/call and never opens a new session
        assert "countdown error: Session not found" in lines, lines
        log = mcptape.log
        assert log.call("tools/call", 2).status == 404
        assert not log.reinitialized and log.initializes == 1
        assert [c.method for c in log.dead_session_requests] == ["tools/call", "resources/read"]
        assert not log.unanswered
        with pytest.raises(AssertionError, match="no-reinitialize"):
            mcptape.assert_clean()
"""


def test_an_expire_session_edit_in_the_marker_shows_the_client_never_reinitializes(pytester, suite, upstream):
    url, server = upstream
    suite(SESSION_CLIENT + f"""
    @pytest.mark.mcptape(upstream={url!r}, edits=["expire-session at=tools/call#2"])
    def test_expiry(mcptape):
        expiry_checks(mcptape, run_http(mcptape.url))
    """)
    pytester.runpytest("--mcptape-record-mode=once").assert_outcomes(passed=1)  # live: the recorder's edit
    stop(server)
    pytester.runpytest().assert_outcomes(passed=1)  # replayed: the replay's edit, the same fault


def test_async_tests_use_the_fixture_with_anyio_and_pytest_asyncio(pytester, suite, upstream):
    url, _ = upstream
    suite(CLIENT + f"""
    @pytest.mark.anyio
    @pytest.mark.mcptape("shared", upstream={url!r})
    async def test_anyio(mcptape):
        assert (await script(mcptape.url, "legacy"))[-1] == "resource hello from a resource"

    @pytest.mark.asyncio
    @pytest.mark.mcptape("shared", upstream={url!r})
    async def test_asyncio(mcptape):
        assert (await script(mcptape.url, "legacy"))[-1] == "resource hello from a resource"
    """)
    pytester.runpytest("--mcptape-record-mode=once").assert_outcomes(passed=2)
    pytester.runpytest().assert_outcomes(passed=2)
