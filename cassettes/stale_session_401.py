"""A stale session answered `401 Unauthorized: Session not found`, and a client that never recovers (README: "401
for a stale session").

    python stale_session_401.py serve PORT   # the server: the SDK's Streamable HTTP server, made stale on POST 4
    python stale_session_401.py client URL   # the client: the SDK client, calling a tool again and again

The server forgets the session on the 4th POST, as a server restarted behind a load balancer or an expired cache
does, the way the bug's reporter forced it (`stale session on the Nth POST`), and from then on answers requests
carrying that id with 401 and `Unauthorized: Session not found` instead of the 404 the spec asks for. The client
goes on sending the dead id with every call; each one fails, and it never starts a new session.
"""

from __future__ import annotations

import sys
import warnings

import anyio
import uvicorn
from mcp import Client, MCPError
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)
STALE_AT_POST = 4
server = MCPServer("stale-sessions")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def stale_on_nth_post(app, n: int):
    """From the Nth POST on, the session that POST carries is unknown to this server: 401 'Session not found'."""
    posts = 0
    stale: set[bytes] = set()

    async def wrapped(scope, receive, send):
        nonlocal posts
        if scope["type"] == "http":
            session = dict(scope["headers"]).get(b"mcp-session-id")
            posts += scope["method"] == "POST"
            if session and posts >= n:
                stale.add(session)
            if session in stale:
                body = b"Unauthorized: Session not found"
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body))]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return wrapped


async def client(url: str) -> None:
    async with Client(url, mode="legacy") as c:
        print("tools:", ", ".join(t.name for t in (await c.list_tools()).tools))
        for a in range(1, 4):
            try:
                print("add:", (await c.call_tool("add", {"a": a, "b": 1})).structured_content)
            except MCPError as e:  # the application reports the failure and goes on, with the same session
                print(f"add failed: {e}")


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        app = stale_on_nth_post(server.streamable_http_app(host="127.0.0.1"), STALE_AT_POST)
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        anyio.run(client, sys.argv[2])
