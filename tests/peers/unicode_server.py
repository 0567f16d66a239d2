"""An SDK server whose tool, prompt and resource are named outside ASCII, and a tool that mirrors an argument into
an `Mcp-Param-*` header: what a 2026-07-28 client must send in the =?base64?…?= form.

    python -m tests.peers.unicode_server PORT
"""

from __future__ import annotations

import sys
from typing import Annotated

import uvicorn
from mcp.server.mcpserver import MCPServer
from pydantic import Field

server = MCPServer("unicode")


@server.tool(name="météo")
def weather(city: Annotated[str, Field(json_schema_extra={"x-mcp-header": "City"})]) -> str:
    return f"soleil à {city}"


@server.prompt(name="résumé")
def summary() -> str:
    return "résumez"


@server.resource("file:///données/日本.txt")
def japan() -> str:
    return "こんにちは"


if __name__ == "__main__":
    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
