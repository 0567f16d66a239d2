"""The official SDK client on 2026-07-28 sends non-ASCII names and mirrored arguments in the =?base64?…?= form:
recorded through `mcptape record`, check compares them decoded and finds nothing."""

from __future__ import annotations

import subprocess
import sys

import anyio
from mcp import Client

from mcptape.check import check
from mcptape.tape.file import read

from ..conftest import free_port, stop, wait_for_port


def test_the_sdk_clients_encoded_names_and_params_are_no_mismatch(record):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tests.peers.unicode_server", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, server)
        rec = record(f"http://127.0.0.1:{port}/mcp")

        async def modern() -> list:
            async with Client(rec.url, mode="2026-07-28") as client:
                await client.list_tools()
                called = await client.call_tool("météo", {"city": "Zürich"})
                prompt = await client.get_prompt("résumé")
                read_back = await client.read_resource("file:///données/日本.txt")
                return [called.content[0].text, prompt.messages[0].content.text, read_back.contents[0].text]

        assert anyio.run(modern) == ["soleil à Zürich", "résumez", "こんにちは"]
        rec.stop()
    finally:
        stop(server)
    requests = [r for r in read(rec.tape).records if r["kind"] == "http.request"]
    sent = [(k.lower(), v) for r in requests for k, v in r["headers"] if k.lower() in ("mcp-name", "mcp-param-city")]
    assert sorted(k for k, _ in sent) == ["mcp-name"] * 3 + ["mcp-param-city"]  # the client sent them …
    assert all(v.startswith("=?base64?") for _, v in sent)  # … encoded, as the spec says
    # only the tool's own name is said of (its characters are SHOULD-constrained), never the headers
    assert [f.rule for f in check([str(rec.tape)])] == ["tool-name-characters"]
