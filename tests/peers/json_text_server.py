"""An SDK server whose tools answer with JSON text written as real servers write it: pretty-printed, with escapes,
`1.0` and `1e3`, a key written twice, strings repeated across answers, and one secret. A recording must keep every
byte of that text but the secret's own token (issue 43).

    python -m tests.peers.json_text_server --stdio | PORT
"""

from __future__ import annotations

import json
import sys

from mcp.server.mcpserver import MCPServer

SECRET = "sk-" + "Jt4x" * 7
ITEMS = [{"name": "a repeated name", "path": "/srv/data/a repeated name.txt", "tokens": 3}] * 3
TEXTS = {
    # pretty-printed, as json.dumps(indent=2) and JSON.stringify(_, null, 2) write it
    "pretty": json.dumps({"items": ITEMS, "total_tokens": 9}, indent=2),
    # spelled oddly: spaces, \u escapes, \/, 1.0, 1e3, a key twice
    "odd": '{ "name" : "caf\\u00e9",\t"ratio": 1.0, "big": 1e3, "url": "http:\\/\\/x", "n": 1, "n": 2 }',
    "secret": json.dumps({"api_key": SECRET, "note": "a repeated name", "tokens": 3}, indent=4),
}

server = MCPServer("json-text")


@server.tool()
def text(kind: str) -> str:
    return TEXTS[kind]


if __name__ == "__main__":
    if sys.argv[1] == "--stdio":
        server.run("stdio")
    else:
        import uvicorn

        uvicorn.run(server.streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=int(sys.argv[1]),
                    log_level="warning")
