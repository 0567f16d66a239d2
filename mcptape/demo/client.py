"""Demo MCP client (official SDK): runs a fixed script against a server and prints what it got, one line each.

    python -m mcptape.demo.client http://127.0.0.1:8000/mcp [--mode legacy|auto|2026-07-28]
"""

from __future__ import annotations

import argparse
import json

import anyio
from mcp import Client, StdioServerParameters


async def script(server: str | StdioServerParameters, mode: str = "legacy") -> list[str]:
    """The lines the client saw; the tests compare them between a direct and a recorded run.
    `server` is a URL, or the command of a stdio server."""
    lines: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        lines.append(f"progress {progress}/{total} {message}")

    async def on_log(params) -> None:
        lines.append(f"log {params.level} {params.data}")

    async with Client(server, mode=mode, logging_callback=on_log, log_level="info") as client:
        lines.append(f"protocol {client.protocol_version}")
        tools = await client.list_tools()
        lines.append("tools " + ",".join(sorted(t.name for t in tools.tools)))
        result = await client.call_tool("add", {"a": 2, "b": 3})
        lines.append(f"add {json.dumps(result.structured_content)}")
        result = await client.call_tool("countdown", {"steps": 3}, progress_callback=on_progress)
        lines.append(f"countdown {result.content[0].text}")
        resource = await client.read_resource("demo://hello")
        lines.append(f"resource {resource.contents[0].text}")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url")
    p.add_argument("--mode", default="legacy", choices=["legacy", "auto", "2026-07-28"])
    a = p.parse_args()
    for line in anyio.run(script, a.url, a.mode):
        print(line)


if __name__ == "__main__":
    main()
