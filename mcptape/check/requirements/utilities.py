"""Progress and cancellation (Basic › Utilities)."""

from .. import spec
from ...model import STREAMABLE
from . import CLIENT, MUST, MUST_NOT, NONE, RECEIVER, SENDER, SHOULD, SHOULD_NOT, Requirement, quote, since

_PROGRESS = "progress"
_CANCEL = "cancellation"
_PROGRESS_SEEN = ("m:notifications/progress",)
_CANCEL_SEEN = ("m:notifications/cancelled",)

REQUIREMENTS = [
    Requirement(
        "progress-token-type", _PROGRESS, SENDER, since("2024-11-05", MUST),
        quote("2025-11-25", "Basic › Utilities › Progress", "Progress tokens MUST be a string or integer value"),
        "a request whose _meta.progressToken is neither a string nor an integer", ("progress-token",)),
    Requirement(
        "progress-token-unique", _PROGRESS, SENDER, since("2024-11-05", MUST),
        quote("2025-11-25", "Basic › Utilities › Progress", "Progress tokens can be chosen by the sender using any "
              "means, but MUST be unique across all active requests."),
        "a request that asks progress under a token another request in flight in the session already uses",
        ("progress-token",)),
    Requirement(
        "progress-known-token", _PROGRESS, SENDER, since("2024-11-05", MUST),
        quote("2025-11-25", "Basic › Utilities › Progress", "Progress notifications MUST only reference tokens "
              "that: Were provided in an active request; Are associated with an in-progress operation"),
        "a progress notification whose token no request of the session ever asked under (one that comes after the "
        "answer is progress-after-response)", _PROGRESS_SEEN),
    Requirement(
        "progress-not-increasing", _PROGRESS, RECEIVER, since("2024-11-05", MUST), spec.PROGRESS,
        "progress values of one request that do not increase (warning)", _PROGRESS_SEEN),
    Requirement(
        "progress-after-response", _PROGRESS, RECEIVER, since("2024-11-05", MUST), spec.PROGRESS,
        "a progress notification after the request's final response (warning)", _PROGRESS_SEEN),
    Requirement(
        "cancel-not-initialize", _CANCEL, CLIENT, since("2024-11-05", MUST_NOT, "2025-11-25"),
        quote("2025-11-25", "Basic › Utilities › Cancellation", "The initialize request MUST NOT be cancelled by "
              "clients"),
        "notifications/cancelled naming the session's initialize request", _CANCEL_SEEN),
    Requirement(
        "cancelled-without-response", _CANCEL, NONE, since("2024-11-05", SHOULD_NOT), spec.CANCELLATION,
        "a cancelled request left unanswered, as the spec recommends (info)", _CANCEL_SEEN, observation=True),
    Requirement(
        "response-after-cancel", _CANCEL, NONE, since("2024-11-05", SHOULD_NOT), spec.CANCELLATION,
        "an answer after a cancellation: a race the spec allows (info)", _CANCEL_SEEN, observation=True),
    Requirement(
        "dangling-stream", _CANCEL, RECEIVER, since("2025-03-26", SHOULD, "2025-11-25"), spec.CANCELLATION,
        "after a cancellation the request's SSE stream stayed open (warning)", _CANCEL_SEEN,
        frozenset({STREAMABLE})),
]
