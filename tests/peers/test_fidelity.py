"""What a tape holds is what the server sent (issue 43): an SDK server answering with JSON text as real servers
write it (tests/peers/json_text_server.py: pretty-printed, oddly spelled, strings repeated across answers, one
secret) is recorded over stdio and over Streamable HTTP with redaction on, then replayed to the SDK client. Every
answer comes back character for character; the secret's answer differs in the secret's own span only."""

from __future__ import annotations

import re
import subprocess
import sys

import anyio
from mcp import Client, StdioServerParameters

from mcptape.replay import replaying

from ..conftest import MCPTAPE, free_port, stop, wait_for_port
from .json_text_server import SECRET, TEXTS

SERVER = [sys.executable, "-m", "tests.peers.json_text_server"]
KINDS = ["pretty", "odd", "secret", "pretty", "odd", "secret"]  # each twice: the recorder's cache sees them again


async def texts(server) -> list[str]:
    async with Client(server, mode="legacy") as client:
        return [(await client.call_tool("text", {"kind": kind})).content[0].text for kind in KINDS]


def assert_same_but_the_secret(replayed: list[str], recorded: list[str]) -> None:
    assert recorded == [TEXTS[k] for k in KINDS]  # (the direct run: what the server wrote)
    for kind, got, sent in zip(KINDS, replayed, recorded):
        if kind == "secret":
            assert SECRET not in got
            got = re.sub(r"<redacted:[0-9a-f]{12}>", SECRET, got, count=1)
        assert got == sent, kind


def test_stdio_answers_replay_character_for_character(tmp_path):
    tape = tmp_path / "stdio.mcptape"
    recorded = anyio.run(texts, StdioServerParameters(command=MCPTAPE, args=["record", "-o", str(tape), "--",
                                                                               *SERVER, "--stdio"]))
    replayed = anyio.run(texts, StdioServerParameters(command=MCPTAPE, args=["replay", str(tape), "--stdio"]))
    assert_same_but_the_secret(replayed, recorded)


def test_http_answers_replay_character_for_character(record):
    port = free_port()
    server = subprocess.Popen([*SERVER, str(port)])
    try:
        wait_for_port(port, server)
        rec = record(f"http://127.0.0.1:{port}/mcp")
        recorded = anyio.run(texts, rec.url)
        rec.stop()
    finally:
        stop(server)
    with replaying(str(rec.tape)) as url:
        replayed = anyio.run(texts, url)
    assert_same_but_the_secret(replayed, recorded)
