"""An HTTP MCP upstream that puts a canary secret in every field a server can fill (status reason, header names
and values, session id, SSE id, event, retry and comments, JSON keys and values, JSON inside strings twice), and
answers a resume (GET with Last-Event-ID) from its first event: for the canary matrix (test_canaries.py).

    python -m tests.peers.canary_server PORT SEED
"""

from __future__ import annotations

import hashlib
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# field -> how its canary looks: "shape" (token-shaped: found wherever it stands) or "name" (plain: only a name
# rule, a header's, a query parameter's, a key's or an option's, says it is a secret)
SERVER_FIELDS = {"reason": "shape", "header-name": "shape", "header-value": "shape", "session": "shape",
                 "sse-id": "shape", "sse-event": "shape", "sse-retry": "shape", "sse-comment": "shape",
                 "json-key": "shape", "json-value": "shape", "auth": "name", "pass": "name", "pin": "name",
                 "sessionKey": "name", "nested-twice": "name", "resumed-id": "shape"}
CLIENT_FIELDS = {"query-name": "shape", "query-value": "shape", "session_key": "name", "req-header-name": "shape",
                 "req-header-value": "shape", "X-Custom-Auth": "name", "Authentication": "name",
                 "req-json-key": "shape", "req-auth": "name", "req-pass": "name", "req-pin": "name",
                 "req-sessionKey": "name", "req-nested-twice": "name"}


def canary(seed: str, field: str) -> str:
    digest = hashlib.sha256(f"{seed}:{field}".encode()).hexdigest()[:24]
    kind = {**SERVER_FIELDS, **CLIENT_FIELDS}[field]
    return f"sk-canary{digest}" if kind == "shape" else f"canary{digest}"


def twice(key: str, value: str) -> str:
    """JSON in a string in a string."""
    return json.dumps({"outer": json.dumps({key: value})})


def handler(seed: str):
    c = lambda field: canary(seed, field)  # noqa: E731

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _sse(self, body: str) -> None:
            data = body.encode()
            self.send_response(200, f"OK {c('reason')}")
            self.send_header("Content-Type", "text/event-stream")
            self.send_header(c("header-name"), "1")
            self.send_header("X-Note", c("header-value"))
            self.send_header("Mcp-Session-Id", c("session"))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            result = {c("json-key"): c("json-value"), "auth": c("auth"), "pass": c("pass"), "pin": c("pin"),
                      "sessionKey": c("sessionKey"), "doc": twice("password", c("nested-twice"))}
            answer = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result})
            self._sse(f": {c('sse-comment')}\nid: {c('sse-id')}\ndata: {answer}\n\n"
                      f"event: {c('sse-event')}\nretry: {c('sse-retry')}\ndata: plain\n\n")

        def do_GET(self) -> None:
            assert self.headers.get("Last-Event-ID") == c("sse-id"), self.headers
            note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                               "params": {"level": "info", "data": "resumed"}})
            self._sse(f"id: {c('resumed-id')}\ndata: {note}\n\n")

    return Handler


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), handler(sys.argv[2])).serve_forever()
