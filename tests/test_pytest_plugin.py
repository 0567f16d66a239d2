"""The pytest plugin, as a user's suite meets it: `pytester` runs small suites that use the marker and fixture
against real peers (the SDK demo server over HTTP and over stdio, the SDK client)."""

from __future__ import annotations

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
    @pytest.mark.mcptape(command={DEMO_STDIO!r}, edits=["error message=boom at=tools/call#1"])
    def test_stdio(mcptape):
        lines = run_stdio(mcptape.command)
        assert "add error: boom" in lines and "countdown counted down from 3" in lines  # the edit, live or replayed
        assert mcptape.log.call("tools/call", 1).error["message"] == "boom"
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
        findings = mcptape.findings("error")
        assert "no-reinitialize" in {f.rule for f in findings if f.blames == "client"}
        assert all(f.blames != "server" for f in findings if f.injected)  # the injected 404 is nobody's fault
        with pytest.raises(AssertionError, match="no-reinitialize") as failed:
            mcptape.assert_clean()
        assert "blames the client" in str(failed.value) and "spec:" in str(failed.value)
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


def test_async_tests_use_the_fixture_with_anyio_and_pytest_asyncio(pytester, suite, demo_server):
    url = demo_server()  # shared: these tests never stop it
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


def test_two_xdist_workers_on_one_tape_record_it_once_and_the_other_replays_it(pytester, suite, demo_server):
    url = demo_server()  # shared: these tests never stop it
    suite(CLIENT + f"""
    import os

    @pytest.mark.parametrize("n", [1, 2])
    @pytest.mark.mcptape("shared", upstream={url!r})
    def test_both(mcptape, n):
        assert run_http(mcptape.url)[-1] == "resource hello from a resource"
        with open(f"ran-{{n}}", "w") as f:
            f.write(("recorded" if mcptape.recording else "replayed") + " " + os.environ["PYTEST_XDIST_WORKER"])
    """)
    result = pytester.runpytest_subprocess("-n", "2", "--mcptape-record-mode=once")
    result.assert_outcomes(passed=2)
    ran = sorted((pytester.path / f"ran-{n}").read_text().split() for n in (1, 2))
    assert sorted(what for what, _ in ran) == ["recorded", "replayed"]
    assert ran[0][1] != ran[1][1]  # one test on each worker, at the same time
    tape = read(pytester.path / "cassettes" / "test_app" / "shared.mcptape")
    assert tape.truncated is None
    assert [r["kind"] for r in tape.records].count("capture.start") == 1  # one recording, never two interleaved
    assert [p.name for p in (pytester.path / "cassettes" / "test_app").iterdir()] == ["shared.mcptape"]


NEW_EPISODES = CLIENT + """
    from mcp import Client

    async def adds(url, pairs):
        async with Client(url, mode="legacy") as client:
            return [(await client.call_tool("add", {"a": a, "b": b})).structured_content["result"] for a, b in pairs]
"""


def test_new_episodes_records_the_whole_test_again_when_it_gained_a_call(pytester, suite, demo_server, monkeypatch):
    url = demo_server()  # shared: these tests never stop it
    source = NEW_EPISODES + """
    @pytest.mark.mcptape(ignore=IGNORE, strict=STRICT)
    def test_adds(mcptape):
        assert anyio.run(adds, mcptape.url, PAIRS) == SUMS
    """

    def version(pairs, sums=None, ignore=(), strict=False):
        sums = sums or [a + b for a, b in pairs]
        return (source.replace("PAIRS", repr(pairs)).replace("SUMS", repr(sums)).replace("IGNORE", repr(list(ignore)))
                .replace("STRICT", repr(strict)))

    suite(version([(1, 2)]))
    pytester.runpytest("--mcptape-record-mode=once", f"--mcptape-upstream={url}").assert_outcomes(passed=1)
    tape = tape_at(pytester, "test_app", "test_adds")
    first = tape.read_bytes()

    suite(version([(1, 2), (10, 20)]))  # the test gained a call the tape has no answer for
    missed = pytester.runpytest()
    missed.assert_outcomes(failed=1, errors=1)
    missed.stdout.fnmatch_lines(["*mcptape: 1 request(s) found no answer in cassettes/test_app/test_adds.mcptape:",
                                 "*tools/call #* add: no recorded answer for tools/call (closest: record *"])
    monkeypatch.setenv("MCPTAPE_UPSTREAM", url)
    pytester.runpytest("--mcptape-record-mode=new_episodes").assert_outcomes(passed=1)  # reported once
    assert (tape.parent / "test_adds.mcptape.old").read_bytes() == first  # the old tape kept beside
    calls = [r["msg"]["params"]["arguments"] for r in read(tape).records
             if r["kind"] == "http.request" and r.get("msg", {}).get("method") == "tools/call"]
    assert calls == [{"a": 1, "b": 2}, {"a": 10, "b": 20}]
    pytester.runpytest().assert_outcomes(passed=1)  # and the new tape replays
    # ignore=: what matching does not compare; the recorded answers come back
    suite(version([(1, 5), (10, 50)], sums=[3, 30], ignore=["/params/arguments/b"]))
    pytester.runpytest().assert_outcomes(passed=1)
    # strict=True: a recorded request the client never asked for fails the test
    suite(version([(1, 2)], strict=True))
    strict = pytester.runpytest()
    strict.assert_outcomes(passed=1, errors=1)
    strict.stdout.fnmatch_lines(["*mcptape: strict: 1 recorded request(s) of cassettes/test_app/test_adds.mcptape "
                                 "were never asked for:", "*tools/call #* add*"])


