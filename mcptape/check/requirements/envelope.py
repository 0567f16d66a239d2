"""The JSON-RPC envelope and ids, and the correlation of requests and responses (Basic › Messages)."""

from .. import spec
from . import CLIENT, MUST, MUST_NOT, RECEIVER, SENDER, Requirement, quote, since

_ENVELOPE = "JSON-RPC envelope"
_CORRELATION = "correlation"

REQUIREMENTS = [
    Requirement(
        "jsonrpc-version", _ENVELOPE, SENDER, since("2024-11-05", MUST),
        quote("2025-11-25", "Basic › Messages", "All messages between MCP clients and servers MUST follow the "
              "JSON-RPC 2.0 specification."),
        'a message without "jsonrpc": "2.0"', ("message",)),
    Requirement(
        "utf-8", _ENVELOPE, SENDER, since("2024-11-05", MUST),
        quote("2025-11-25", "Transports", "JSON-RPC messages MUST be UTF-8 encoded."),
        "a body, SSE event or stdio line that is not UTF-8", ("message",)),
    Requirement(
        "request-id-type", _ENVELOPE, SENDER, since("2024-11-05", MUST),
        quote("2025-11-25", "Basic › Messages › Requests", "Requests MUST include a string or integer ID."),
        "a request whose id is a boolean, a fraction, an object or an array", ("request",)),
    Requirement(
        "request-id-not-null", _ENVELOPE, SENDER, since("2024-11-05", MUST_NOT),
        quote("2025-11-25", "Basic › Messages › Requests", "Unlike base JSON-RPC, the ID MUST NOT be null."),
        "a request whose id is null", ("request",)),
    Requirement(
        "notification-without-id", _ENVELOPE, SENDER, since("2024-11-05", MUST_NOT),
        quote("2025-11-25", "Basic › Messages › Notifications", "Notifications MUST NOT include an ID."),
        "a message of a notifications/… method that carries an id", ("notification",)),
    Requirement(
        "response-result-or-error", _ENVELOPE, SENDER, since("2024-11-05", MUST),
        quote("2025-06-18", "Basic › Messages › Responses", "Either a result or an error MUST be set."),
        "a message with an id and no method that has neither result nor error", ("response", "error")),
    Requirement(
        "response-not-both", _ENVELOPE, SENDER, since("2024-11-05", MUST_NOT),
        quote("2025-06-18", "Basic › Messages › Responses", "A response MUST NOT set both."),
        "a response that carries both result and error", ("response", "error")),
    Requirement(
        "error-code-and-message", _ENVELOPE, SENDER, since("2024-11-05", MUST),
        quote("2025-11-25", "Basic › Messages › Error Responses", "Error responses MUST include an error field with "
              "a code and message."),
        "an error that is not an object, or lacks its code or its message", ("error",)),
    Requirement(
        "error-code-integer", _ENVELOPE, SENDER, since("2024-11-05", MUST),
        quote("2025-11-25", "Basic › Messages › Error Responses", "Error codes MUST be integers."),
        "an error code that is a fraction, a string or anything but an integer", ("error",)),
    Requirement(
        "error-code-reserved", _ENVELOPE, SENDER, {"2026-07-28": MUST_NOT},
        quote("2026-07-28", "Basic › Messages › Error Codes", "Implementations MUST NOT emit any code from this "
              "sub-range that is not defined by this specification and MUST use defined codes only with their "
              "specified meanings."),
        "an error code from -32020 to -32099 that the specification does not define (it defines -32020, -32021, "
        "-32022)", ("error",)),
    Requirement(
        "error-code-retired", _ENVELOPE, SENDER, {"2026-07-28": MUST_NOT},
        quote("2026-07-28", "Basic › Messages › Error Codes", "Implementations of this protocol version MUST NOT "
              "emit these codes:"),
        "-32002 (resource not found, now -32602) or -32042 (URL elicitation required) in a 2026-07-28 session",
        ("error",)),
    Requirement(
        "initialize-not-in-batch", _ENVELOPE, CLIENT, {"2025-03-26": MUST_NOT},
        quote("2025-03-26", "Basic › Lifecycle › Initialization", "The initialize request MUST NOT be part of a "
              "JSON-RPC batch, as other requests and notifications are not possible until initialization has "
              "completed."),
        "a batch that holds an initialize request", ("m:initialize",)),
    Requirement(
        "malformed-message", _ENVELOPE, SENDER, since("2024-11-05", MUST), spec.MALFORMED_STDIO,
        "a stdio line, a POST body, a 2xx answer or an SSE event on the MCP endpoint that is not JSON-RPC "
        "(error on stdio, warning over HTTP)", ("message",)),
    Requirement(
        "duplicate-request-id", _CORRELATION, SENDER, since("2024-11-05", MUST_NOT), spec.REQUEST_ID,
        "a request id used again in the same session (from 2026-07-28: while the first is in flight)",
        ("request",)),
    Requirement(
        "orphan-response", _CORRELATION, SENDER, since("2024-11-05", MUST), spec.RESPONSE_ID,
        "an answer whose id matches no request sent the other way in the session (warning)",
        ("response", "error")),
    Requirement(
        "duplicate-response", _CORRELATION, RECEIVER, since("2024-11-05", MUST), spec.RESPONSE_ID,
        "a second answer to a request already answered (warning)", ("response", "error")),
    Requirement(
        "unanswered-request", _CORRELATION, RECEIVER, since("2024-11-05", MUST), spec.RESPONSE,
        "a request never answered although its stream, process or session ended", ("request",)),
]
