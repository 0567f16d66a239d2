"""Popular MCP servers nobody here wrote, recorded with the default settings (redaction on) and replayed to the SDK
client: every answer comes back as the server sent it (issue 43: 6 of 22 replays of such servers differed when
redaction rewrote the JSON text of their answers). Python servers from PyPI (tests/py_peers.py), TypeScript ones
from npm (tests/node_peers.py), all over stdio, each with calls whose answers are JSON text, pretty-printed by most.
(mcp-server-sqlite 2025.4.25, the latest, is not among them: it needs the mcp 1.x API, `Server.list_resources`.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcptape.tape.file import read

from ..conftest import MCPTAPE
from ..node_peers import node_peers
from ..py_peers import py_peers

HERE = Path(__file__).parent
PRETTY = ("time", "fastmcp-proxy", "memory", "sequential-thinking")  # their tools answer with indented JSON text
TIME_CALLS = [("get_current_time", {"timezone": "UTC"}),
              ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})]


def python_server(module: str, *args: str) -> list[str]:
    """What the package's console script runs (not every package can run as `python -m`)."""
    return [str(py_peers()), "-c", f"import sys, {module}; sys.exit({module}.main())", *args]


def node_server(package: str, *args: str) -> tuple[list[str], dict]:
    peers = node_peers()
    return [str(peers.node), str(peers.entry(package)), *args], peers.env()


def git_repo(folder: Path) -> Path:
    repo = folder / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.org", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@example.org", "HOME": str(folder), "PATH": "/usr/bin:/bin"}
    for argv in (["git", "init", "-q"], ["git", "commit", "-q", "--allow-empty", "-m", "first"]):
        subprocess.run(argv, cwd=repo, env=env, check=True)
    (repo / "notes.txt").write_text("changed\n")
    return repo


def servers(tmp: Path) -> dict:
    """name -> (argv, env or None, calls)."""
    repo = git_repo(tmp)
    files = tmp / "files"
    files.mkdir()
    (files / "a.json").write_text(json.dumps({"name": "a", "items": [1.0, 2]}, indent=2))
    memory = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote notes", "wrote notes"]}]}
    thought = {"thought": "first", "thoughtNumber": 1, "totalThoughts": 2, "nextThoughtNeeded": True}
    return {
        "time": (python_server("mcp_server_time", "--local-timezone", "UTC"), None, TIME_CALLS),
        "git": (python_server("mcp_server_git", "--repository", str(repo)), None,
                [("git_status", {"repo_path": str(repo)}), ("git_log", {"repo_path": str(repo)})]),
        "fastmcp-proxy": ([str(py_peers()), str(HERE / "fastmcp_proxy.py")], None, TIME_CALLS),
        "memory": (*node_server("@modelcontextprotocol/server-memory"),
                   [("create_entities", memory), ("read_graph", {})]),
        "filesystem": (*node_server("@modelcontextprotocol/server-filesystem", str(files)),
                       [("list_directory", {"path": str(files)}), ("read_text_file", {"path": str(files / "a.json")})]),
        "sequential-thinking": (*node_server("@modelcontextprotocol/server-sequential-thinking"),
                                [("sequentialthinking", thought), ("sequentialthinking", thought)]),
    }


async def session(server: StdioServerParameters, calls: list) -> list[str]:
    """Each answer as the client got it, written out whole (the text of each content item as it arrived)."""
    async with Client(server, mode="legacy") as client:
        seen = [json.dumps((await client.list_tools()).model_dump(mode="json"))]
        for name, arguments in calls:
            seen.append(json.dumps((await client.call_tool(name, arguments)).model_dump(mode="json")))
    return seen


@pytest.mark.parametrize("name", ["time", "git", "fastmcp-proxy", "memory", "filesystem",
                                  "sequential-thinking"])
def test_a_real_server_records_and_replays_identically(name, tmp_path):
    argv, env, calls = servers(tmp_path)[name]
    tape = tmp_path / f"{name}.mcptape"
    recorded = anyio.run(session, StdioServerParameters(command=MCPTAPE, args=["record", "-o", str(tape), "--",
                                                                                 *argv], env=env), calls)
    assert read(tape).records[0]["redaction"]["enabled"]  # the default settings: redaction on
    replayed = anyio.run(session, StdioServerParameters(command=MCPTAPE, args=["replay", str(tape), "--stdio"]),
                         calls)
    assert replayed == recorded
    if name in PRETTY:  # the answers that differed: pretty-printed JSON text (here written out, "\n" escaped)
        assert any('\\n  \\"' in text for text in recorded)
