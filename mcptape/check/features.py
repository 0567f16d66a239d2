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
from typing import Any
from urllib.parse import urlsplit

from ..model import Call, Model, Observer, Seen
from ..tape import records
from ..wire import jsonrpc
from .feature_requests import (ASKED, LEVELS, ServerState, answered_not, form, items_of, list_of, remember_prompts,
                               resources_listed, schema_problem, templates_listed, unvalidated, validator_for)
from .finding import Finding, broke, broke_call

LISTS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_MIME = re.compile(r"[\w.+-]+/[\w.+-]+(\s*;.*)?")
_MAX_CURSORS = 10_000  # cursors remembered per session: a listing of a few pages at a time


def content_items(method: str, response: dict | None) -> list[dict]:
    """The content items a call's answer carried: a tool's result, a prompt's messages, sampling's answer (whoever
    answered sent them). A list, not a generator: it runs for every call a tape makes."""
    result = response.get("result") if isinstance(response, dict) else None
    if not isinstance(result, dict):
        return []
    if method == "tools/call" or method == "sampling/createMessage":
        return items_of(result.get("content"))
    if method == "prompts/get":
        return [item for message in list_of(result.get("messages"))
                for item in items_of(message.get("content") if isinstance(message, dict) else None)]
    return []


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
        self.sessions: dict[int, ServerState] = {}

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
            state = self.sessions[id(call.session)] = ServerState()
        response = call.response if isinstance(call.response, dict) else {}
        found: list[Finding] = []
        if method == "initialize":
            params = (call.request or {}).get("params")
            caps = params.get("capabilities") if isinstance(params, dict) else None
            state.client = caps if isinstance(caps, dict) else {}
            return None
        if method == "elicitation/create":
            return self._elicitation(call, state) or None
        if method in ASKED:
            found += ASKED[method](call, state, response)
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
            remember_prompts(state, result)
        elif method == "resources/list":
            found += resources_listed(call, result)
        elif method == "resources/templates/list":
            found += templates_listed(call, result)
        elif method == "resources/read":
            for content in list_of(result.get("contents")):
                if isinstance(content, dict) and "blob" in content and not is_base64(content["blob"]):
                    found += broke_call("resource-blob-base64", call, f"the blob of {content.get('uri')!r:.80} is "
                                        f"not base64")
                    break
        for item in content_items(method, response):
            kind = item.get("type")
            if type(kind) is not str:
                found += _untyped(call, kind)
            elif kind in _ITEMS:
                found += self._item(call, item)
        return found or None

    def _tools(self, call: Call, state: ServerState, result: dict) -> list[Finding]:
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
            problem = schema_problem(tool.get("inputSchema"))
            if problem:
                found += broke_call("tool-input-schema", call, f"the inputSchema of {name!r:.80} {problem}")
        return found

    def _tool_result(self, call: Call, state: ServerState, result: dict) -> list[Finding]:
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
                elif type(kind) is not str:
                    found += _untyped(call, kind)
                elif kind in _ITEMS:
                    found += self._item(call, item)
        structured = result.get("structuredContent")
        if structured is not None and not text:
            found += broke_call("structured-content-text", call, "structuredContent without a text content item "
                                "holding it serialized")
        params = (call.request or {}).get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if isinstance(name, str) and name in state.inputs and result.get("isError") is not True:
            found += unvalidated(call, state, name, params.get("arguments"))
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
            validator = state.validators[name] = validator_for(schema)
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
    def _cursor(call: Call, state: ServerState, method: str, response: dict) -> list[Finding]:
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
    def _elicitation(call: Call, state: ServerState) -> list[Finding]:
        params = (call.request or {}).get("params")
        if not isinstance(params, dict):
            return []
        if params.get("mode", "form") == "form":
            return form(call, params)
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


def _untyped(call: Call, kind: Any) -> list[Finding]:
    # (before any lookup by type: a type that is an object or a list is not hashable)
    return broke_call("content-item-type", call, "a content item without a type" if kind is None else
                      f"a content item whose type is {jsonrpc.type_name(kind)}, not a string")
_JUDGED = LISTS | {"initialize", "tools/call", "resources/read", "prompts/get", "sampling/createMessage",
                   "elicitation/create", "logging/setLevel", "completion/complete", "roots/list", "resources/subscribe",
                   "resources/unsubscribe"}
