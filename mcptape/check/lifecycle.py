"""Judges the handshake and what it negotiated (requirements/lifecycle.py, capabilities.py, utilities.py): the
initialize request and result, `notifications/initialized`, every use of a feature against the capabilities the
other side declared, ping's empty result, progress tokens, and initialize never cancelled.

It keeps, per session, what the handshake said (read from the settled initialize call) and the progress tokens of
the requests in flight: a few small objects per session, whatever the tape's length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..facts import ProgressAfterResponse
from ..model import LEGACY_SSE, STDIO, Call, Model, Observer, Seen, Session
from ..tape import records
from ..wire import jsonrpc
from .requirements.capabilities import NEEDS, NEEDS_SINCE
from .finding import Finding, broke, broke_call

_C2S, _S2C = records.C2S, records.S2C
_FIRST = (STDIO, LEGACY_SSE)  # transports where the tape shows the client's very first message


_NOTHING: list = []  # returned for "no finding", never appended to


@dataclass(slots=True)
class _Handshake:
    client: Any = None  # the capabilities each side declared (None: not seen)
    server: Any = None
    asked: bool = False  # the client sent initialize
    answered: bool = False  # …and it succeeded
    initialized: bool = False  # the client sent notifications/initialized
    spoke: bool = False  # the client sent anything at all
    said: set = field(default_factory=set)  # (rule, subject): said once per session
    allowed: set = field(default_factory=set)  # methods already found declared: not judged again


class Lifecycle(Observer):
    # (a JSON answer to a POST holds the response, never a request or notification of the server's)
    kinds = frozenset({records.HTTP_REQUEST, records.SSE_EVENT, records.STDIO_LINE})

    def __init__(self) -> None:
        self.sessions: dict[int, _Handshake] = {}
        self.tokens: dict[tuple, Any] = {}  # (id(session), token) -> the request id asking progress under it

    def record(self, seen: Seen, model: Model) -> list[Finding] | None:
        msg = seen.msg
        if type(msg) is dict:  # the common case, kept cheap: it runs for every message of the tape
            method = msg.get("method")
            if type(method) is not str:
                return None  # an answer: the settled call tells what this observer needs of it
            session = seen.session
            state = self.sessions.get(id(session)) if session is not None else None
            if state is not None and state.initialized:  # the steady state: what a message of each kind needs
                if seen.record.get("dir", _C2S) == _C2S:
                    if method in state.allowed:
                        return (self._token(seen, session, msg) if "id" in msg else
                                self._progress(seen, session, msg) if method == "notifications/progress" else
                                None) or None
                elif method == "notifications/progress":
                    return self._progress(seen, session, msg) or None
            return self._message(seen, msg) or None
        if type(msg) is not list:
            return None
        found = [f for item in msg if type(item) is dict for f in self._message(seen, item)]
        for item in msg:
            if type(item) is dict and item.get("method") == "initialize" and "id" in item:
                params = item.get("params") if isinstance(item.get("params"), dict) else {}
                version = params.get("protocolVersion")
                found += broke("initialize-not-in-batch", seen, "initialize was sent inside a JSON-RPC batch",
                               revision=version if isinstance(version, str) else None, method="initialize")
        return found or None

    def _message(self, seen: Seen, msg: dict) -> list[Finding]:
        method = msg.get("method")
        if type(method) is not str:
            return _NOTHING
        session = seen.session
        if session is None:  # a Streamable HTTP initialize, read before its session is known
            return self._initialize(seen, msg) if method == "initialize" else _NOTHING
        state = self.sessions.get(id(session))
        if state is None:
            state = self.sessions[id(session)] = _Handshake()
        if seen.record.get("dir", _C2S) == _C2S:
            return self._client(seen, session, state, method, msg)
        return self._server(seen, session, state, method, msg)

    def _client(self, seen: Seen, session: Session, state: _Handshake, method: str, msg: dict) -> list[Finding]:
        is_request = "id" in msg
        found: list[Finding] = []
        if not state.spoke:
            state.spoke = True
            if session.transport in _FIRST and method != "initialize":
                found += broke("initialize-first", seen, f"the client's first message was {method}, not initialize",
                               method=method)
        if method == "initialize":
            state.asked = True
            found += self._initialize(seen, msg)
        elif method == "notifications/initialized":
            state.initialized = True
        elif is_request and state.answered and not state.initialized and method != "ping" and self._once(
                state, "initialized-sent", None):
            found += broke("initialized-sent", seen, f"{method} sent after initialize succeeded, but the client "
                           f"never sent notifications/initialized", method=method, request_id=msg.get("id"))
        if is_request:
            found += self._token(seen, session, msg)
        elif method == "notifications/progress":
            found += self._progress(seen, session, msg)
        need = NEEDS.get(method)
        if need is not None:
            found += self._uses(seen, session, state, msg, need, state.client if method.startswith(
                "notifications/") else state.server, "client")
        return found

    def _server(self, seen: Seen, session: Session, state: _Handshake, method: str, msg: dict) -> list[Finding]:
        if method == "notifications/progress":  # no capability, no handshake step: its token alone
            return self._progress(seen, session, msg)
        found: list[Finding] = []
        is_request = "id" in msg
        if (is_request and method != "ping" and state.asked and not state.initialized
                and self._once(state, "server-request-before-initialized", None)):
            found += broke("server-request-before-initialized", seen, f"the server sent {method} before the client "
                           f"sent notifications/initialized", method=method, request_id=msg.get("id"))
        if is_request:
            found += self._token(seen, session, msg)
        if method == "notifications/message":
            if state.server is not None and not isinstance(state.server.get("logging"), dict) and self._once(
                    state, "declare-logging", None):
                found += broke("declare-logging", seen, "the server sent log messages without declaring the logging "
                               "capability", method=method)
            return found
        need = NEEDS.get(method)
        if need is not None:
            found += self._uses(seen, session, state, msg, need, state.server if method.startswith(
                "notifications/") else state.client, "server")
        if method == "sampling/createMessage" and state.client is not None:
            params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
            sampling = state.client.get("sampling")
            if (("tools" in params or "toolChoice" in params)
                    and not (isinstance(sampling, dict) and sampling.get("tools") is not None)):
                found += broke("sampling-tools-declared", seen, "a tool-enabled sampling request to a client that "
                               "did not declare sampling.tools", method=method, request_id=msg.get("id"))
        return found

    def _uses(self, seen: Seen, session: Session, state: _Handshake, msg: dict, need: tuple, declared: Any,
              sender: str) -> list[Finding]:
        """A feature used: the side it needs declared it (the receiver for a request, the sender itself for a
        notification)."""
        method = msg["method"]
        if method in state.allowed:
            return _NOTHING
        if declared is None or (session.version or "9") < NEEDS_SINCE.get(method, ""):
            return []  # no handshake in the tape, or the method had no capability in that revision
        capability, sub = need
        have = declared.get(capability) if isinstance(declared, dict) else None
        if isinstance(have, dict) and (sub is None or have.get(sub)):
            state.allowed.add(method)
            return _NOTHING
        if not self._once(state, "use-negotiated-capabilities", method):
            return []
        whose = sender if method.startswith("notifications/") else ("server" if sender == "client" else "client")
        what = f"`{capability}.{sub}`" if sub else f"`{capability}`"
        return broke("use-negotiated-capabilities", seen, f"the {sender} sent {method}, but the {whose} never "
                     f"declared {what}", method=method, request_id=msg.get("id"))

    def _token(self, seen: Seen, session: Session, msg: dict) -> list[Finding]:
        params = msg.get("params")
        meta = params.get("_meta") if type(params) is dict else None
        if type(meta) is not dict or "progressToken" not in meta:
            return _NOTHING
        token = meta["progressToken"]
        if type(token) is not str and type(token) is not int:
            return broke("progress-token-type", seen, f"progressToken is {jsonrpc.type_name(token)} ({token!r})",
                         method=msg.get("method"), request_id=msg.get("id"))
        key = (id(session), token)  # (a string or an integer is its own id_key: the model's Call.token_key)
        earlier = self.tokens.get(key)
        if earlier is not None:
            return broke("progress-token-unique", seen, f"progressToken {token!r} is already the token of request "
                         f"{earlier!r}, still in flight", method=msg.get("method"), request_id=msg.get("id"))
        self.tokens[key] = msg.get("id")
        return []

    def _progress(self, seen: Seen, session: Session, msg: dict) -> list[Finding]:
        params = msg.get("params")
        token = params.get("progressToken") if type(params) is dict else None
        if (id(session), token if type(token) is str or type(token) is int else jsonrpc.id_key(token)) in self.tokens:
            return _NOTHING
        if any(isinstance(fact, ProgressAfterResponse) for fact in seen.notes):
            return _NOTHING
        return broke("progress-known-token", seen, f"progress for token {token!r}, which no request asked under",
                     method=msg.get("method"))

    @staticmethod
    def _initialize(seen: Seen, msg: dict) -> list[Finding]:
        params = msg.get("params")
        params = params if isinstance(params, dict) else {}
        version = params.get("protocolVersion")
        lacks = _lacks(params, ("protocolVersion", str), ("capabilities", dict), ("clientInfo", dict))
        if not lacks:
            return []
        return broke("initialize-request-fields", seen, f"initialize without {lacks}",
                     revision=version if isinstance(version, str) else None, method="initialize",
                     request_id=msg.get("id"))

    # -- settled calls -----------------------------------------------------------------------------------------

    def call(self, call: Call, model: Model) -> list[Finding] | None:
        if call.token_key in self.tokens and self.tokens[call.token_key] == call.id:  # (an id may be None)
            del self.tokens[call.token_key]
        method = call.method
        if method == "initialize":
            return self._handshake(call)
        response = call.response
        if response is None or "result" not in response:
            return None
        if method == "ping":
            value = response["result"]
            if not isinstance(value, dict) or set(value) - {"_meta"}:
                return broke_call("ping-empty-result", call, f"ping answered with {value!r:.80}, not {{}}")
            return None
        need = NEEDS.get(method)
        if need is None:
            return None
        state = self.sessions.get(id(call.session))
        declared = None if state is None else state.server if call.dir == _C2S else state.client
        if not isinstance(declared, dict) or isinstance(declared.get(need[0]), dict):
            return None
        if (call.session.version or "9") < NEEDS_SINCE.get(method, "") or not self._once(state, "declare", need[0]):
            return None
        side = "server" if call.dir == _C2S else "client"
        return broke_call(f"declare-{need[0]}", call, f"the {side} answered {method} with a result but never declared "
                          f"the `{need[0]}` capability")

    def _handshake(self, call: Call) -> list[Finding] | None:
        state = self.sessions.get(id(call.session))
        if state is None:
            state = self.sessions[id(call.session)] = _Handshake(asked=True)
        found: list[Finding] = []
        if call.cancel is not None:
            found += broke_call("cancel-not-initialize", call, "the client cancelled its initialize request")
        response = call.response or {}
        result = response.get("result")
        if not isinstance(result, dict):
            return found or None
        request = call.request or {}
        params = request.get("params") if isinstance(request.get("params"), dict) else {}
        state.client = params.get("capabilities") if isinstance(params.get("capabilities"), dict) else {}
        state.server = result.get("capabilities") if isinstance(result.get("capabilities"), dict) else {}
        state.answered = True
        lacks = _lacks(result, ("protocolVersion", str), ("capabilities", dict), ("serverInfo", dict))
        if lacks:
            found += broke_call("initialize-result-fields", call, f"the initialize result has no {lacks}")
        return found or None

    @staticmethod
    def _once(state: _Handshake, rule: str, subject: Any) -> bool:
        key = (rule, subject)
        if key in state.said:
            return False
        state.said.add(key)
        return True


def _lacks(obj: dict, *fields: tuple[str, type]) -> str:
    return ", ".join(f"{name} ({kind.__name__ if kind is not dict else 'object'})" for name, kind in fields
                     if not isinstance(obj.get(name), kind))
