"""Judges the 2026-07-28 revision's own requirements (requirements/modern.py): the per-request `_meta` fields,
`resultType`, multi round-trip requests, caching hints, `subscriptions/listen` streams, trace context.

Only sessions of 2026-07-28 are judged: every other tape pays one attribute read per settled call and per message
record. Per session it keeps the input_required results awaiting their retry, the cacheScope of the listing in
progress and the open subscriptions: bounded by what the peers have in flight, not by the tape's length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..model import Call, Model, Observer, Seen
from ..tape import records
from .feature_requests import answered_not
from .finding import Finding, broke, broke_call

REVISION = "2026-07-28"
VERSION = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
INPUT_METHODS = frozenset({"prompts/get", "resources/read", "tools/call"})
# what each kind of input request needs the client to have declared
INPUT_KINDS = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
CACHED = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
                    "resources/read"})
# a listen filter's field for each notification it can ask for (resources/updated: by uri)
_FILTER = {"notifications/tools/list_changed": "toolsListChanged",
           "notifications/prompts/list_changed": "promptsListChanged",
           "notifications/resources/list_changed": "resourcesListChanged",
           "notifications/resources/updated": "resourceSubscriptions"}
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?")
_MAX = 10_000  # retries awaited and subscriptions remembered per session


@dataclass(slots=True)
class _Session:
    awaiting: dict[tuple, tuple[Any, Any]] = field(default_factory=dict)  # (method, name) -> (id, requestState)
    scopes: dict[str, Any] = field(default_factory=dict)  # cursor issued -> the cacheScope of its listing
    listens: dict[Any, dict] = field(default_factory=dict)  # subscription id -> its filter
    acknowledged: set = field(default_factory=set)


def meta_of(message: Any, key: str = "params") -> dict:
    part = message.get(key) if isinstance(message, dict) else None
    meta = part.get("_meta") if isinstance(part, dict) else None
    return meta if isinstance(meta, dict) else {}


def traceparent_problem(value: Any) -> str | None:
    """What makes a traceparent not W3C Trace Context (None: it is)."""
    match = _TRACEPARENT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return "is not version-traceid-parentid-flags in lower-case hex"
    version, trace, parent, rest = match.groups()
    if version == "ff" or (version == "00" and rest):
        return f"has the invalid version {version}" if version == "ff" else "has fields after version 00's four"
    if trace == "0" * 32 or parent == "0" * 16:
        return "has an all-zero trace id or parent id"
    return None


class Modern(Observer):
    # where a subscriptions/listen request and the server's notifications are
    kinds = frozenset({records.STDIO_LINE, records.SSE_EVENT, records.HTTP_REQUEST})

    def __init__(self) -> None:
        self.sessions: dict[int, _Session] = {}

    def _state(self, session: Any) -> _Session:
        state = self.sessions.get(id(session))
        if state is None:
            state = self.sessions[id(session)] = _Session()
        return state

    # -- subscriptions/listen: what the server sends on a subscription, record by record -----------------------

    def record(self, seen: Seen, model: Model) -> list[Finding] | None:
        session = seen.session
        if session is None or session.version != REVISION:
            return None
        msg = seen.msg
        if type(msg) is not dict:
            return None
        method = msg.get("method")
        if method == "subscriptions/listen" and "id" in msg and seen.record.get("dir") == records.C2S:
            params = msg.get("params")
            wanted = params.get("notifications") if isinstance(params, dict) else None
            listens = self._state(session).listens
            if len(listens) < _MAX:
                listens[_key(msg["id"])] = wanted if isinstance(wanted, dict) else {}
            return None
        if not (isinstance(method, str) and method.startswith("notifications/") and "id" not in msg):
            return None
        if seen.record.get("dir") != records.S2C:  # a client's notification: only its trace context to judge
            return _traceparent(seen, meta_of(msg), method) or None
        return self._notification(seen, msg, method) or None

    def _notification(self, seen: Seen, msg: dict, method: str) -> list[Finding]:
        found: list[Finding] = []
        meta = meta_of(msg)
        found += _traceparent(seen, meta, method)
        state = self._state(seen.session)
        if SUBSCRIPTION not in meta:
            ex = seen.exchange
            if ex is not None and isinstance(ex.msg, dict) and ex.msg.get("method") == "subscriptions/listen":
                found += broke("listen-subscription-id", seen, f"{method} on the stream of subscriptions/listen "
                               f"{ex.msg.get('id')!r:.40} without {SUBSCRIPTION} in _meta", method=method)
            elif seen.kind == records.STDIO_LINE and method in _FILTER and state.listens:
                # stdio has one channel and no GET stream: a notification only a subscription delivers is on one
                found += broke("listen-subscription-id", seen, f"{method} while a subscriptions/listen is open on "
                               f"stdio, without {SUBSCRIPTION} in _meta", method=method)
            return found
        sid = _key(meta[SUBSCRIPTION])
        if method == "notifications/subscriptions/acknowledged":
            if len(state.acknowledged) < _MAX:
                state.acknowledged.add(sid)
            return found
        wanted = state.listens.get(sid)
        if wanted is None:
            return found  # a subscription this tape never saw opened: nothing to judge it against
        if sid not in state.acknowledged:
            found += broke("listen-acknowledged-first", seen, f"{method} on subscription {sid[1]!r:.40} before "
                           f"its notifications/subscriptions/acknowledged", method=method)
        asked = _FILTER.get(method)
        if asked is not None:
            value = wanted.get(asked)
            if method == "notifications/resources/updated":
                params = msg.get("params")
                uri = params.get("uri") if isinstance(params, dict) else None
                ok = isinstance(value, list) and uri in value
            else:
                ok = value is True
            if not ok:
                found += broke("listen-requested-only", seen, f"{method} on subscription {sid[1]!r:.40}, whose "
                               f"filter did not ask for it", method=method)
        return found

    # -- requests and their answers --------------------------------------------------------------------------

    def call(self, call: Call, model: Model) -> list[Finding] | None:
        if call.session.version != REVISION or call.method.startswith("notifications/"):
            return None
        if call.dir == records.S2C:
            if call.method in INPUT_KINDS:
                return broke_call("server-requests-mrtr", call, f"the server sent {call.method} as a request of its "
                                  f"own, not as an inputRequests entry of an input_required result") or None
            return None
        found: list[Finding] = []
        request = call.request or {}
        meta = meta_of(request)
        response = call.response if isinstance(call.response, dict) else {}
        if VERSION not in meta or CAPABILITIES not in meta:  # (the common case tests two keys, nothing more)
            missing = [k for k in (VERSION, CAPABILITIES) if k not in meta]
            found += broke_call("meta-required-fields", call, f"{call.method} has no {' nor '.join(missing)} in "
                                f"its _meta")
            said = answered_not(response, -32602)
            if said:
                found += broke_call("meta-missing-rejected", call, f"the server answered {call.method} without "
                                    f"{missing[0]} with {said}, not -32602")
        if CLIENT_INFO not in meta:
            found += broke_call("meta-client-info", call, f"{call.method} has no {CLIENT_INFO} in its _meta")
        if "traceparent" in meta:
            found += _traceparent_call(call, meta["traceparent"])
        params = request.get("params")
        params = params if isinstance(params, dict) else {}
        result = response.get("result")
        if isinstance(result, dict):
            found += self._result(call, params, meta, result)
        return found or None

    def _result(self, call: Call, params: dict, meta: dict, result: dict) -> list[Finding]:
        found: list[Finding] = []
        state = self._state(call.session)
        kind = result.get("resultType")
        if not isinstance(kind, str):
            found += broke_call("result-type", call, f"the result of {call.method} has no resultType")
        retry = "inputResponses" in params or "requestState" in params
        if retry or kind == "input_required":  # the same request again: its method and what it names
            key = (call.method, _key(params.get("name", params.get("uri"))))
            if retry:
                found += self._retry(call, state, key, params)
            if kind == "input_required":
                return found + self._input_required(call, state, key, meta, result)
        if call.method in CACHED:
            found += self._cache(call, state, params, result)
        return found

    @staticmethod
    def _retry(call: Call, state: _Session, key: tuple, params: dict) -> list[Finding]:
        first = state.awaiting.pop(key, None)
        if first is None:
            return []  # the first attempt is not in this tape
        found: list[Finding] = []
        first_id, first_state = first
        if _key(first_id) == _key(call.id):
            found += broke_call("retry-new-id", call, f"the retry of {call.method} reuses the id {call.id!r:.40} of "
                                f"the request that got input_required")
        if first_state is not None and params.get("requestState") != first_state:
            found += broke_call("retry-echoes-state", call, f"the retry of {call.method} sent requestState "
                                f"{params.get('requestState')!r:.40}, not the {first_state!r:.40} it was given")
        return found

    @staticmethod
    def _input_required(call: Call, state: _Session, key: tuple, meta: dict, result: dict) -> list[Finding]:
        found: list[Finding] = []
        if call.method not in INPUT_METHODS:
            found += broke_call("input-required-methods", call, f"an input_required result to {call.method}")
        requests = result.get("inputRequests")
        if requests is None and "requestState" not in result:
            found += broke_call("input-required-content", call, f"the input_required result to {call.method} has "
                                f"neither inputRequests nor requestState")
        declared = meta.get(CAPABILITIES)
        declared = declared if isinstance(declared, dict) else {}
        for name, asked in (requests.items() if isinstance(requests, dict) else ()):
            method = asked.get("method") if isinstance(asked, dict) else None
            capability = INPUT_KINDS.get(method) if isinstance(method, str) else None
            if capability is None:
                found += broke_call("input-requests-kinds", call, f"the input request {name!r:.40} is "
                                    f"{method!r:.60}, not elicitation/create, sampling/createMessage or roots/list")
            elif capability not in declared:
                found += broke_call("input-requests-declared", call, f"the input request {name!r:.40} is {method}, "
                                    f"but the request's clientCapabilities declare no {capability}")
        if len(state.awaiting) < _MAX:
            state.awaiting[key] = (call.id, result.get("requestState"))
        return found

    @staticmethod
    def _cache(call: Call, state: _Session, params: dict, result: dict) -> list[Finding]:
        found: list[Finding] = []
        ttl, scope = result.get("ttlMs"), result.get("cacheScope")
        if ttl is None and scope is None:
            found += broke_call("cache-hints", call, f"the result of {call.method} has no caching hints (ttlMs, "
                                f"cacheScope)")
        elif ttl is not None and (type(ttl) is not int or ttl < 0):
            found += broke_call("ttl-non-negative", call, f"the result of {call.method} has ttlMs {ttl!r:.40}")
        cursor = params.get("cursor")
        if isinstance(cursor, str) and cursor in state.scopes:
            first = state.scopes.pop(cursor)
            if scope != first:
                found += broke_call("cache-scope-pages", call, f"a later page of {call.method} has cacheScope "
                                    f"{scope!r:.20}, the first page had {first!r:.20}")
        else:
            first = scope
        issued = result.get("nextCursor")
        if isinstance(issued, str) and len(state.scopes) < _MAX:
            state.scopes[issued] = first
        return found


def _key(value: Any) -> tuple:
    """An id as a key: 1 and "1" are different ids, and True is not 1."""
    return (type(value).__name__, value if isinstance(value, (str, int, float)) else repr(value))


def _traceparent(seen: Seen, meta: dict, method: str) -> list[Finding]:
    problem = traceparent_problem(meta["traceparent"]) if "traceparent" in meta else None
    if problem is None:
        return []
    return broke("traceparent-format", seen, f"the traceparent of {method} {problem}", method=method)


def _traceparent_call(call: Call, value: Any) -> list[Finding]:
    problem = traceparent_problem(value)
    if problem is None:
        return []
    return broke_call("traceparent-format", call, f"the traceparent of {call.method} {problem}")
