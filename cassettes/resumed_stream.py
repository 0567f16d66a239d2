"""A stream the server cuts halfway through a call, and the client resuming it with `Last-Event-ID` (README: "A
stream cut and resumed").

    python resumed_stream.py serve PORT   # the server: the SDK's server with an event store (resumable streams)
    python resumed_stream.py client URL   # the client: the SDK client, which resumes

Since 2025-11-25 a server may close a request's SSE stream early (to free the connection during long work) after
giving each event an id and a `retry` time; the client resumes with a GET carrying `Last-Event-ID`, and the rest of
the stream, the final response included, arrives there. Here the `report` tool logs a line, closes its stream,
works a little longer, logs again and answers.
"""

from __future__ import annotations

import itertools
import sys
import warnings

import anyio
import uvicorn
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)
server = MCPServer("resumable")


@server.tool()
async def report(ctx: Context) -> str:
    """Log, cut this call's stream, work on, log, answer."""
    await ctx.info("started the report")
    await ctx.close_sse_stream()
    await anyio.sleep(0.3)
    await ctx.info("report written")
    return "report ready"


class MemoryEventStore(EventStore):
    """Every event, in memory, so a client can resume after any of them; ids are one counter across streams."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.events: list[tuple[str, str, object]] = []

    async def store_event(self, stream_id, message):
        event_id = str(next(self.ids))
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback: EventCallback):
        stream = next((s for e, s, _ in self.events if e == last_event_id), None)
        if stream is None:
            return None
        after = False
        for event_id, stream_id, message in self.events:
            if after and stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream


async def client(url: str) -> None:
    async def on_log(params) -> None:
        print(f"log: {params.data}")

    async with Client(url, mode="legacy", logging_callback=on_log, log_level="info") as c:
        print("report:", (await c.call_tool("report", {})).content[0].text)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        app = server.streamable_http_app(host="127.0.0.1", event_store=MemoryEventStore(), retry_interval=100)
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        anyio.run(client, sys.argv[2])
