"""Capability negotiation, both directions: every use of a feature against what the other side declared in the
handshake (Basic › Lifecycle › Operation), and each feature's own "MUST declare" (the server and client pages)."""

from . import CLIENT, MUST, MUST_NOT, SENDER, SERVER, SESSIONS, SHOULD, Requirement, quote, since

_AREA = "capabilities"
_HANDSHAKE = "2025-11-25"

# What each feature's requests and notifications need the other side to have declared: (capability, sub-key).
# Read by check/capabilities.py; the registry says which sentence a use breaks.
NEEDS = {
    "tools/list": ("tools", None), "tools/call": ("tools", None),
    "resources/list": ("resources", None), "resources/read": ("resources", None),
    "resources/templates/list": ("resources", None),
    "resources/subscribe": ("resources", "subscribe"), "resources/unsubscribe": ("resources", "subscribe"),
    "prompts/list": ("prompts", None), "prompts/get": ("prompts", None),
    "logging/setLevel": ("logging", None), "completion/complete": ("completions", None),
    "notifications/tools/list_changed": ("tools", "listChanged"),
    "notifications/resources/list_changed": ("resources", "listChanged"),
    "notifications/prompts/list_changed": ("prompts", "listChanged"),
    "notifications/resources/updated": ("resources", "subscribe"),
    "sampling/createMessage": ("sampling", None), "roots/list": ("roots", None),
    "elicitation/create": ("elicitation", None), "notifications/roots/list_changed": ("roots", "listChanged"),
}
# completion/complete had no capability before 2025-03-26, elicitation no method before 2025-06-18
NEEDS_SINCE = {"completion/complete": "2025-03-26", "elicitation/create": "2025-06-18"}


def _declare(capability: str, side: str, first: str, page: str, sentence: str) -> Requirement:
    methods = tuple(f"m:{m}" for m, (cap, sub) in NEEDS.items() if cap == capability and sub is None)
    return Requirement(
        f"declare-{capability}", _AREA, side, since(first, MUST, _HANDSHAKE),
        quote("2025-11-25", f"{page} › Capabilities", sentence),
        f"the {side} answered {', '.join(m[2:] for m in methods) or 'its notifications'} with a result, or sent "
        f"them, without declaring the `{capability}` capability in the handshake",
        methods if capability != "logging" else ("m:notifications/message",), SESSIONS)


REQUIREMENTS = [
    Requirement(
        "use-negotiated-capabilities", _AREA, SENDER,
        {**since("2024-11-05", SHOULD, "2025-03-26"), **since("2025-06-18", MUST, _HANDSHAKE)},
        quote("2025-11-25", "Basic › Lifecycle › Operation", "Both parties MUST: … Only use capabilities that were "
              "successfully negotiated"),
        "a request or notification of a feature the other side never declared in the handshake (tools, resources, "
        "subscribe, prompts, logging, completions, sampling, roots, elicitation, listChanged): a SHOULD until "
        "2025-03-26, a MUST from 2025-06-18", tuple(f"m:{m}" for m in NEEDS), SESSIONS),
    _declare("tools", SERVER, "2024-11-05", "Server › Tools",
             "Servers that support tools MUST declare the tools capability:"),
    _declare("resources", SERVER, "2024-11-05", "Server › Resources",
             "Servers that support resources MUST declare the resources capability:"),
    _declare("prompts", SERVER, "2024-11-05", "Server › Prompts",
             "Servers that support prompts MUST declare the prompts capability during initialization:"),
    _declare("logging", SERVER, "2024-11-05", "Server › Utilities › Logging",
             "Servers that emit log message notifications MUST declare the logging capability:"),
    _declare("completions", SERVER, "2025-03-26", "Server › Utilities › Completion",
             "Servers that support completions MUST declare the completions capability:"),
    _declare("sampling", CLIENT, "2024-11-05", "Client › Sampling",
             "Clients that support sampling MUST declare the sampling capability during initialization:"),
    _declare("roots", CLIENT, "2024-11-05", "Client › Roots",
             "Clients that support roots MUST declare the roots capability during initialization:"),
    _declare("elicitation", CLIENT, "2025-06-18", "Client › Elicitation",
             "Clients that support elicitation MUST declare the elicitation capability during initialization:"),
    Requirement(
        "sampling-tools-declared", _AREA, SERVER, {"2025-11-25": MUST_NOT},
        quote("2025-11-25", "Client › Sampling › Capabilities", "Servers MUST NOT send tool-enabled sampling "
              "requests to Clients that have not declared support for tool use via the sampling.tools capability."),
        "a sampling/createMessage with `tools` or `toolChoice` to a client whose sampling capability has no `tools`",
        ("m:sampling/createMessage",), SESSIONS),
]
