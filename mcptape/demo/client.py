"""Demo MCP client (official SDK): runs a fixed script against a server and prints what it got, one line each.

    python -m mcptape.demo.client http://127.0.0.1:8000/mcp [--mode legacy|auto|2026-07-28]
"""

from __future__ import annotations

import argparse
import json

import anyio
from mcp import Client, MCPError, StdioServerParameters


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

        async def step(name: str, request, show) -> None:
            # a refused call is reported and the script goes on, as an application would
            try:
                lines.append(f"{name} {show(await request)}")
            except MCPError as e:
                lines.append(f"{name} error: {e.error.message}")

        await step("tools", client.list_tools(), lambda r: ",".join(sorted(t.name for t in r.tools)))
        await step("add", client.call_tool("add", {"a": 2, "b": 3}), lambda r: json.dumps(r.structured_content))
        await step("countdown", client.call_tool("countdown", {"steps": 3}, progress_callback=on_progress),
                   lambda r: r.content[0].text)
        await step("resource", client.read_resource("demo://hello"), lambda r: r.contents[0].text)
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url")
    p.add_argument("--mode", default="legacy", choices=["legacy", "auto", "2026-07-28"])
    a = p.parse_args()
    try:
        lines = anyio.run(script, a.url, a.mode)
    except Exception as e:  # say what the client met, in one line, as a client would report it
        while isinstance(e, ExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        raise SystemExit(f"demo client: {type(e).__name__}: {e}") from None
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
