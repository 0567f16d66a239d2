"""What the recorder reads of a mitmproxy flow, in the capture's terms: headers as text pairs, a body with its
Content-Encoding undone, why a flow ended, a request's JSON-RPC id, where a reverse proxy's client reached us.
Shared by the addon (capture/mitm/addon.py) and `import` of mitmproxy flow files."""

from __future__ import annotations

from mitmproxy import http as mhttp
from mitmproxy.proxy import mode_specs

from ...tape import records
from ...wire import jsonrpc
from ..http import Relocation


def headers_of(headers: mhttp.Headers) -> list[tuple[str, str]]:
    try:  # nearly always UTF-8 (ASCII): one comprehension, no call per name and value
        return [(k.decode(), v.decode()) for k, v in headers.fields]
    except UnicodeDecodeError:
        return [(_text(k), _text(v)) for k, v in headers.fields]


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def mitm_headers(headers: list[tuple[str, str]]) -> mhttp.Headers:
    return mhttp.Headers([(k.encode(), v.encode()) for k, v in headers])


def content_of(message: mhttp.Message) -> tuple[bytes, str | None]:
    """The body with its Content-Encoding undone, or the raw bytes and why they could not be decoded."""
    try:
        return message.get_content(strict=True) or b"", None
    except ValueError as e:
        encoding = message.headers.get("content-encoding", "")
        return message.raw_content or b"", f"content-encoding {encoding} could not be decoded: {e}"


def end_reason(flow: mhttp.HTTPFlow) -> str:
    """Why a flow ended in an error, in the tape's words, from what mitmproxy knows of its connections."""
    message = (flow.error.msg if flow.error else "").lower()
    if "client disconnected" in message:
        return records.CLIENT_DISCONNECTED
    upstream = flow.server_conn
    if upstream.timestamp_tcp_setup is None or (upstream.tls and upstream.timestamp_tls_setup is None):
        return records.UPSTREAM_UNREACHABLE  # never connected, or the TLS handshake failed
    if flow.server_conn.timestamp_end is not None or "server" in message or "peer" in message:
        return records.UPSTREAM_RESET
    return records.PROXY_ERROR


def request_id(flow: mhttp.HTTPFlow):
    msg = jsonrpc.parse(content_of(flow.request)[0]).msg
    return msg.get("id") if isinstance(msg, dict) else None


def relocation(flow: mhttp.HTTPFlow) -> Relocation | None:
    """In reverse mode the client talks to us, so an endpoint URL naming the upstream must name us instead."""
    if not isinstance(flow.client_conn.proxy_mode, mode_specs.ReverseMode):
        return None
    host, port = flow.client_conn.sockname[:2]
    host = f"[{host}]" if ":" in host else host
    scheme = "https" if flow.client_conn.tls else "http"
    return Relocation((flow.request.scheme, flow.request.host, flow.request.port), f"{scheme}://{host}:{port}")
