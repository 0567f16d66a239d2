"""Demo MCP server (official SDK): tools with progress and logging, a resource, optional resumable SSE.

    python -m mcptape.demo.server --port 8000 [--event-store] [--json] [--stateless] [--sse] [--stdio] [--handshake-only] [--tls CERT KEY]
"""

from __future__ import annotations

import argparse
import itertools
import uuid
import json
import logging
import warnings

import anyio
import mcp.types as mcp_types
from pydantic import BaseModel
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

# The demo logs through the handshake-era logging capability on purpose; the 2026 deprecation is not news here.
warnings.filterwarnings("ignore", message="The logging capability is deprecated")

server = MCPServer("mcptape-demo")
# The SDK logs each session at INFO on this terminal; the demo's reader wants the conversation, not its plumbing.
logging.getLogger("mcp").setLevel(logging.WARNING)


async def _set_level(ctx, params: mcp_types.SetLevelRequestParams) -> mcp_types.EmptyResult:
    return mcp_types.EmptyResult()


# countdown sends log notifications, and "Servers that emit log message notifications MUST declare the logging
# capability" (Utilities › Logging); the SDK declares it only for a server that handles logging/setLevel.
server._lowlevel_server.add_request_handler("logging/setLevel", mcp_types.SetLevelRequestParams, _set_level)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def announce(ctx: Context) -> str:
    """Tell the client the tool list changed: a notification on the session's standalone GET stream."""
    await ctx.session.send_tool_list_changed()
    return "announced"


@server.tool()
async def countdown(steps: int, ctx: Context, delay: float = 0.05) -> str:
    """Count down, reporting progress and a log message at every step."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1} of {steps}")
        await ctx.info(f"counted {steps - i}")
        await anyio.sleep(delay)
    return f"counted down from {steps}"


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer (for cancellation and timeouts)."""
    await anyio.sleep(seconds)
    return f"slept {seconds}s"


_threads: dict[str, list[str]] = {}


@server.tool()
def start_thread(message: str) -> dict:
    """Start a conversation; its threadId lives as long as this server process (seed 002's shape)."""
    thread_id = str(uuid.uuid4())
    _threads[thread_id] = [message]
    return {"threadId": thread_id}


@server.tool()
def reply(thread_id: str, message: str) -> str:
    """Continue a conversation started with start_thread in this process."""
    if thread_id not in _threads:
        raise ToolError(f"Session not found for conversation_id: {thread_id}")
    _threads[thread_id].append(message)
    return f"{len(_threads[thread_id])} messages in {thread_id}"


@server.tool()
async def reconnect(ctx: Context) -> str:
    """Drop this call's SSE stream halfway (with --event-store the client resumes with Last-Event-ID)."""
    await ctx.info("before the disconnect")
    await ctx.close_sse_stream()
    await anyio.sleep(0.3)
    await ctx.info("after the reconnect")
    return "reconnected"


class Name(BaseModel):
    name: str


@server.tool()
async def greet(ctx: Context) -> str:
    """Ask the client for a name (a server-to-client elicitation/create request), then greet."""
    answer = await ctx.elicit("What is your name?", Name)
    return f"hello {answer.data.name}" if answer.action == "accept" else f"no name ({answer.action})"


@server.resource("demo://hello")
def hello() -> str:
    return "hello from a resource"


class MemoryEventStore(EventStore):
    """Keeps every event so a client can resume with Last-Event-ID; ids are one counter across streams."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._events: list[tuple[str, str, object]] = []

    async def store_event(self, stream_id, message):
        event_id = str(next(self._ids))
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback: EventCallback):
        stream = next((s for e, s, _ in self._events if e == last_event_id), None)
        if stream is None:
            return None
        after = False
        for event_id, stream_id, message in self._events:
            if after and stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream


def handshake_only(app):
    """Wrap the app so it answers like a server from before 2026-07-28: a modern request gets 400, which sends
    'auto' clients back to the initialize handshake (their probe, then the real session)."""

    async def wrapped(scope, receive, send):
        version = dict(scope.get("headers") or []).get(b"mcp-protocol-version", b"").decode()
        if scope["type"] == "http" and version and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": f"Bad Request: Unsupported protocol version: {version}"}}).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return wrapped


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--event-store", action="store_true", help="attach SSE event ids (resumable streams)")
    p.add_argument("--json", action="store_true", help="answer application/json instead of SSE")
    p.add_argument("--stateless", action="store_true")
    p.add_argument("--sse", action="store_true", help="the legacy 2024-11-05 HTTP+SSE transport (GET /sse)")
    p.add_argument("--stdio", action="store_true", help="serve on stdin/stdout instead of HTTP")
    p.add_argument("--handshake-only", action="store_true", help="refuse the 2026-07-28 era, as older servers do")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve https with this certificate")
    a = p.parse_args()
    if a.stdio:
        server.run("stdio")
        return
    if a.sse:
        app = server.sse_app(host="127.0.0.1")
    else:
        app = server.streamable_http_app(
            json_response=a.json, stateless_http=a.stateless, host="127.0.0.1",
            event_store=MemoryEventStore() if a.event_store else None, retry_interval=100 if a.event_store else None,
        )
    if a.handshake_only:
        app = handshake_only(app)
    tls = {"ssl_certfile": a.tls[0], "ssl_keyfile": a.tls[1]} if a.tls else {}
    url = f"{'https' if a.tls else 'http'}://127.0.0.1:{a.port}{'/sse' if a.sse else '/mcp'}"
    Announcing(uvicorn.Config(app, host="127.0.0.1", port=a.port, log_level="warning", **tls), url).run()


class Announcing(uvicorn.Server):
    """uvicorn's server, saying where to connect once it listens (so a reader knows the URL and a script when)."""

    def __init__(self, config: uvicorn.Config, url: str) -> None:
        super().__init__(config)
        self.url = url

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.started:
            print(f"mcptape demo server: {self.url} (Ctrl-C stops)", flush=True)


if __name__ == "__main__":
    main()
