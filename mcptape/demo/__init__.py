"""A small MCP server and a scripted client, both on the official `mcp` SDK (`pip install 'mcptape[demo]'`),
so the README's demo records a real session with no outside server. The tests use them as real peers too."""
