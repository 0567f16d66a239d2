"""An SDK MCP server that handles secrets, for the redaction tests: every secret it sends is made from the seed
it was started with (`--seed`), so two runs with different seeds send different secrets in the same places.

    python -m tests.secret_server --seed S (--port N | --stdio)

It sends a secret in a tool result (a GitHub-shaped token), in a resource's contents (an `.env` line), in a log
notification (a bearer token), and on stderr (an `sk-` key, at start and on every call).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import warnings

import mcp.types as mcp_types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

warnings.filterwarnings("ignore", message="The logging capability is deprecated")  # logs are what it needs
server = MCPServer("secret-demo")
SEED = "unset"


async def _set_level(ctx, params: mcp_types.SetLevelRequestParams) -> mcp_types.EmptyResult:
    return mcp_types.EmptyResult()


# login sends a log notification, and "Servers that emit log message notifications MUST declare the logging
# capability" (Utilities › Logging); the SDK declares it only for a server that handles logging/setLevel.
server._lowlevel_server.add_request_handler("logging/setLevel", mcp_types.SetLevelRequestParams, _set_level)


def secret(kind: str, seed: str | None = None) -> str:
    """The secret this server sends in place `kind` for a seed: a test computes the same to look for it."""
    digest = hashlib.sha256(f"{seed or SEED}:{kind}".encode()).hexdigest()
    return {"result": "ghp_" + digest[:36], "resource": "sk-proj-" + digest[:40], "log": "tok" + digest[:30],
            "stderr": "sk-" + digest[:32]}[kind]


@server.tool()
async def login(api_key: str, user: str, ctx: Context) -> str:
    """Trade an API key for a session token (a secret in the result and in a log notification)."""
    print(f"login for {user} with key {secret('stderr')}", file=sys.stderr, flush=True)
    await ctx.info(f"authorized with Bearer {secret('log')}")
    return f"welcome {user}; your token is {secret('result')}"


@server.resource("config://env")
def env() -> str:
    return f"# the service's settings\nOPENAI_API_KEY={secret('resource')}\nREGION=eu-west-1\n"


def main() -> None:
    global SEED
    p = argparse.ArgumentParser()
    p.add_argument("--seed", required=True)
    p.add_argument("--port", type=int)
    p.add_argument("--stdio", action="store_true")
    a = p.parse_args()
    SEED = a.seed
    print(f"starting with key {secret('stderr')}", file=sys.stderr, flush=True)
    if a.stdio:
        server.run("stdio")
        return
    uvicorn.run(server.streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=a.port, log_level="warning")


if __name__ == "__main__":
    main()
