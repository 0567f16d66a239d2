"""FastMCP's client, used as an application would: the demo conversation, then exit 0; an error ends it with exit 1.

    python fastmcp_client.py URL [--timeout S]
"""

from __future__ import annotations

import argparse
import asyncio

from fastmcp import Client


async def converse(url: str, timeout: float | None) -> None:
    async with Client(url, timeout=timeout) as client:
        await client.list_tools()
        await client.call_tool("add", {"a": 2, "b": 3})
        await client.call_tool("countdown", {"steps": 3})
        await client.read_resource("demo://hello")
        print("done", flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--timeout", type=float)
    a = p.parse_args()
    try:
        asyncio.run(converse(a.url, a.timeout))
    except Exception as e:
        raise SystemExit(f"fastmcp client: {type(e).__name__}: {e}") from None


if __name__ == "__main__":
    main()
