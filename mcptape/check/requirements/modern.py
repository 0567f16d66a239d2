"""The 2026-07-28 revision's own requirements (issue 34): the per-request `_meta` fields, `resultType`, multi
round-trip requests (`input_required`), caching hints, `subscriptions/listen`, trace context. Judged by
check/modern.py; each holds in 2026-07-28 alone (the earlier revisions have none of these fields)."""

from . import CLIENT, MUST, MUST_NOT, SENDER, SERVER, SHOULD, Requirement, quote, since

_META = "meta"
_MRTR = "mrtr"
_CACHE = "caching"
_LISTEN = "subscriptions"
_R = "2026-07-28"
_MODERN = since(_R, MUST)
_MRTR_PAGE = "Basic › Patterns › Multi Round-Trip Requests"
_LISTEN_PAGE = "Basic › Patterns › Subscriptions"
_CACHED = ("m:server/discover", "m:tools/list", "m:prompts/list", "m:resources/list", "m:resources/templates/list",
           "m:resources/read")


def _in(section: str, sentence: str) -> str:
    return quote(_R, section, sentence)


REQUIREMENTS = [
    Requirement(
        "meta-required-fields", _META, CLIENT, _MODERN,
        _in("Basic › General fields › _meta", "Client requests carry the following io.modelcontextprotocol/* fields "
            "in _meta; fields marked as required MUST be included on every request."),
        "a client request whose params._meta lacks io.modelcontextprotocol/protocolVersion or "
        "io.modelcontextprotocol/clientCapabilities", ("request",)),
    Requirement(
        "meta-missing-rejected", _META, SERVER, _MODERN,
        _in("Basic › General fields › _meta", "A request missing any required field is malformed; the server MUST "
            "reject it with JSON-RPC error code -32602 (Invalid params)."),
        "a client request without a required _meta field answered with a result, or an error code other than "
        "-32602", ("request",)),
    Requirement(
        "meta-client-info", _META, CLIENT, since(_R, SHOULD),
        _in("Basic › General fields › _meta", "Clients SHOULD include io.modelcontextprotocol/clientInfo on every "
            "request unless specifically configured not to do so."),
        "a client request whose params._meta has no io.modelcontextprotocol/clientInfo", ("request",)),
    Requirement(
        "traceparent-format", _META, SENDER, _MODERN,
        _in("Basic › General fields › _meta", "When present, their values MUST follow W3C Trace Context and W3C "
            "Baggage formats respectively."),
        "a _meta traceparent (of a request, or a notification of either side) that is not "
        "version-traceid-parentid-flags in lower-case hex (2, 32, 16, 2 digits; version ff and all-zero ids "
        "invalid)", ("traceparent",)),
    Requirement(
        "result-type", _META, SERVER, _MODERN,
        _in("Basic › Messages › Responses › Result Responses", "The result MUST include a resultType field to "
            "indicate the type of the result."),
        "a result to a client request without a string resultType", ("m:server/discover", "m:tools/call",
                                                                      "m:tools/list")),
    Requirement(
        "input-required-methods", _MRTR, SERVER, since(_R, MUST_NOT),
        _in(f"{_MRTR_PAGE} › Supported Requests", "Servers MUST NOT send InputRequiredResult "
            "responses on any other client requests."),
        "a resultType input_required answering a request other than prompts/get, resources/read or tools/call",
        ("input-required",)),
    Requirement(
        "input-required-content", _MRTR, SERVER, _MODERN,
        _in(f"{_MRTR_PAGE} › Server Requirements (Basic Workflow)", "Servers MUST include at "
            "least one of inputRequests or requestState in every InputRequiredResult response."),
        "an input_required result with neither inputRequests nor requestState", ("input-required",)),
    Requirement(
        "input-requests-kinds", _MRTR, SERVER, _MODERN,
        _in(f"{_MRTR_PAGE} › Server Requirements (Basic Workflow)", "inputRequests values are "
            "request objects that MUST be one of ElicitRequest, CreateMessageRequest, or ListRootsRequest"),
        "an inputRequests value whose method is not elicitation/create, sampling/createMessage or roots/list",
        ("input-required",)),
    Requirement(
        "input-requests-declared", _MRTR, SERVER, since(_R, MUST_NOT),
        _in(f"{_MRTR_PAGE} › Server Requirements (Basic Workflow)", "Servers MUST NOT send an "
            "inputRequests that the client has not declared support for in its capabilities."),
        "an inputRequests entry (elicitation/create, sampling/createMessage, roots/list) whose capability the "
        "request's _meta clientCapabilities does not declare", ("input-required",)),
    Requirement(
        "retry-echoes-state", _MRTR, CLIENT, _MODERN,
        _in(f"{_MRTR_PAGE} › Client Requirements (Basic Workflow)", "If an InputRequiredResult "
            "contains the requestState field, the client MUST echo back the exact value of that field when retrying "
            "the original request."),
        "the retry (the next request of the same method and name carrying inputResponses or requestState) whose "
        "requestState differs from the one the input_required result gave", ("retry",)),
    Requirement(
        "retry-new-id", _MRTR, CLIENT, _MODERN,
        _in(f"{_MRTR_PAGE} › Client Requirements (Basic Workflow)", "The JSON-RPC id MUST be "
            "different between the initial request and the retry, as they are independent requests."),
        "a retry carrying inputResponses or requestState with the id of the request that got input_required",
        ("retry",)),
    Requirement(
        "server-requests-mrtr", _MRTR, SERVER, _MODERN,
        _in(_MRTR_PAGE,
            "Servers MUST send server-to-client requests (such as roots/list, "
            "sampling/createMessage, or elicitation/create) using the MRTR pattern."),
        "a roots/list, sampling/createMessage or elicitation/create request sent by the server on its own",
        ("request",)),
    Requirement(
        "cache-hints", _CACHE, SERVER, _MODERN,
        _in("Server › Utilities › Caching › Cacheable Results", "Servers MUST include caching hints on results with "
            "resultType: \"complete\" returned by the following operations:"),
        "a complete result of server/discover, tools/list, prompts/list, resources/list, resources/templates/list "
        "or resources/read with neither ttlMs nor cacheScope", _CACHED),
    Requirement(
        "ttl-non-negative", _CACHE, SERVER, _MODERN,
        _in("Server › Utilities › Caching › Cacheable Model › Time-to-Live (TTL) Field", "Servers MUST provide a "
            "ttlMs value that is >= 0."),
        "a result whose ttlMs is not a non-negative integer", _CACHED),
    Requirement(
        "cache-scope-pages", _CACHE, SERVER, _MODERN,
        _in("Server › Utilities › Caching › Interaction with Pagination", "Servers MUST apply the same cacheScope to "
            "all response pages for a given list request."),
        "a later page of a listing (a request with the cursor the previous page issued) whose cacheScope differs "
        "from the first page's", ("cursor",)),
    Requirement(
        "listen-acknowledged-first", _LISTEN, SERVER, _MODERN,
        _in(f"{_LISTEN_PAGE} › Acknowledgment", "The server MUST send notifications/subscriptions/acknowledged "
            "as the first message carrying the subscription's ID in _meta under "
            "io.modelcontextprotocol/subscriptionId, and MUST NOT send any notification on the subscription before "
            "it."),
        "a notification of a subscription (its subscriptionId) before that subscription's acknowledgement",
        ("m:subscriptions/listen",)),
    Requirement(
        "listen-requested-only", _LISTEN, SERVER, since(_R, MUST_NOT),
        _in(f"{_LISTEN_PAGE} › Opening a Stream", "The server MUST NOT send notification types the client has "
            "not explicitly requested."),
        "a notification on a subscription whose filter did not ask for it (toolsListChanged, promptsListChanged, "
        "resourcesListChanged, resourceSubscriptions for notifications/resources/updated)",
        ("m:subscriptions/listen",)),
    Requirement(
        "listen-subscription-id", _LISTEN, SERVER, _MODERN,
        _in("Basic › General fields › _meta", "On notifications delivered via a subscriptions/listen stream, the "
            "server MUST include io.modelcontextprotocol/subscriptionId in _meta so the client can correlate the "
            "notification with the originating subscription request."),
        "a notification on the HTTP stream of a subscriptions/listen request without "
        "io.modelcontextprotocol/subscriptionId in _meta; on stdio (one channel, where \"clients MUST use this field "
        "to correlate notifications with their originating subscription\"), a list_changed or resources/updated "
        "notification without it while a subscriptions/listen is open: only a subscription delivers those",
        ("m:subscriptions/listen",)),
]
