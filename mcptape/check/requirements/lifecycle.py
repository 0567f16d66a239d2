"""Lifecycle and version negotiation (Basic › Lifecycle): the handshake, before the 2026-07-28 revision."""

from .. import spec
from ...model import LEGACY_SSE, STDIO
from . import CLIENT, MUST, RECEIVER, SERVER, SESSIONS, SHOULD_NOT, Requirement, quote, since

_AREA = "lifecycle"
_HANDSHAKE = "2025-11-25"  # the last revision with a handshake

REQUIREMENTS = [
    Requirement(
        "initialize-first", _AREA, CLIENT, since("2024-11-05", MUST, _HANDSHAKE),
        quote("2025-11-25", "Basic › Lifecycle › Initialization", "The initialization phase MUST be the first "
              "interaction between client and server."),
        "the client's first message on a stdio server or a legacy SSE channel is not initialize",
        ("first-message",), frozenset({STDIO, LEGACY_SSE})),
    Requirement(
        "initialize-request-fields", _AREA, CLIENT, since("2024-11-05", MUST, _HANDSHAKE),
        quote("2025-11-25", "Basic › Lifecycle › Initialization", "The client MUST initiate this phase by sending an "
              "initialize request containing: Protocol version supported; Client capabilities; Client "
              "implementation information"),
        "an initialize request without a string protocolVersion, a capabilities object or a clientInfo object",
        ("m:initialize",), SESSIONS),
    Requirement(
        "initialize-result-fields", _AREA, SERVER, since("2024-11-05", MUST, _HANDSHAKE),
        quote("2025-11-25", "Basic › Lifecycle › Initialization", "The server MUST respond with its own "
              "capabilities and information:"),
        "an initialize result without a string protocolVersion, a capabilities object or a serverInfo object",
        ("initialize-result",), SESSIONS),
    Requirement(
        "initialized-sent", _AREA, CLIENT, since("2024-11-05", MUST, _HANDSHAKE),
        quote("2025-11-25", "Basic › Lifecycle › Initialization", "After successful initialization, the client MUST "
              "send an initialized notification to indicate it is ready to begin normal operations:"),
        "the client went on with a request (other than ping) after initialize succeeded without sending "
        "notifications/initialized first", ("initialize-result",), SESSIONS),
    Requirement(
        "request-before-initialize", _AREA, CLIENT, since("2024-11-05", SHOULD_NOT, _HANDSHAKE),
        spec.INITIALIZE_FIRST, "on stdio, a request other than ping sent before initialize was answered (warning)",
        ("m:initialize",), SESSIONS),
    Requirement(
        "server-request-before-initialized", _AREA, SERVER, since("2024-11-05", SHOULD_NOT, _HANDSHAKE),
        quote("2025-11-25", "Basic › Lifecycle › Initialization", "The server SHOULD NOT send requests other than "
              "pings and logging before receiving the initialized notification."),
        "a server request other than ping in a session whose client has not sent notifications/initialized",
        ("server-request",), SESSIONS),
    Requirement(
        "ping-empty-result", _AREA, RECEIVER, since("2024-11-05", MUST),
        quote("2025-11-25", "Basic › Utilities › Ping", "The receiver MUST respond promptly with an empty response:"),
        "a ping answered with a result that is not an empty object (its _meta aside)", ("m:ping",)),
]
