"""A thread id from an earlier server process, refused as `Session not found for thread_id` (README: "A thread id
that died with its process"). Two tapes: the process that handed the id out, and the next one.

    python thread_ids.py serve                      # the server: an SDK stdio server keeping threads in memory
    python thread_ids.py client FIRST.tape LATER.tape   # the client: a server process (recorded) for each part
    python thread_ids.py client -- mcptape replay thread-first-process.mcptape --stdio \
                                -- mcptape replay thread-later-process.mcptape --stdio

The server's `start_thread` tool starts a conversation and returns its `thread_id`; `reply` continues one. The
threads live in the server process's memory. The client starts a thread, then its server process goes away (the
client is restarted, as desktop clients restart their servers); in the next process it tries to continue the
thread by its id and is told `Session not found for thread_id: …`.
"""

from __future__ import annotations

import json
import sys
import uuid
import warnings

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)
server = MCPServer("threads")
threads: dict[str, list[str]] = {}


@server.tool()
def start_thread(prompt: str) -> dict:
    """Start a conversation; its thread_id lives as long as this process."""
    thread_id = str(uuid.uuid4())
    threads[thread_id] = [prompt]
    return {"thread_id": thread_id}


@server.tool()
def reply(thread_id: str, prompt: str) -> str:
    """Continue a conversation started in this process."""
    if thread_id not in threads:
        raise ToolError(f"Session not found for thread_id: {thread_id}")
    threads[thread_id].append(prompt)
    return f"{len(threads[thread_id])} turns in {thread_id}"


async def client(first, later) -> None:
    async with Client(first, mode="legacy") as c:
        started = await c.call_tool("start_thread", {"prompt": "list the files"})
        thread_id = json.loads(started.content[0].text)["thread_id"]
        print(f"started thread {thread_id}")
    async with Client(later, mode="legacy") as c:
        result = await c.call_tool("reply", {"thread_id": thread_id, "prompt": "now sort them"})
        print(f"reply: {result.content[0].text}")


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        server.run("stdio")
    else:
        from record_all import stdio_servers

        anyio.run(client, *stdio_servers(sys.argv[2:], "thread_ids"))
