"""A small real client for the gauntlet tests (official SDK, session-era mode): the demo client's conversation, with
the recovery a careful client adds or leaves out.

    python tests/gauntlet_client.py URL [--reinit] [--timeout S]
    python tests/gauntlet_client.py [--timeout S] -- SERVER_COMMAND...     (spawns its server over stdio)

--reinit: after a dead session (404, or 401 "Session not found") it opens a new session (a new initialize without
the dead id) and sends the refused request again. --timeout: each request times out after S seconds (the SDK
cancels it) and the client stops with exit 1; without it the client waits for ever. --retry S: after a 429 or
503 it waits S seconds and sends the request again. --mode: the SDK's connect mode (legacy, 2026-07-28).

What real clients do that the gauntlet must judge fairly (each over HTTP):
--strip-header NAME   never sends that header (codex sends no MCP-Protocol-Version: a finding of its clean run too)
--stamp               a per-run value in each tools/call's params._meta and a per-run `threadId` argument to `add`
                      (as codex stamps x-codex-turn-metadata and threadId)
--late-get S          S seconds after notifications/initialized is accepted, opens a GET stream on that session
                      whatever happened meanwhile (as rmcp's standalone GET races the first answer)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from contextlib import AsyncExitStack

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

DEAD = ("Session not found", "Session terminated")
LATER: set[asyncio.Task] = set()  # --late-get's streams: the client waits for them before it ends
BUSY = ("Too Many Requests", "Service Unavailable")


def http_client(strip: list[str], late_get: float | None) -> httpx2.AsyncClient:
    """The SDK's HTTP client, with the habits of real clients the options ask for."""
    client = create_mcp_http_client()

    async def strip_headers(request: httpx2.Request) -> None:
        for name in strip:
            request.headers.pop(name, None)

    async def get_stream(url, session: str) -> None:
        await anyio.sleep(late_get)
        async with client.stream("GET", url, headers={"mcp-session-id": session, "accept": "text/event-stream"}) as r:
            print(f"late GET: {r.status_code}", flush=True)

    async def after_initialized(response: httpx2.Response) -> None:
        request = response.request
        if late_get is not None and b"notifications/initialized" in request.content and response.status_code == 202:
            task = asyncio.get_running_loop().create_task(get_stream(request.url, request.headers["mcp-session-id"]))
            LATER.add(task)

    client.event_hooks = {"request": [strip_headers], "response": [after_initialized]}
    return client


async def converse(server, reinit: bool, timeout: float | None, retry: float | None, mode: str = "legacy",
                   strip: list[str] = (), stamp: bool = False, late_get: float | None = None) -> None:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        print(f"progress {progress}/{total}")

    run = uuid.uuid4().hex  # a value of this run only
    meta = {"com.example/turn": run} if stamp else None
    steps = [
        ("tools", lambda c: c.list_tools()),
        ("add", lambda c: c.call_tool("add", {"a": 2, "b": 3, **({"threadId": run} if stamp else {})}, meta=meta)),
        ("countdown", lambda c: c.call_tool("countdown", {"steps": 3}, progress_callback=on_progress, meta=meta)),
        ("resource", lambda c: c.read_resource("demo://hello")),
    ]
    custom = isinstance(server, str) and (strip or late_get is not None)
    async with AsyncExitStack() as outer:
        http = await outer.enter_async_context(http_client(list(strip), late_get)) if custom else None

        async def connect() -> tuple[Client, AsyncExitStack]:
            stack = AsyncExitStack()
            await outer.enter_async_context(stack)
            target = streamable_http_client(server, http_client=http) if http is not None else server
            return await stack.enter_async_context(
                Client(target, mode=mode, read_timeout_seconds=timeout, log_level="info")), stack

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
        await asyncio.gather(*LATER)


def main() -> None:
    argv = sys.argv[1:]
    server_argv = argv[argv.index("--") + 1:] if "--" in argv else None
    p = argparse.ArgumentParser()
    p.add_argument("url", nargs="?")
    p.add_argument("--reinit", action="store_true")
    p.add_argument("--timeout", type=float)
    p.add_argument("--retry", type=float, metavar="S")
    p.add_argument("--mode", default="legacy")
    p.add_argument("--strip-header", action="append", default=[])
    p.add_argument("--stamp", action="store_true")
    p.add_argument("--late-get", type=float, metavar="S")
    a = p.parse_args(argv[:argv.index("--")] if server_argv is not None else argv)
    server = StdioServerParameters(command=server_argv[0], args=server_argv[1:]) if server_argv else a.url
    try:
        anyio.run(converse, server, a.reinit, a.timeout, a.retry, a.mode, a.strip_header, a.stamp, a.late_get)
    except Exception as e:  # reported in one line, and a failing exit: the application saw the error
        while isinstance(e, ExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        raise SystemExit(f"client: {type(e).__name__}: {e}") from None


if __name__ == "__main__":
    main()
