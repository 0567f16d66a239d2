"""The MCP contentview alone (the record addon loads it too):  mitmweb -s "$(mcptape addons contentview)"

JSON-RPC bodies shown as their messages, SSE bodies split into events; other traffic keeps mitmproxy's views."""

from mcptape.capture.mitm import mcp_view

mcp_view.register()

addons = []
