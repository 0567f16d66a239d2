"""A server that answers a deleted session with 400 instead of 404 (README: "400 for a deleted session").

    python deleted_session_400.py serve PORT   # the server: the SDK's server, answering as the TypeScript SDK does
    python deleted_session_400.py client URL   # the client: raw HTTP (the SDK client cannot send after DELETE)

The client ends its session with DELETE, and a request it still had queued goes out afterwards with the same id.
The server answers `400 Bad Request: No valid session ID provided`, the TypeScript SDK's answer for a session it
has itself deleted, instead of the 404 the spec asks for: a client that follows the spec re-initializes only on
404, so this answer leaves it stuck. The wrapper around the Python SDK's server reproduces that answer.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
import warnings

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)
server = MCPServer("deleting")
VERSION = "2025-11-25"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def bad_request_once_deleted(app):
    """A session the client deleted is answered 400 'No valid session ID provided' from then on."""
    deleted: set[bytes] = set()

    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            session = dict(scope["headers"]).get(b"mcp-session-id")
            if session in deleted:
                body = json.dumps({"jsonrpc": "2.0", "error": {
                    "code": -32000, "message": "Bad Request: No valid session ID provided"}, "id": None}).encode()
                await send({"type": "http.response.start", "status": 400, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
                await send({"type": "http.response.body", "body": body})
                return
            if session and scope["method"] == "DELETE":
                deleted.add(session)
        await app(scope, receive, send)

    return wrapped


def client(url: str) -> None:
    session = None

    def send(method: str, message: dict | None = None) -> None:
        nonlocal session
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if session:
            headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION}
        body = json.dumps(message).encode() if message else None
        try:
            with urllib.request.urlopen(urllib.request.Request(url, body, headers, method=method)) as r:
                session = session or r.headers["Mcp-Session-Id"]
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        print(method, (message or {}).get("method", ""), status, text.strip()[:80] if status >= 400 else "")

    send("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw-client", "version": "0"}}})
    send("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
    send("DELETE")
    send("POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}})


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        uvicorn.run(bad_request_once_deleted(server.streamable_http_app(host="127.0.0.1")), host="127.0.0.1",
                    port=int(sys.argv[2]), log_level="warning")
    else:
        client(sys.argv[2])
