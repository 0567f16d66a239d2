"""Judges the features (requirements/features.py) on settled calls: the tools a server lists (names, schemas), what
a tool call returns against the tool's outputSchema (validated with the `jsonschema` library, in the dialect the
schema declares: a real validator, not a second one written here), content items, resource blobs, pagination
cursors, elicitation modes.

Per session it keeps the tools' output schemas, the cursors the server issued and the client's elicitation
capability: bounded by what the server lists, not by the tape's length.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..model import Call, Model, Observer, Seen
from ..tape import records
from .finding import Finding, broke, broke_call

LISTS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_MIME = re.compile(r"[\w.+-]+/[\w.+-]+(\s*;.*)?")
_MAX_CURSORS = 10_000  # cursors remembered per session: a listing of a few pages at a time


@dataclass(slots=True)
class _Server:
    outputs: dict[str, Any] = field(default_factory=dict)  # tool name -> its outputSchema
    validators: dict[str, Any] = field(default_factory=dict)  # tool name -> compiled validator (on first use)
    listing: set[str] = field(default_factory=set)  # tool names of the listing in progress (pages)
    inputs: dict[str, Any] = field(default_factory=dict)  # tool name -> its inputSchema
    input_validators: dict[str, Any] = field(default_factory=dict)
    cursors: set[str] = field(default_factory=set)
    prompts: dict[str, tuple] = field(default_factory=dict)  # prompt name -> its required arguments
    subscribed: set[str] = field(default_factory=set)  # resource uris the client subscribed to
    client: dict = field(default_factory=dict)  # the client's capabilities (empty: none declared, or not seen)


def content_items(method: str, response: dict | None) -> list[dict]:
    """The content items a call's answer carried: a tool's result, a prompt's messages, sampling's answer (whoever
    answered sent them). A list, not a generator: it runs for every call a tape makes."""
    result = response.get("result") if isinstance(response, dict) else None
    if not isinstance(result, dict):
        return []
    if method == "tools/call" or method == "sampling/createMessage":
        return _items(result.get("content"))
    if method == "prompts/get":
        return [item for message in list_of(result.get("messages"))
                for item in _items(message.get("content") if isinstance(message, dict) else None)]
    return []


def list_of(value: Any) -> list:
    return value if isinstance(value, list) else []


def _items(content: Any) -> list[dict]:
    if isinstance(content, list):
        return [item for item in content if isinstance(item, dict)]
    return [content] if isinstance(content, dict) else []


def is_base64(data: Any) -> bool:
    if not isinstance(data, str):
        return False
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


class Features(Observer):
    # where a server's notifications are (a JSON answer to a POST holds a response, never a notification)
    kinds = frozenset({records.STDIO_LINE, records.SSE_EVENT})

    def __init__(self) -> None:
        self.sessions: dict[int, _Server] = {}

    def record(self, seen: Seen, model: Model) -> list[Finding] | None:
        """The server's notifications a feature judges: a log message's level, a resource update."""
        msg = seen.msg
        if type(msg) is not dict or seen.record.get("dir") != records.S2C:
            return None
        method = msg.get("method")
        if method == "notifications/message":
            params = msg.get("params")
            level = params.get("level") if isinstance(params, dict) else None
            if not (isinstance(level, str) and level in LEVELS):
                return broke("log-level-valid", seen, f"a log message whose level is {level!r:.40}", method=method)
        elif method == "notifications/resources/updated" and seen.session is not None:
            params = msg.get("params")
            uri = params.get("uri") if isinstance(params, dict) else None
            state = self.sessions.get(id(seen.session))
            if state is None or not isinstance(uri, str) or uri not in state.subscribed:
                return broke("resource-updated-subscribed", seen, f"an update of {uri!r:.80}, which the client did "
                             f"not subscribe to in this session", method=method)
        return None

    def call(self, call: Call, model: Model) -> list[Finding] | None:
        method = call.method
        if method not in _JUDGED:
            return None
        state = self.sessions.get(id(call.session))
        if state is None:
            state = self.sessions[id(call.session)] = _Server()
        response = call.response if isinstance(call.response, dict) else {}
        found: list[Finding] = []
        if method == "initialize":
            params = (call.request or {}).get("params")
            caps = params.get("capabilities") if isinstance(params, dict) else None
            state.client = caps if isinstance(caps, dict) else {}
            return None
        if method == "elicitation/create":
            return self._elicitation(call, state) or None
        if method in _ASKED:
            found += _ASKED[method](call, state, response)
        if method in LISTS:
            found += self._cursor(call, state, method, response)
        result = response.get("result")
        if not isinstance(result, dict):
            return found or None
        if method == "tools/list":
            found += self._tools(call, state, result)
        elif method == "tools/call":
            return self._tool_result(call, state, result) or None
        elif method == "prompts/list":
            _prompts(state, result)
        elif method == "resources/list":
            found += _resources(call, result)
        elif method == "resources/templates/list":
            found += _templates(call, result)
        elif method == "resources/read":
            for content in list_of(result.get("contents")):
                if isinstance(content, dict) and "blob" in content and not is_base64(content["blob"]):
                    found += broke_call("resource-blob-base64", call, f"the blob of {content.get('uri')!r:.80} is "
                                        f"not base64")
                    break
        for item in content_items(method, response):
            if item.get("type") in _ITEMS:
                found += self._item(call, item)
        return found or None

    def _tools(self, call: Call, state: _Server, result: dict) -> list[Finding]:
        found: list[Finding] = []
        params = (call.request or {}).get("params")
        if not (isinstance(params, dict) and params.get("cursor")):
            state.listing = set()  # a listing starts anew
            state.outputs, state.validators, state.inputs, state.input_validators = {}, {}, {}, {}
        for tool in list_of(result.get("tools")):
            if not isinstance(tool, dict):
                continue
            name = tool.get("name")
            if isinstance(name, str):
                if not 1 <= len(name) <= 128:
                    found += broke_call("tool-name-length", call, f"the tool name {name[:40]!r} has {len(name)} "
                                        f"characters")
                if name and not _NAME.fullmatch(name):
                    found += broke_call("tool-name-characters", call, f"the tool name {name[:80]!r} has characters "
                                        f"other than A-Z a-z 0-9 _ - .")
                if name in state.listing:
                    found += broke_call("tool-name-unique", call, f"two tools are named {name[:80]!r}")
                state.listing.add(name)
                if isinstance(tool.get("outputSchema"), dict):
                    state.outputs[name] = tool["outputSchema"]
                if isinstance(tool.get("inputSchema"), dict):
                    state.inputs[name] = tool["inputSchema"]
            problem = _schema_problem(tool.get("inputSchema"))
            if problem:
                found += broke_call("tool-input-schema", call, f"the inputSchema of {name!r:.80} {problem}")
        return found

    def _tool_result(self, call: Call, state: _Server, result: dict) -> list[Finding]:
        found: list[Finding] = []
        if "isError" in result and type(result["isError"]) is not bool:
            found += broke_call("tool-is-error-boolean", call, f"isError is {result['isError']!r:.40}, not a boolean")
        content = result.get("content")
        text = False
        for item in content if type(content) is list else ():
            if type(item) is dict:
                kind = item.get("type")
                if kind == "text":
                    text = True
                elif kind in _ITEMS:
                    found += self._item(call, item)
        structured = result.get("structuredContent")
        if structured is not None and not text:
            found += broke_call("structured-content-text", call, "structuredContent without a text content item "
                                "holding it serialized")
        params = (call.request or {}).get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if isinstance(name, str) and name in state.inputs and result.get("isError") is not True:
            found += _unvalidated(call, state, name, params.get("arguments"))
        if not state.outputs:
            return found
        schema = state.outputs.get(name) if isinstance(name, str) else None
        if schema is None or result.get("isError") is True:
            return found
        if structured is None:
            return found + broke_call("tool-output-conforms", call, f"the tool {name!r:.80} has an outputSchema but "
                                      f"its result has no structuredContent")
        validator = state.validators.get(name)
        if validator is None:
            validator = state.validators[name] = _validator(schema)
        if validator is not None:
            try:
                error = next(iter(validator.iter_errors(structured)), None)
            except Exception:  # noqa: BLE001 - a $ref that cannot be resolved offline, a schema too deep: not judged
                error = None
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path) or "(the top)"
                found += broke_call("tool-output-conforms", call, f"structuredContent of {name!r:.80} does not "
                                    f"conform to its outputSchema at {where}: {error.message[:120]}")
        return found

    @staticmethod
    def _item(call: Call, item: dict) -> list[Finding]:
        kind = item.get("type")
        if kind in ("image", "audio"):
            rule = f"{kind}-base64"
            if not is_base64(item.get("data")):
                return broke_call(rule, call, f"an {kind} content item whose data is not base64")
            if not isinstance(item.get("mimeType"), str) or not _MIME.fullmatch(item["mimeType"]):
                return broke_call(rule, call, f"an {kind} content item whose mimeType is {item.get('mimeType')!r:.60}")
        elif kind == "resource":
            resource = item.get("resource")
            if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str):
                return broke_call("embedded-resource-fields", call, "an embedded resource without a uri")
            if not isinstance(resource.get("text"), str) and not is_base64(resource.get("blob")):
                return broke_call("embedded-resource-fields", call, f"the embedded resource "
                                  f"{resource['uri'][:80]!r} has neither text nor a base64 blob")
        elif kind == "resource_link":
            missing = [k for k in ("uri", "name") if not isinstance(item.get(k), str)]
            if missing:
                return broke_call("resource-link-fields", call, f"a resource link without a string "
                                  f"{' nor '.join(missing)}")
        return []

    @staticmethod
    def _cursor(call: Call, state: _Server, method: str, response: dict) -> list[Finding]:
        found: list[Finding] = []
        params = (call.request or {}).get("params")
        cursor = params.get("cursor") if isinstance(params, dict) else None
        if cursor is not None and (not isinstance(cursor, str) or cursor not in state.cursors):
            found += broke_call("cursor-opaque", call, f"{method} sent the cursor {cursor!r:.60}, which the server "
                                f"never issued in this session")
            said = answered_not(response, -32602)
            if said:
                found += broke_call("cursor-invalid-error", call, f"the server answered a cursor it never issued "
                                    f"with {said}, not -32602")
        result = response.get("result")
        issued = result.get("nextCursor") if isinstance(result, dict) else None
        if isinstance(issued, str):
            if len(state.cursors) >= _MAX_CURSORS:
                state.cursors.clear()
            state.cursors.add(issued)
        return found

    @staticmethod
    def _elicitation(call: Call, state: _Server) -> list[Finding]:
        params = (call.request or {}).get("params")
        if not isinstance(params, dict):
            return []
        if params.get("mode", "form") == "form":
            return _form(call, params)
        if params.get("mode") != "url":
            return []
        found: list[Finding] = []
        missing = [k for k in ("message", "url", "elicitationId") if not isinstance(params.get(k), str)]
        if missing:
            found += broke_call("elicitation-url-fields", call, f"a url-mode elicitation without "
                                f"{', '.join(missing)}")
        caps = state.client.get("elicitation")
        if isinstance(caps, dict) and not isinstance(caps.get("url"), dict):
            found += broke_call("elicitation-mode-supported", call, "a url-mode elicitation to a client that declared "
                                "only form mode")
        url = params.get("url")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or not parts.scheme or not parts.netloc:
            found += broke_call("elicitation-url-valid", call, f"the elicitation url {url!r:.80} is not a URL")
        return found


_ITEMS = frozenset({"image", "audio", "resource", "resource_link"})
_JUDGED = LISTS | {"initialize", "tools/call", "resources/read", "prompts/get", "sampling/createMessage",
                   "elicitation/create", "logging/setLevel", "completion/complete", "roots/list", "resources/subscribe",
                   "resources/unsubscribe"}
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


def _prompts(state: _Server, result: dict) -> None:
    for prompt in list_of(result.get("prompts")):
        if isinstance(prompt, dict) and isinstance(prompt.get("name"), str) and len(state.prompts) < _MAX_REMEMBERED:
            state.prompts[prompt["name"]] = tuple(
                a["name"] for a in list_of(prompt.get("arguments"))
                if isinstance(a, dict) and a.get("required") is True and isinstance(a.get("name"), str))


def _resources(call: Call, result: dict) -> list[Finding]:
    for resource in list_of(result.get("resources")):
        uri = resource.get("uri") if isinstance(resource, dict) else None
        if isinstance(uri, str) and not _SCHEME.match(uri):
            return broke_call("resource-uri-scheme", call, f"the resource uri {uri[:80]!r} has no URI scheme")
    return []


def _templates(call: Call, result: dict) -> list[Finding]:
    for template in list_of(result.get("resourceTemplates")):
        template = template if isinstance(template, dict) else {}
        missing = [k for k in ("uriTemplate", "name") if not isinstance(template.get(k), str)]
        if missing:
            return broke_call("resource-template-fields", call, f"a resource template without a string "
                              f"{' nor '.join(missing)}")
    return []


def _unvalidated(call: Call, state: _Server, name: str, arguments: Any) -> list[Finding]:
    validator = state.input_validators.get(name)
    if validator is None:
        validator = state.input_validators[name] = _validator(state.inputs[name]) or False
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


def _get_prompt(call: Call, state: _Server, response: dict) -> list[Finding]:
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


def _set_level(call: Call, state: _Server, response: dict) -> list[Finding]:
    level = _params(call).get("level")
    if isinstance(level, str) and level in LEVELS:
        return []
    found = broke_call("log-level-valid", call, f"logging/setLevel asks for the level {level!r:.40}")
    said = answered_not(response, -32602)
    if said:
        found += broke_call("log-level-invalid-params", call, f"the server answered logging/setLevel {level!r:.40} "
                            f"with {said}, not -32602")
    return found


def _complete(call: Call, state: _Server, response: dict) -> list[Finding]:
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


def _roots(call: Call, state: _Server, response: dict) -> list[Finding]:
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


def _sampling(call: Call, state: _Server, response: dict) -> list[Finding]:
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
        items = _items(message.get("content"))
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


def _form(call: Call, params: dict) -> list[Finding]:
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


def _subscribe(call: Call, state: _Server, response: dict) -> list[Finding]:
    uri = _params(call).get("uri")
    if isinstance(uri, str) and "result" in response:
        if call.method == "resources/unsubscribe":
            state.subscribed.discard(uri)
        elif len(state.subscribed) < _MAX_REMEMBERED:
            state.subscribed.add(uri)
    return []


_ASKED = {"prompts/get": _get_prompt, "logging/setLevel": _set_level, "completion/complete": _complete,
          "roots/list": _roots, "sampling/createMessage": _sampling, "resources/subscribe": _subscribe,
          "resources/unsubscribe": _subscribe}


def _schema_problem(schema: Any) -> str | None:
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


def _validator(schema: dict) -> Any:
    """A validator for the schema's own dialect (2020-12 when it names none); None when the schema is not valid (the
    tool-input-schema kind of problem: nothing to validate against)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except Exception:  # noqa: BLE001 - invalid, or too deep to check
        return None
    return cls(schema)

