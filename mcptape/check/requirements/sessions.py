"""Session management on Streamable HTTP (2025-03-26 … 2025-11-25): the id, its echo, the protocol version
header, the end of a session; and what the recording itself shows (observations, never a side's fault)."""

from .. import spec
from ...model import STREAMABLE
from . import CLIENT, HTTP, MAY, MUST, NONE, SENDER, SERVER, SHOULD, TRANSPORTS, Requirement, quote, since

_AREA = "sessions"
_SESSIONS = frozenset({STREAMABLE})
_DEAD = ("session-dead",)

REQUIREMENTS = [
    Requirement(
        "session-id-visible-ascii", _AREA, SERVER, since("2025-03-26", MUST, "2025-11-25"),
        quote("2025-11-25", "Transports › Streamable HTTP › Session Management", "The session ID MUST only contain "
              "visible ASCII characters (ranging from 0x21 to 0x7E)."),
        "an MCP-Session-Id a server assigned with a character outside 0x21-0x7E", ("session-id",), _SESSIONS),
    Requirement(
        "missing-session-id", _AREA, CLIENT, since("2025-03-26", MUST, "2025-11-25"), spec.SESSION_HEADER,
        "a request without MCP-Session-Id refused for it by a server of the session era", ("session-id",),
        _SESSIONS),
    Requirement(
        "protocol-version-mismatch", _AREA, CLIENT, since("2025-06-18", MUST, "2025-11-25"), spec.VERSION_HEADER,
        "a request of an initialized session without MCP-Protocol-Version, or with another version than the one "
        "negotiated (warning)", ("session-id",), _SESSIONS),
    Requirement(
        "version-header-invalid-400", _AREA, SERVER, since("2025-06-18", MUST, "2025-11-25"),
        quote("2025-11-25", "Transports › Streamable HTTP › Protocol Version Header", "If the server receives a "
              "request with an invalid or unsupported MCP-Protocol-Version, it MUST respond with 400 Bad Request."),
        "a request whose MCP-Protocol-Version is not a revision date (YYYY-MM-DD) answered with a 2xx status",
        ("bad-version-header",), _SESSIONS),
    Requirement(
        "wrong-status-for-dead-session", _AREA, SERVER, since("2025-03-26", MUST, "2025-11-25"), spec.SESSION_404,
        "a request with a session the tape shows gone answered with another status than 404 (warning)", _DEAD,
        _SESSIONS),
    Requirement(
        "dead-session-reuse", _AREA, CLIENT, since("2025-03-26", MUST, "2025-11-25"), spec.REINITIALIZE,
        "requests that still carry a session id after it was refused, expired or deleted", _DEAD, _SESSIONS),
    Requirement(
        "no-reinitialize", _AREA, CLIENT, since("2025-03-26", MUST, "2025-11-25"), spec.REINITIALIZE,
        "after 404 for its session, the client never sent a new initialize without a session id", ("session-404",),
        _SESSIONS),
    Requirement(
        "no-resume-after-close", _AREA, SENDER, {"2025-11-25": SHOULD}, spec.RESUME,
        "a request's stream closed by the server after an event id, never resumed with a GET and Last-Event-ID "
        "(warning)", ("sse-event-id",), _SESSIONS),
    Requirement(
        "delete-with-session", _AREA, CLIENT, since("2025-03-26", SHOULD, "2025-11-25"),
        quote("2025-11-25", "Transports › Streamable HTTP › Session Management", "Clients that no longer need a "
              "particular session (e.g., because the user is leaving the client application) SHOULD send an HTTP "
              "DELETE to the MCP endpoint with the MCP-Session-Id header, to explicitly terminate the session."),
        "a DELETE to the MCP endpoint without MCP-Session-Id: it terminates nothing (warning); what follows a "
        "DELETE the server accepted is judged by dead-session-reuse and wrong-status-for-dead-session",
        ("http:DELETE",), _SESSIONS),
    Requirement(
        "auth-rejected", _AREA, NONE, since("2024-11-05", MAY), spec.AUTH,
        "a request refused with 401 or 403 (info)", ("status:401", "status:403"), HTTP, observation=True),
    Requirement(
        "dead-id-reuse", _AREA, NONE, since("2024-11-05", MAY), spec.DEAD_ID,
        "an id a server handed out in one session, sent in a later one and refused as not found (a warning that "
        "blames nobody: the spec promises nothing of a tool's own ids)", ("error",)),
    Requirement(
        "capture-incomplete", _AREA, NONE, since("2024-11-05", MAY), spec.CAPTURE,
        "the recording began or ended mid-conversation (info)", ("record",), TRANSPORTS, observation=True),
]
