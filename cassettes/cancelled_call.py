"""A cancelled tools/call over stdio that never gets a final response (README: "A cancelled call, never answered").

    python cancelled_call.py serve          # the server: an SDK stdio server with a long-running tool
    python cancelled_call.py client TAPE    # the client: starts the server through `mcptape record -o TAPE --`
    python cancelled_call.py client -- mcptape replay cancelled-call.mcptape --stdio   # the client, on the tape

The server's `write_files` tool works through its files one by one, as an agent does its shell steps. The client
gives up after half a second: the SDK sends `notifications/cancelled` for the call and the server stops the work,
and never answers the cancelled request (the official SDK never does). The client then pings the server, which
answers at once: the server is alive, the call is simply never settled.
"""

from __future__ import annotations

import sys
import warnings

import anyio
from mcp import Client, MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)  # logging and ping are deprecated in 2026-07-28, not here
server = MCPServer("file-writer")


@server.tool()
async def write_files(count: int, ctx: Context) -> str:
    """Write COUNT files, one step a second (this one only pretends to)."""
    for i in range(count):
        await ctx.info(f"writing file_{i + 1:03}.txt")
        await anyio.sleep(1)
    return "DONE"


async def client(server) -> None:
    async with Client(server, mode="legacy") as c:
        try:
            await c.call_tool("write_files", {"count": 60}, read_timeout_seconds=0.5)
        except (MCPError, TimeoutError) as e:  # the SDK cancels the call when it times out
            print(f"gave up on write_files: {e}")
        await c.send_ping()
        print("the server still answers ping")


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        server.run("stdio")
    else:
        from record_all import stdio_servers

        anyio.run(client, *stdio_servers(sys.argv[2:], "cancelled_call"))
