"""An MCP contentview for mitmproxy and mitmweb: a JSON-RPC body shown as the message(s) it carries, an SSE body
split into its events, each event's data read as a JSON-RPC message the same way.

mitmproxy picks the view with the highest `render_priority`: JSON scores 1, raw 0.1. This view scores 2 for MCP
traffic only (a body that is JSON-RPC, an SSE stream carrying JSON-RPC or a legacy `endpoint` event, or any body of
a request that carries MCP's own headers) and 0 for everything else, so other traffic keeps mitmproxy's views.
It reads bodies with the project's wire parsers (jsonrpc.parse, sse.Parser), which never raise on bad input, so
the view does not fail on any body; if it ever did, mitmproxy would fall back to raw.

Loaded by the record addon, and on its own: `mitmweb -s "$(mcptape addons contentview)"`.
"""

from __future__ import annotations

from mitmproxy import contentviews
from mitmproxy import http as mhttp

from ...tape.json_form import dumps
from ...wire import http, jsonrpc, sse
from ..http import looks_like_mcp

INDENT = "    "


def _asked(flow) -> dict:
    """What the flow's request asked, by id: `tools/call add`, to name what a response answers."""
    request = flow.request if isinstance(flow, mhttp.HTTPFlow) else None
    if request is None or request.method != "POST":
        return {}
    body = jsonrpc.parse(request.get_content(strict=False) or b"")
    if not body.is_json:
        return {}
    return {jsonrpc.id_key(m["id"]): f"{m['method']}{jsonrpc.detail(m)}"
            for m in jsonrpc.messages(body.msg) if jsonrpc.kind(m) == "request"}


def _is_mcp_flow(flow) -> bool:
    """An exchange whose request carries MCP's own headers (Streamable HTTP after initialize) or posts JSON-RPC."""
    if not isinstance(flow, mhttp.HTTPFlow):
        return False
    request = flow.request
    body = (request.get_content(strict=False) or b"") if request.method == "POST" else b""
    return looks_like_mcp(request.method, list(request.headers.items(multi=True)), body)


def message_lines(msg: jsonrpc.JSON, asked: dict | None = None) -> list[str]:
    """One message: a first line a person scans (kind, method, id, tool or resource name), then its params, result
    or error as indented JSON. A message that is not JSON-RPC says why, then shows what it is."""
    asked = asked or {}
    kind = jsonrpc.kind(msg)
    problem = jsonrpc.invalid_reason(msg) if not isinstance(msg, list) else None
    if kind == "invalid" or (problem and kind not in ("request", "notification")):
        return [f"not a JSON-RPC message: {problem}", *dumps(msg, indent=2).splitlines()]
    line = jsonrpc.describe(msg)
    if kind in ("request", "notification"):
        line, payload = f"{kind} {line}", msg.get("params")
    else:
        payload = msg.get("result") if kind == "response" else msg.get("error")
        if kind == "error" and isinstance(payload, dict) and "data" not in payload:
            payload = None  # code and message are on the first line already
        answers = asked.get(jsonrpc.id_key(msg.get("id")))
        if answers:
            line += f" · answers {answers}"
        if kind == "response" and isinstance(payload, dict) and payload.get("isError") is True:
            line += " · isError"
    if problem:
        line += f" · {problem}"
    return [line, *(dumps(payload, indent=2).splitlines() if payload is not None else [])]


def body_lines(data: bytes | str, asked: dict | None = None) -> list[str]:
    """A JSON body (or one SSE event's data): its message, a batch's messages, or why it is not JSON-RPC."""
    body = jsonrpc.parse(data)
    if not body.is_json:
        if body.problem is None:
            return ["(empty)"]
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        return [f"not a JSON-RPC message: {body.problem}", *text.splitlines()]
    if isinstance(body.msg, list) and body.msg:
        out = [f"batch of {len(body.msg)} message{'s' if len(body.msg) != 1 else ''}"]
        for i, msg in enumerate(body.msg, 1):
            first, *rest = message_lines(msg, asked)
            out += ["", f"[{i}] {first}", *rest]
        return out
    return message_lines(body.msg, asked)


def event_lines(data: bytes, asked: dict | None = None) -> list[str]:
    """An SSE body, event by event, as the WHATWG rules split it (sse.Parser, which keeps what a browser skips)."""
    parser = sse.Parser()
    events = parser.feed(data) + parser.close()
    out = [f"SSE stream: {len(events)} event{'s' if len(events) != 1 else ''}"]
    for n, event in enumerate(events, 1):
        head = [f"event {n}"]
        if event.id is not None:
            head.append(f"id {event.id!r}" if event.id == "" else f"id {event.id}")
        if event.event is not None:
            head.append(f"type {event.event}")
        if event.retry is not None:
            head.append(f"retry {event.retry} ms")
        if event.data == "":
            head.append("priming event (empty data)")
        elif event.data is None and not event.comments:
            head.append("no data")
        elif event.data is None:
            head.append("comment only")
        if event.incomplete:
            head.append("incomplete: the stream ended inside this event")
        out += ["", " · ".join(head)]
        out += [f"{INDENT}: {comment}" for comment in event.comments]
        out += [f"{INDENT}problem: {problem}" for problem in event.problems]
        if event.event == "endpoint" and event.data:
            out.append(f"{INDENT}endpoint {event.data} (legacy HTTP+SSE: the client POSTs its messages here)")
        elif event.data:
            out += [INDENT + line for line in body_lines(event.data, asked)]
    return out


def _sse_carries_mcp(data: bytes) -> bool:
    parser = sse.Parser()
    for event in parser.feed(data) + parser.close():
        if event.event == "endpoint" and event.data:
            return True
        if event.data and (body := jsonrpc.parse(event.data)).is_json and body.problem is None:
            return True
    return False


class MCPContentview(contentviews.Contentview):
    name = "MCP"
    syntax_highlight = "none"

    def prettify(self, data: bytes, metadata: contentviews.Metadata) -> str:
        asked = _asked(metadata.flow)
        if http.media_type(metadata.content_type) == http.SSE:
            return "\n".join(event_lines(data, asked))
        return "\n".join(body_lines(data, asked))

    def render_priority(self, data: bytes, metadata: contentviews.Metadata) -> float:
        if not data or metadata.http_message is None:
            return 0
        media = http.media_type(metadata.content_type)
        if media == http.SSE:
            return 2 if _is_mcp_flow(metadata.flow) or _sse_carries_mcp(data) else 0
        body = jsonrpc.parse(data)
        if body.is_json and body.problem is None:
            return 2
        # a body of an MCP exchange that is not JSON-RPC: say why, where the JSON or raw view would not
        if _is_mcp_flow(metadata.flow) and media in ("", http.JSON, "text/plain", "text/html"):
            return 2
        return 0


view = MCPContentview()


def register() -> None:
    """Add the view to mitmproxy (registering it again replaces it: a reloaded script is harmless)."""
    contentviews.add(view)
