"""A fastmcp proxy (fastmcp.server.create_proxy) in front of mcp-server-time, both over stdio: a real server that
relays another's answers. Run with the Python of tests/py_peers.py: `python fastmcp_proxy.py`."""

import sys

from fastmcp.server import create_proxy

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}

if __name__ == "__main__":
    create_proxy({"mcpServers": {"time": TIME}}).run(show_banner=False)
