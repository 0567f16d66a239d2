"""codex-cli as an MCP client (Rust, rmcp), driven by a scripted model: a small loopback server of ours that speaks
just enough of the OpenAI Responses streaming API (POST /v1/responses, SSE) to make codex call the MCP server's
tools in order (add, then countdown), then answer "done". codex gets a fresh CODEX_HOME in a temporary folder whose
config points its model provider at that server and its one MCP server at URL.

    python codex_client.py URL [--timeout S]     (S: codex's tool_timeout_sec for the MCP server)

Run it in a network namespace with loopback only (`unshare -r -n`, with `lo` up): codex can reach nothing else.
MCPTAPE_CODEX names the codex binary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT = [("add", {"a": 2, "b": 3}), ("countdown", {"steps": 3})]  # the tool calls, in order


def _events(body: dict) -> list[dict]:
    """The model's next turn: the next tool call of SCRIPT (by how many tool outputs it has seen), else "done"."""
    items = body.get("input") or []
    done = sum(1 for item in items if isinstance(item, dict) and item.get("type") == "function_call_output")
    # codex offers an MCP server's tools as a namespace ("mcp__demo__") of functions; a call names both
    spaces = [t.get("name", "") for t in body.get("tools") or []
              if isinstance(t, dict) and t.get("type") == "namespace"]
    space = next((x for x in spaces if "demo" in x), "mcp__demo__")
    n = len([i for i in items if isinstance(i, dict) and i.get("type") == "function_call"])
    if done < len(SCRIPT):
        tool, arguments = SCRIPT[done]
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "namespace": space, "name": tool,
                "arguments": json.dumps(arguments)}
    else:
        item = {"type": "message", "role": "assistant", "id": f"msg_{n}",
                "content": [{"type": "output_text", "text": "done"}]}
    response = {"id": f"resp_{n}", "object": "response", "status": "completed", "output": [item],
                "usage": {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
                          "output_tokens_details": None, "total_tokens": 2}}
    return [{"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": response}]


class Model(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        if not self.path.rstrip("/").endswith("/responses"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for event in _events(body):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()

    def do_GET(self) -> None:
        self.send_error(404)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--timeout", type=float, help="tool_timeout_sec for the MCP server")
    a = p.parse_args()
    model = ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="mcptape-codex-") as home:
        timeout = f"tool_timeout_sec = {a.timeout:g}\n" if a.timeout else ""
        with open(os.path.join(home, "config.toml"), "w") as config:
            config.write(f"""model = "scripted"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:{model.server_address[1]}/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.demo]
url = "{a.url}"
{timeout}""")
        env = {**os.environ, "CODEX_HOME": home, "OPENAI_API_KEY": "none", "HOME": home}
        # --disable tool_search: the MCP tools are offered up front (a namespace), not found through a search
        prompt = "Call the demo server's add tool with a=2 b=3, then its countdown tool with steps=3."
        done = subprocess.run([os.environ.get("MCPTAPE_CODEX", "codex"), "exec", "--skip-git-repo-check",
                               "--dangerously-bypass-approvals-and-sandbox", "--disable", "tool_search", "-C", home,
                               prompt],
                              env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    model.shutdown()
    sys.stdout.write(done.stdout[-3000:])
    sys.stderr.write(done.stderr[-3000:])
    raise SystemExit(done.returncode)


if __name__ == "__main__":
    main()
