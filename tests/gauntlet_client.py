"""A small real client for the gauntlet tests (official SDK, session-era mode): the demo client's conversation, with
the recovery a careful client adds or leaves out.

    python tests/gauntlet_client.py URL [--reinit] [--timeout S]
    python tests/gauntlet_client.py [--timeout S] -- SERVER_COMMAND...     (spawns its server over stdio)

--reinit: after a dead session (404, or 401 "Session not found") it opens a new session (a new initialize without
the dead id) and sends the refused request again. --timeout: each request times out after S seconds (the SDK
cancels it) and the client stops with exit 1; without it the client waits for ever. --retry S: after a 429 or
503 it waits S seconds and sends the request again.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import AsyncExitStack

import anyio
from mcp import Client, MCPError, StdioServerParameters

DEAD = ("Session not found", "Session terminated")
BUSY = ("Too Many Requests", "Service Unavailable")


async def converse(server, reinit: bool, timeout: float | None, retry: float | None) -> None:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        print(f"progress {progress}/{total}")

    steps = [
        ("tools", lambda c: c.list_tools()),
        ("add", lambda c: c.call_tool("add", {"a": 2, "b": 3})),
        ("countdown", lambda c: c.call_tool("countdown", {"steps": 3}, progress_callback=on_progress)),
        ("resource", lambda c: c.read_resource("demo://hello")),
    ]
    async with AsyncExitStack() as outer:
        async def connect() -> tuple[Client, AsyncExitStack]:
            stack = AsyncExitStack()
            await outer.enter_async_context(stack)
            return await stack.enter_async_context(
                Client(server, mode="legacy", read_timeout_seconds=timeout, log_level="info")), stack

        client, stack = await connect()
        for name, request in steps:
            try:
                await request(client)
            except MCPError as e:
                if retry is not None and e.error.message in BUSY:
                    print(f"{name}: {e.error.message}: again in {retry}s", flush=True)
                    await anyio.sleep(retry)
                elif reinit and any(d in e.error.message for d in DEAD):
                    print(f"{name}: {e.error.message}: new session", flush=True)
                    client, stack = await connect()  # the dead one is left alone: its closing DELETE would reuse it
                else:
                    raise
                await request(client)
            print(f"{name} ok", flush=True)


def main() -> None:
    argv = sys.argv[1:]
    server_argv = argv[argv.index("--") + 1:] if "--" in argv else None
    p = argparse.ArgumentParser()
    p.add_argument("url", nargs="?")
    p.add_argument("--reinit", action="store_true")
    p.add_argument("--timeout", type=float)
    p.add_argument("--retry", type=float, metavar="S")
    a = p.parse_args(argv[:argv.index("--")] if server_argv is not None else argv)
    server = StdioServerParameters(command=server_argv[0], args=server_argv[1:]) if server_argv else a.url
    try:
        anyio.run(converse, server, a.reinit, a.timeout, a.retry)
    except Exception as e:  # reported in one line, and a failing exit: the application saw the error
        while isinstance(e, ExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        raise SystemExit(f"client: {type(e).__name__}: {e}") from None


if __name__ == "__main__":
    main()
