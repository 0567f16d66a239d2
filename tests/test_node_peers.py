"""The TypeScript peers harness works: server-everything on each transport answers the Inspector CLI, on 127.0.0.1
only."""

from __future__ import annotations

import json
import subprocess

import pytest

from .node_peers import inspector, listening_addresses, node_peers, ts_server, ts_server_argv  # noqa: F401


def tool_names(result: dict) -> set[str]:
    return {tool["name"] for tool in result["tools"]}


@pytest.mark.parametrize("transport", ["streamableHttp", "sse"])
def test_inspector_lists_tools_over_http(ts_server, transport):
    url = ts_server(transport)
    assert url.endswith({"streamableHttp": "/mcp", "sse": "/sse"}[transport])
    flag = {"streamableHttp": "http", "sse": "sse"}[transport]
    assert {"echo", "get-sum"} <= tool_names(inspector([url, "--transport", flag], "tools/list"))


def test_inspector_calls_a_tool_over_streamable_http(ts_server):
    url = ts_server("streamableHttp")
    result = inspector([url], "tools/call", "--tool-name", "echo", "--tool-arg", "message=hi")
    assert result["content"] == [{"type": "text", "text": "Echo: hi"}]
    assert "Session initialized with ID" in ts_server.log(url)


def test_inspector_lists_tools_over_stdio():
    argv, _env = ts_server_argv("stdio")
    assert tool_names(inspector(argv, "tools/list")) >= {"echo", "get-sum"}


def test_stdio_argv_runs_the_server_directly():
    """The (argv, env) pair starts a working stdio server without the Inspector: initialize answers."""
    argv, env = ts_server_argv("stdio")
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "0"}}}
    with subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        proc.stdin.close()
        proc.wait(10)
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "mcp-servers/everything"


@pytest.mark.parametrize("transport", ["streamableHttp", "sse"])
def test_server_listens_on_loopback_only(ts_server, transport):
    url = ts_server(transport)
    assert listening_addresses(ts_server.port(url)) == {"127.0.0.1"}


def test_unsupported_method_fails_loudly(ts_server):
    url = ts_server("streamableHttp")
    with pytest.raises(AssertionError, match="Unsupported method: ping"):
        inspector([url], "ping")


def test_install_is_cached():
    peers = node_peers()
    assert peers is node_peers()
    assert peers.root.is_dir() and not peers.root.name.startswith(".")
    assert json.loads((peers.root / "mcptape-pins.json").read_text()) == peers.versions
    out = subprocess.run([str(peers.node), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("v22.")
