"""The official Python SDK client, used as an application would: the demo conversation (list tools, add, a countdown
with progress, read a resource), then exit 0; an error ends it with exit 1.

    python sdk.py URL [--mode legacy|auto] [--timeout S]
    python sdk.py [--timeout S] -- SERVER_COMMAND...        (stdio)
"""

from __future__ import annotations

import argparse
import sys

import anyio
from mcp import Client, StdioServerParameters


async def converse(server, mode: str, timeout: float | None) -> None:
    async with Client(server, mode=mode, read_timeout_seconds=timeout) as client:
        await client.list_tools()
        await client.call_tool("add", {"a": 2, "b": 3})
        await client.call_tool("countdown", {"steps": 3}, progress_callback=lambda *a: anyio.sleep(0))
        await client.read_resource("demo://hello")
        print("done", flush=True)


def main() -> None:
    argv = sys.argv[1:]
    server_argv = argv[argv.index("--") + 1:] if "--" in argv else None
    p = argparse.ArgumentParser()
    p.add_argument("url", nargs="?")
    p.add_argument("--mode", default="legacy")
    p.add_argument("--timeout", type=float)
    a = p.parse_args(argv[:argv.index("--")] if server_argv is not None else argv)
    server = StdioServerParameters(command=server_argv[0], args=server_argv[1:]) if server_argv else a.url
    try:
        anyio.run(converse, server, a.mode, a.timeout)
    except Exception as e:
        while isinstance(e, ExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        raise SystemExit(f"sdk client: {type(e).__name__}: {e}") from None


if __name__ == "__main__":
    main()
