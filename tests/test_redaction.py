"""Secrets stay out of tapes recorded from real peers, and the redacted tape still replays, diffs and checks.

A real SDK server (tests/secret_server.py) and the real SDK client, through `mcptape record`: canary secrets are
planted in a request header, a query string, a tool argument, a tool result, a resource's contents, a server
notification, a stderr line and a body that is not JSON.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from mcptape.replay import areplaying
from mcptape.tape.file import read

from .conftest import MCPTAPE, free_port, run_mcptape, stop, wait_for_port
from .secret_server import secret

ROOT = Path(__file__).resolve().parent.parent


def client_secrets() -> dict[str, str]:
    """What the client holds: new ones each time, as two developers' clients would."""
    return {place: f"canary-{place}-{secrets.token_hex(8)}" for place in ("header", "query", "argument", "body")}


def server_secrets(seed: str) -> list[str]:
    return [secret(kind, seed) for kind in ("result", "resource", "log", "stderr")]


@pytest.fixture
def secret_server():
    procs = []

    def start(seed: str) -> str:
        port = free_port()
        procs.append(subprocess.Popen([sys.executable, "-m", "tests.secret_server", "--seed", seed, "--port",
                                       str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for_port(port, procs[-1])
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for proc in procs:
        stop(proc)


async def session(url: str, held: dict[str, str], user: str = "ada") -> list[str]:
    """The SDK client's session: a bearer header and a key in the query string, a tool call with a key as its
    argument, a resource read. Returns what it got (texts and log notifications)."""
    logs: list[str] = []

    async def on_log(params) -> None:
        logs.append(f"log {params.data}")

    async with create_mcp_http_client(headers={"Authorization": f"Bearer {held['header']}"}) as http:
        transport = streamable_http_client(f"{url}?api_key={held['query']}", http_client=http)
        async with Client(transport, mode="legacy", logging_callback=on_log, log_level="info") as client:
            called = await client.call_tool("login", {"api_key": held["argument"], "user": user})
            read_ = await client.read_resource("config://env")
    return [called.content[0].text, read_.contents[0].text, *logs]


def post_form(url: str, held: dict[str, str]) -> None:
    """A body that is not JSON (a form a confused client posts to the MCP endpoint)."""
    request = urllib.request.Request(url, data=f"user=ada&password={held['body']}".encode(),
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        urllib.request.urlopen(request).read()
    except urllib.error.HTTPError as e:
        e.read()


def record_session(secret_server, record, seed: str, held: dict[str, str], *flags: str):
    rec = record(secret_server(seed), *flags)
    got = anyio.run(session, rec.url, held)
    post_form(rec.url, held)
    rec.stop()
    return rec.tape, got


def leaves(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for e in group.exceptions for leaf in leaves(e)]
    return [group]


def assert_nowhere(tape: Path, canaries: list[str]) -> None:
    raw = tape.read_bytes()
    exported = run_mcptape("show", str(tape), "--format", "json").stdout
    for canary in canaries:
        assert canary.encode() not in raw, canary
        assert canary not in exported, canary


def test_an_http_recording_holds_no_secret_and_replays_for_any_secret(secret_server, record):
    held = client_secrets()
    tape, direct = record_session(secret_server, record, "one", held)
    # what the client got was real: every server secret passed through the proxy unchanged
    assert secret("result", "one") in direct[0] and secret("resource", "one") in direct[1]
    assert any(secret("log", "one") in line for line in direct[2:])
    assert_nowhere(tape, [*held.values(), *server_secrets("one")])

    recorded = read(tape)
    assert recorded.header["redaction"]["enabled"] and "jwt" in recorded.header["redaction"]["rules"]
    # ids and session ids are as they passed
    posts = [r for r in recorded.records if r["kind"] == "http.request" and isinstance(r.get("msg"), dict)]
    assert all(isinstance(p["msg"]["id"], int) for p in posts if "id" in p["msg"])
    sessions = {r["session"] for r in recorded.records if r.get("session")}
    assert len(sessions) == 1 and "redacted" not in next(iter(sessions))
    form = next(r for r in recorded.records if r["kind"] == "http.request" and "raw" in r)
    assert form["raw"].startswith(b"user=ada&password=<redacted:")
    assert run_mcptape("check", str(tape), "--require-redacted").returncode == 0

    async def replayed() -> tuple[list[str], list[str], str]:
        async with areplaying(str(tape)) as url:
            same = await session(url, held)  # the client that recorded it, with its real secrets
            other = await session(url, client_secrets())  # a maintainer's client with its own
            missed = "answered"
            try:
                await session(url, client_secrets(), user="bob")  # a real difference still misses
            except* MCPError as group:
                missed = " ".join(e.error.message for e in leaves(group))
        return same, other, missed

    same, other, missed = anyio.run(replayed)
    assert same == other
    assert same[0].startswith("welcome ada; your token is <redacted:") and "OPENAI_API_KEY=<redacted:" in same[1]
    assert "no recorded answer" in missed and "['user']" in missed and "api_key" not in missed


def test_two_recordings_with_different_secrets_diff_equal(secret_server, record):
    one, _ = record_session(secret_server, record, "one", client_secrets())
    two, _ = record_session(secret_server, record, "two", client_secrets())
    diffed = run_mcptape("diff", str(one), str(two))
    assert diffed.returncode == 0, diffed.stdout + diffed.stderr
    # what is not a secret still differs: another user is a difference
    rec = record(secret_server("three"))
    anyio.run(session, rec.url, client_secrets(), "bob")
    rec.stop()
    diffed = run_mcptape("diff", str(one), str(rec.tape))
    assert diffed.returncode == 1 and "/params/arguments/user" in diffed.stdout


def test_a_tape_recorded_without_redaction_is_refused_then_redacted(secret_server, record, tmp_path):
    held = client_secrets()
    tape, _ = record_session(secret_server, record, "one", held, "--no-redact")
    assert held["argument"].encode() in tape.read_bytes()  # --no-redact means it
    checked = run_mcptape("check", str(tape), "--require-redacted")
    assert checked.returncode == 1
    assert "not redacted" in checked.stdout and "/msg/params/arguments/api_key" in checked.stdout
    assert "/headers/" in checked.stdout and "(sensitive-header)" in checked.stdout

    out = tmp_path / "shared.mcptape"
    done = run_mcptape("redact", str(tape), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert_nowhere(out, [*held.values(), *server_secrets("one")])
    assert run_mcptape("check", str(out), "--require-redacted").returncode == 0
    assert run_mcptape("redact", str(tape), "-o", str(out)).returncode == 2  # exists: --force to replace
    assert run_mcptape("redact", str(out), "-o", str(out), "--force").returncode == 2  # not over itself


def test_a_stdio_recording_holds_no_secret(tmp_path):
    tape = tmp_path / "stdio.mcptape"
    held = client_secrets()
    server = [sys.executable, "-m", "tests.secret_server", "--seed", "one", "--stdio"]
    wrapped = StdioServerParameters(command=MCPTAPE, args=["record", "-o", str(tape), "--", *server], cwd=str(ROOT))

    async def run() -> str:
        async with Client(wrapped, mode="legacy") as client:
            called = await client.call_tool("login", {"api_key": held["argument"], "user": "ada"})
            return called.content[0].text

    assert secret("result", "one") in anyio.run(run)
    recorded = read(tape)
    stderr = [r["text"] for r in recorded.records if r["kind"] == "stdio.stderr"]
    assert len(stderr) == 2 and all("with key <redacted:" in line for line in stderr)
    assert_nowhere(tape, [held["argument"], secret("result", "one"), secret("stderr", "one")])
    start = next(r for r in recorded.records if r["kind"] == "capture.start")
    assert start["redaction"]["enabled"] and recorded.header["redaction"]["body"]
    assert json.loads(run_mcptape("check", str(tape), "--require-redacted", "--format", "json").stdout)[
        "unredacted"] == []
