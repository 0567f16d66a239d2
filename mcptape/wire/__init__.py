"""Sans-I/O parsing of what MCP puts on the wire: JSON-RPC messages, SSE events, HTTP headers.

Nothing here does I/O or imports the rest of mcptape, mitmproxy, asyncio or click.
"""
