"""A small SDK server for the verify tests, unlike the demo server on purpose: `add` answers one too many (unless
`--right`), `sleep` never answers, and with `--token` every HTTP request must carry `Authorization: Bearer TOKEN` (else 401).

    python tests/verify_server.py --port 8000 [--token T] [--right] | --stdio
"""

from __future__ import annotations

import argparse
import json

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("verify-test")
OFFSET = 1  # how wrong add is (--right: not at all)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b + OFFSET


@server.tool()
def echo(text: str) -> str:
    """Say it back (a secret too: verify's log must not keep it)."""
    return text


@server.tool()
async def sleep(seconds: float) -> str:
    """Never answers, whatever it was asked."""
    await anyio.sleep_forever()
    return "unreachable"


def with_token(app, token: str):
    async def wrapped(scope, receive, send):
        auth = dict(scope.get("headers") or []).get(b"authorization", b"").decode()
        if scope["type"] == "http" and auth != f"Bearer {token}":
            body = json.dumps({"error": "unauthorized"}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return wrapped


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--stdio", action="store_true")
    p.add_argument("--token")
    p.add_argument("--right", action="store_true", help="add answers right (the demo's add, behind --token)")
    a = p.parse_args()
    if a.right:
        global OFFSET
        OFFSET = 0
    if a.stdio:
        server.run("stdio")
        return
    app = server.streamable_http_app(host="127.0.0.1")
    if a.token:
        app = with_token(app, a.token)
    uvicorn.run(app, host="127.0.0.1", port=a.port, log_level="warning")


if __name__ == "__main__":
    main()
