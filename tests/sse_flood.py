"""An upstream for the long-stream load test, run as its own process: any GET gets one SSE stream of `count`
progress notifications at `rate` events a second, each carrying the time it was written (ns), then the stream
ends. Prints its port, then serves until killed.

    python -m tests.sse_flood COUNT RATE
"""

from __future__ import annotations

import asyncio
import sys
import time


async def stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, count: int, rate: float) -> None:
    try:
        await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):  # a reachability probe: connected, sent nothing
        return
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    start = time.monotonic()
    for i in range(count):
        # on schedule: event i goes out at start + i/rate (a late one goes at once; no burst makes up for it)
        if (wait := start + i / rate - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        data = (f'id: {i}\ndata: {{"jsonrpc":"2.0","method":"notifications/progress","params":'
                f'{{"progressToken":1,"progress":{i},"message":"{time.time_ns()}"}}}}\n\n').encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    writer.close()


async def main(count: int, rate: float) -> None:
    server = await asyncio.start_server(lambda r, w: stream(r, w, count, rate), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