def test_record_mode_precedence_and_unused_tapes(pytester, suite, demo_server, monkeypatch):
    url = demo_server()  # shared: these tests never stop it
    suite(CLIENT + f"""
    @pytest.mark.mcptape(upstream={url!r}, mode="all")
    def test_add(mcptape):
        run_http(mcptape.url)
        with open("mode", "w") as f:
            f.write(mcptape.mode + (" recording" if mcptape.recording else " replaying"))
    """)
    pytester.runpytest().assert_outcomes(passed=1)  # the marker's mode when nothing else says
    assert (pytester.path / "mode").read_text() == "all recording"
    monkeypatch.setenv("MCPTAPE_RECORD_MODE", "none")  # the environment wins over the marker
    pytester.runpytest().assert_outcomes(passed=1)
    assert (pytester.path / "mode").read_text() == "none replaying"
    pytester.runpytest("--mcptape-record-mode=rewrite").assert_outcomes(passed=1)  # the command line over both
    assert (pytester.path / "mode").read_text() == "rewrite recording"
    assert not (tape_at(pytester, "test_app", "test_add").parent / "test_add.mcptape.old").exists()

    stale = tape_at(pytester, "test_app", "test_gone")
    stale.write_bytes(tape_at(pytester, "test_app", "test_add").read_bytes())
    result = pytester.runpytest("--mcptape-unused")
    result.stdout.fnmatch_lines(["*mcptape: unused tapes*", "cassettes/test_app/test_gone.mcptape",
                                 "1 tape(s) in the cassette folders of 1 module(s) that no test of this run used"])
    monkeypatch.setenv("MCPTAPE_RECORD_MODE", "sometimes")
    bad = pytester.runpytest()
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*MCPTAPE_RECORD_MODE='sometimes': choose from none, once, new_episodes, all, rewrite"])


def test_a_test_that_talks_to_two_servers_has_a_tape_for_each(pytester, suite, upstream):
    url, server = upstream
    suite(CLIENT + f"""
    @pytest.mark.mcptape("web", upstream={url!r})
    @pytest.mark.mcptape("local", command={DEMO_STDIO!r})
    def test_two(mcptape):
        assert run_http(mcptape["web"].url) == run_stdio(mcptape["local.mcptape"].command)
        assert sorted(t.path.rsplit("/", 1)[1] for t in mcptape.tapes) == ["local.mcptape", "web.mcptape"]
        with pytest.raises(KeyError, match="no tape 'maps'"):
            mcptape["maps"]

    @pytest.mark.mcptape("web")
    @pytest.mark.mcptape
    def test_unnamed(mcptape):
        pass
    """)
    result = pytester.runpytest("--mcptape-record-mode=once", "-k", "test_two")
    result.assert_outcomes(passed=1)
    stop(server)
    folder = pytester.path / "cassettes" / "test_app"
    assert sorted(p.name for p in folder.iterdir()) == ["local.mcptape", "web.mcptape"]
    pytester.runpytest("-k", "test_two").assert_outcomes(passed=1)
    unnamed = pytester.runpytest("-k", "test_unnamed")
    assert unnamed.ret == pytest.ExitCode.USAGE_ERROR
    unnamed.stderr.fnmatch_lines(["*test_unnamed: a test with several tapes must name each one (tape=...)"])


def test_loading_the_plugin_imports_nothing_of_mcptape_but_itself(tmp_path):
    import subprocess

    code = ("import sys, pytest; import mcptape.testing.plugin; "
            "print(sorted(m for m in sys.modules if m.startswith(('mcptape', 'mitmproxy', 'msgpack', 'click'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['mcptape', 'mcptape.testing', 'mcptape.testing.modes', 'mcptape.testing.plugin']"
    # and a suite that does not use it loads it (the entry point) and passes
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0 and "1 passed" in run.stdout
    listed = subprocess.run([sys.executable, "-m", "pytest", "--trace-config", "--co", "-q", str(tmp_path)],
                            capture_output=True, text=True, cwd=tmp_path).stdout
    assert "mcptape.testing.plugin" in listed


def test_the_library_api_records_and_replays_with_top_level_names(tmp_path):
    import anyio
    from mcp import StdioServerParameters

    import mcptape
    from mcptape.demo.client import script

    tape = tmp_path / "lib.mcptape"
    with mcptape.recording(tape, command=DEMO_STDIO) as argv:
        recorded = anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")
    with mcptape.replaying(str(tape)) as url:
        assert anyio.run(script, url, "legacy") == recorded

    async def in_the_loop() -> list[str]:
        async with mcptape.areplaying(str(tape)) as url:
            return await script(url, "legacy")

    assert anyio.run(in_the_loop) == recorded
    with pytest.raises(mcptape.capture.recording.RecordingError, match="already exists"):
        with mcptape.recording(tape, command=DEMO_STDIO):
            pass
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        mcptape.nothing
