"""Transports: stdio framing, the messages of Streamable HTTP (Accept, Content-Type, 202, the GET stream, batches,
the 2026-07-28 standard headers), the legacy HTTP+SSE channel, and the Origin check every HTTP server owes. Session
management is in sessions.py."""

from .. import spec
from ...model import LEGACY_SSE, STATELESS, STDIO, STREAMABLE
from . import CLIENT, HTTP, MAY, MUST, MUST_NOT, NONE, SERVER, SHOULD, Requirement, quote, since

_AREA = "Streamable HTTP"
_POST = frozenset({STREAMABLE, STATELESS})
_SESSION_ERA = frozenset({STREAMABLE})
_ERAS = "Backward Compatibility"
_LEGACY = "HTTP+SSE"
# The legacy transport is defined in 2024-11-05; later revisions keep it for backward compatibility (a server may go
# on hosting its endpoints, a client may fall back to it), so its clauses bind a legacy channel of any revision.
_LEGACY_ONLY = frozenset({LEGACY_SSE})

REQUIREMENTS = [
    Requirement(
        "post-accept-both", _AREA, CLIENT, since("2025-03-26", MUST),
        quote("2025-11-25", "Transports › Streamable HTTP › Sending Messages to the Server", "The client MUST "
              "include an Accept header, listing both application/json and text/event-stream as supported content "
              "types."),
        "a POST to the MCP endpoint whose Accept header lacks application/json or text/event-stream",
        ("http:POST",), _POST),
    Requirement(
        "get-accept-sse", _AREA, CLIENT, since("2025-03-26", MUST, "2025-11-25"),
        quote("2025-11-25", "Transports › Streamable HTTP › Listening for Messages from the Server", "The client MUST "
              "include an Accept header, listing text/event-stream as a supported content type."),
        "a GET to the MCP endpoint whose Accept header lacks text/event-stream", ("http:GET",), _SESSION_ERA),
    Requirement(
        "notification-202", _AREA, SERVER, since("2025-03-26", MUST),
        quote("2025-11-25", "Transports › Streamable HTTP › Sending Messages to the Server", "If the server accepts "
              "the input, the server MUST return HTTP status code 202 Accepted with no body."),
        "a POST that carried only notifications or responses answered with another 2xx status, or 202 with a body",
        ("post-notification",), _POST),
    Requirement(
        "status-202-for-request", _AREA, SERVER, since("2025-03-26", MUST), spec.ACCEPTED_202,
        "a POST that carried a request answered 202 Accepted: no response can follow", ("post-request",), _POST),
    Requirement(
        "get-sse-or-405", _AREA, SERVER, since("2025-03-26", MUST, "2025-11-25"),
        quote("2025-11-25", "Transports › Streamable HTTP › Listening for Messages from the Server", "The server MUST "
              "either return Content-Type: text/event-stream in response to this HTTP GET, or else return HTTP 405 "
              "Method Not Allowed, indicating that the server does not offer an SSE stream at this endpoint."),
        "a GET on a session answered with a 2xx status that is not an event stream", ("http:GET",), _SESSION_ERA),
    Requirement(
        "response-on-get-stream", _AREA, SERVER, since("2025-03-26", MUST_NOT, "2025-11-25"), spec.GET_STREAM,
        "a response on the standalone GET stream, which resumes no stream (warning)", ("get-stream",), _SESSION_ERA),
    Requirement(
        "post-single-message", _AREA, CLIENT, since("2025-06-18", MUST),
        quote("2025-11-25", "Transports › Streamable HTTP › Sending Messages to the Server", "The body of the POST "
              "request MUST be a single JSON-RPC request, notification, or response."),
        "a POST whose body is a JSON-RPC batch, on a revision that removed batching (2025-06-18 on)",
        ("http:POST",), _POST),
    Requirement(
        "header-mismatch", _AREA, CLIENT, {"2026-07-28": MUST}, spec.HEADERS_2026,
        "Mcp-Method, Mcp-Name (decoded), Mcp-Param-* or MCP-Protocol-Version that disagree with the body",
        ("post-request",),
        frozenset({STATELESS})),
    Requirement(
        "header-encoding", _AREA, CLIENT, {"2026-07-28": MUST}, spec.HEADER_ENCODING,
        "an Mcp-Name or Mcp-Param-* value that is not plain header-safe ASCII and not a valid =?base64?…?= form",
        ("post-request",), frozenset({STATELESS})),
    Requirement(
        "origin-validated", "HTTP security", SERVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Transports › Streamable HTTP › Security Warning", "Servers MUST validate the Origin "
              "header on all incoming connections to prevent DNS rebinding attacks"),
        "a request from a web page of another site (an Origin that is not http(s) on a loopback name, or null) to "
        "a server reached on loopback (a loopback Host) answered with a 2xx status: what a DNS rebinding attack "
        "needs (the 2024-11-05 HTTP+SSE transport has the same sentence)", ("foreign-origin",), HTTP),
    Requirement(
        "sse-endpoint-event", _LEGACY, SERVER, since("2024-11-05", MUST),
        quote("2024-11-05", "Transports › HTTP with SSE", "When a client connects, the server MUST send an endpoint "
              "event containing a URI for the client to use for sending messages."),
        "a legacy channel whose endpoint event carries no URI, or comes after a message event (it is due when the "
        "client connects)", ("legacy-channel",), _LEGACY_ONLY),
    Requirement(
        "sse-post-to-endpoint", _LEGACY, CLIENT, since("2024-11-05", MUST),
        quote("2024-11-05", "Transports › HTTP with SSE", "All subsequent client messages MUST be sent as HTTP POST "
              "requests to this endpoint."),
        "a client message of a legacy session (its id in the query) sent to another path than the endpoint "
        "announced, or by another method than POST", ("legacy-channel",), _LEGACY_ONLY),
    # a dual-era client and a server of another era (docs/negotiation.md)
    Requirement(
        "no-fallback", _ERAS, CLIENT, {"2026-07-28": SHOULD}, spec.FALLBACK_HTTP,
        "a legacy server's answer to server/discover and no initialize after it: said, not blamed, since a "
        "2026-only client rightly stops (info)", ("m:server/discover",), observation=True),
    Requirement(
        "fallback-on-modern-error", _ERAS, CLIENT, {"2026-07-28": SHOULD}, spec.STAY_MODERN,
        "an initialize after server/discover got a modern error (-32020, -32021, -32022)", ("m:server/discover",)),
    Requirement(
        "discover-refused", _ERAS, SERVER, {"2026-07-28": MUST}, spec.DISCOVER,
        "server/discover refused as a legacy server would by a server the tape shows answering 2026-07-28 "
        "requests", ("m:server/discover",)),
    Requirement(
        "request-after-close", "stdio", NONE, since("2024-11-05", MAY), spec.STDIO_SHUTDOWN,
        "a request sent to a side that had already left: nobody could answer it (info)", ("stdio-eof",),
        frozenset({STDIO}), observation=True),
]
