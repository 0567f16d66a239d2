"""A session that expired on the server, answered 404, and a client that never re-initializes (README: "404 after
expiry").

    python expired_session_404.py serve PORT   # the server: the SDK's Streamable HTTP server, sessions idle out
    python expired_session_404.py client URL   # the client: the SDK client, which keeps the dead session id

The server ends a session one second after its last POST (its TTL; real deployments use minutes), whatever GET
stream the client holds open, and then answers requests carrying the id with 404 `Session not found`, as the spec
asks. (The SDK's own idle timeout never fires while the client's GET stream is open, so a small reaper ends the
session through the server's own DELETE handling.) The client makes a call, sits idle past the TTL,
then makes three more, and gets 404 every time: it keeps sending the dead id instead of starting a new session
with a fresh `initialize`, which the spec says it MUST do. (The official SDK client does not re-initialize.)
"""

from __future__ import annotations

import asyncio
import sys
import time
import warnings

import anyio
import uvicorn
from mcp import Client, MCPError
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)
SESSION_TTL = 1.0
server = MCPServer("short-sessions")


@server.tool()
def search(query: str) -> str:
    """Pretend to search."""
    return f"3 results for {query!r}"


@server.resource("notes://today")
def today() -> str:
    return "nothing planned"


class ExpireAfter:
    """End each session `ttl` seconds after its last POST by handing the app a DELETE for it (which also ends the
    session's GET stream); from then on the SDK answers the id with 404."""

    def __init__(self, app, ttl: float) -> None:
        self.app, self.ttl = app, ttl
        self.last_post: dict[bytes, tuple[float, dict]] = {}  # session id -> (when, the scope of its last POST)
        self.expired: set[bytes] = set()
        self.reaper: asyncio.Task | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            self.reaper = self.reaper or asyncio.create_task(self.reap())
            session = dict(scope["headers"]).get(b"mcp-session-id")
            if session and scope["method"] == "POST" and session not in self.expired:
                self.last_post[session] = (time.monotonic(), scope)
        await self.app(scope, receive, send)

    async def reap(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 10)
            for session, (when, scope) in list(self.last_post.items()):
                if time.monotonic() - when > self.ttl:
                    del self.last_post[session]
                    self.expired.add(session)
                    await self.app({**scope, "method": "DELETE"}, self._no_body, self._discard)

    @staticmethod
    async def _no_body() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    @staticmethod
    async def _discard(message: dict) -> None:
        pass


async def client(url: str) -> None:
    async with Client(url, mode="legacy") as c:
        print("search:", (await c.call_tool("search", {"query": "mcp"})).content[0].text)
        await anyio.sleep(SESSION_TTL * 3)  # the user looks away; the server's session times out
        for request in (c.call_tool("search", {"query": "mcp"}), c.call_tool("search", {"query": "tapes"}),
                        c.list_resources()):
            try:
                await request
            except MCPError as e:  # the application reports the failure and goes on, with the same session
                print(f"failed: {e}")


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        app = ExpireAfter(server.streamable_http_app(host="127.0.0.1"), SESSION_TTL)
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        anyio.run(client, sys.argv[2])
