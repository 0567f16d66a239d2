"""The feature requests a peer asks besides calling tools, judged when they settle (requirements/features.py):
prompts/get against the arguments a prompt lists, logging/setLevel, completion/complete, roots/list, sampling and its
tool results, elicitation forms, resource subscriptions; and what a session remembers for them and for features.py
(the server's prompts and tools, the cursors it issued, the client's capabilities), bounded per session."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..model import Call
from .finding import Finding, broke_call

@dataclass(slots=True)
class ServerState:
    outputs: dict[str, Any] = field(default_factory=dict)  # tool name -> its outputSchema
    validators: dict[str, Any] = field(default_factory=dict)  # tool name -> compiled validator (on first use)
    listing: set[str] = field(default_factory=set)  # tool names of the listing in progress (pages)
    inputs: dict[str, Any] = field(default_factory=dict)  # tool name -> its inputSchema
    input_validators: dict[str, Any] = field(default_factory=dict)
    cursors: set[str] = field(default_factory=set)
    prompts: dict[str, tuple] = field(default_factory=dict)  # prompt name -> its required arguments
    subscribed: set[str] = field(default_factory=set)  # resource uris the client subscribed to
    client: dict = field(default_factory=dict)  # the client's capabilities (empty: none declared, or not seen)


def list_of(value: Any) -> list:
    return value if isinstance(value, list) else []


def items_of(content: Any) -> list[dict]:
    if isinstance(content, list):
        return [item for item in content if isinstance(item, dict)]
    return [content] if isinstance(content, dict) else []


LEVELS = frozenset({"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_MAX_REMEMBERED = 10_000  # prompts and subscriptions remembered per session


def _params(call: Call) -> dict:
    params = (call.request or {}).get("params")
    return params if isinstance(params, dict) else {}


def answered_not(response: dict, code: int) -> str | None:
    """How a request the spec wants refused with `code` was answered otherwise (None: with that code, or not yet)."""
    error = response.get("error")
    if "result" in response:
        return "a result"
    if isinstance(error, dict) and error.get("code") != code:
        return f"error {error.get('code')!r:.20}"
    return None


def remember_prompts(state: ServerState, result: dict) -> None:
    for prompt in list_of(result.get("prompts")):
        if isinstance(prompt, dict) and isinstance(prompt.get("name"), str) and len(state.prompts) < _MAX_REMEMBERED:
            state.prompts[prompt["name"]] = tuple(
                a["name"] for a in list_of(prompt.get("arguments"))
                if isinstance(a, dict) and a.get("required") is True and isinstance(a.get("name"), str))


def resources_listed(call: Call, result: dict) -> list[Finding]:
    for resource in list_of(result.get("resources")):
        uri = resource.get("uri") if isinstance(resource, dict) else None
        if isinstance(uri, str) and not _SCHEME.match(uri):
            return broke_call("resource-uri-scheme", call, f"the resource uri {uri[:80]!r} has no URI scheme")
    return []


def templates_listed(call: Call, result: dict) -> list[Finding]:
    for template in list_of(result.get("resourceTemplates")):
        template = template if isinstance(template, dict) else {}
        missing = [k for k in ("uriTemplate", "name") if not isinstance(template.get(k), str)]
        if missing:
            return broke_call("resource-template-fields", call, f"a resource template without a string "
                              f"{' nor '.join(missing)}")
    return []


def unvalidated(call: Call, state: ServerState, name: str, arguments: Any) -> list[Finding]:
    validator = state.input_validators.get(name)
    if validator is None:
        validator = state.input_validators[name] = validator_for(state.inputs[name]) or False
    if validator is False:
        return []
    try:
        error = next(iter(validator.iter_errors(arguments if arguments is not None else {})), None)
    except Exception:  # noqa: BLE001 - a $ref that cannot be resolved offline, a schema too deep: not judged
        error = None
    if error is None:
        return []
    return broke_call("tool-inputs-validated", call, f"the server ran {name!r:.80} on arguments its inputSchema "
                      f"refuses ({error.message[:100]}) and answered with a success result")


def _get_prompt(call: Call, state: ServerState, response: dict) -> list[Finding]:
    params = _params(call)
    name = params.get("name")
    required = state.prompts.get(name) if isinstance(name, str) else None
    given = params.get("arguments")
    given = given if isinstance(given, dict) else {}
    missing = [a for a in required or () if a not in given]
    found: list[Finding] = []
    said = answered_not(response, -32602) if missing else None
    if said:
        found += broke_call("prompt-errors-invalid-params", call, f"prompts/get without the required argument "
                            f"{missing[0][:60]!r} answered with {said}, not -32602")
    result = response.get("result")
    for message in list_of(result.get("messages") if isinstance(result, dict) else None):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            found += broke_call("prompt-message-role", call, f"a prompt message whose role is {role!r:.40}")
            break
    return found


def _set_level(call: Call, state: ServerState, response: dict) -> list[Finding]:
    level = _params(call).get("level")
    if isinstance(level, str) and level in LEVELS:
        return []
    found = broke_call("log-level-valid", call, f"logging/setLevel asks for the level {level!r:.40}")
    said = answered_not(response, -32602)
    if said:
        found += broke_call("log-level-invalid-params", call, f"the server answered logging/setLevel {level!r:.40} "
                            f"with {said}, not -32602")
    return found


def _complete(call: Call, state: ServerState, response: dict) -> list[Finding]:
    result = response.get("result")
    if not isinstance(result, dict):
        return []
    completion = result.get("completion")
    values = completion.get("values") if isinstance(completion, dict) else None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return broke_call("completion-result-fields", call, "the completion/complete result has no completion.values "
                          "array of strings")
    if len(values) > 100:
        return broke_call("completion-values-max", call, f"the completion/complete result has {len(values)} values")
    return []


def _roots(call: Call, state: ServerState, response: dict) -> list[Finding]:
    result = response.get("result")
    if isinstance(result, dict):
        for root in list_of(result.get("roots")):
            uri = root.get("uri") if isinstance(root, dict) else None
            if not (isinstance(uri, str) and uri.startswith("file://")):
                return broke_call("root-uri-file", call, f"the root {uri!r:.80} is not a file:// URI")
        return []
    error = response.get("error")
    if state.client.get("roots") is None and isinstance(error, dict) and error.get("code") != -32601:
        return broke_call("roots-errors-method-not-found", call, f"a client without roots answered roots/list with "
                          f"error {error.get('code')!r:.20}, not -32601")
    return []


def _sampling(call: Call, state: ServerState, response: dict) -> list[Finding]:
    params = _params(call)
    found: list[Finding] = []
    context = params.get("includeContext")
    sampling = state.client.get("sampling")
    if context in ("thisServer", "allServers") and not (isinstance(sampling, dict) and "context" in sampling):
        found += broke_call("sampling-include-context", call, f"includeContext {context} to a client whose sampling "
                            f"capability has no context")
    pending: set | None = None  # the tool use ids the previous assistant message left to answer
    for message in list_of(params.get("messages")):
        if not isinstance(message, dict):
            continue
        items = items_of(message.get("content"))
        kinds = {item.get("type") for item in items}
        if pending is not None:
            answered = {item.get("toolUseId") for item in items if item.get("type") == "tool_result"}
            if message.get("role") != "user" or kinds != {"tool_result"} or not pending <= answered:
                found += broke_call("sampling-tool-use-answered", call, "an assistant message's tool_use is not "
                                    "followed by a user message of tool_result items answering each of its ids")
            pending = None
        if message.get("role") == "user" and "tool_result" in kinds and kinds != {"tool_result"}:
            found += broke_call("sampling-tool-results-only", call, f"a user message mixes tool_result with "
                                f"{', '.join(sorted(str(k) for k in kinds - {'tool_result'}))[:60]}")
        if message.get("role") == "assistant" and "tool_use" in kinds:
            pending = {item.get("id") for item in items if item.get("type") == "tool_use"}
    return found


def form(call: Call, params: dict) -> list[Finding]:
    """A form-mode elicitation: its requestedSchema, and that schema flat (primitive properties only)."""
    schema = params.get("requestedSchema")
    if not isinstance(schema, dict):
        return broke_call("elicitation-form-fields", call, "a form-mode elicitation without a requestedSchema object")
    properties = schema.get("properties")
    for name, prop in (properties.items() if isinstance(properties, dict) else ()):
        if not isinstance(prop, dict):
            continue
        items = prop.get("items")
        nested = prop.get("type") == "object" or "properties" in prop or (
            prop.get("type") == "array" and not (isinstance(items, dict) and ("enum" in items or "anyOf" in items)))
        if nested:  # (an array of enum values is 2025-11-25's multi-select: primitive)
            return broke_call("elicitation-schema-flat", call, f"the requested property {name!r:.60} is not "
                              f"primitive (a nested object or a free array)")
    return []


def _subscribe(call: Call, state: ServerState, response: dict) -> list[Finding]:
    uri = _params(call).get("uri")
    if isinstance(uri, str) and "result" in response:
        if call.method == "resources/unsubscribe":
            state.subscribed.discard(uri)
        elif len(state.subscribed) < _MAX_REMEMBERED:
            state.subscribed.add(uri)
    return []


ASKED = {"prompts/get": _get_prompt, "logging/setLevel": _set_level, "completion/complete": _complete,
          "roots/list": _roots, "sampling/createMessage": _sampling, "resources/subscribe": _subscribe,
          "resources/unsubscribe": _subscribe}


def schema_problem(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return f"is {type(schema).__name__ if schema is not None else 'null'}, not a JSON Schema object"
    import jsonschema  # only when a tape lists tools

    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    except jsonschema.SchemaError as e:
        return f"is not a valid JSON Schema: {e.message[:120]}"
    except Exception:  # noqa: BLE001 - a schema too deep to check: not judged
        return None
    return None


def validator_for(schema: dict) -> Any:
    """A validator for the schema's own dialect (2020-12 when it names none); None when the schema is not valid (the
    tool-input-schema kind of problem: nothing to validate against)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except Exception:  # noqa: BLE001 - invalid, or too deep to check
        return None
    return cls(schema)

