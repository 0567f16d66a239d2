"""The feature areas and 2026-07-28 (issue 34), requirement by requirement, in memory: each requirement's
conversation that breaks it (its finding, verdict fail or warn; an observation: info and a pass) and one that keeps it
(no finding, a pass). test_requirements.py runs these cases with its own and checks every registry id has one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mcptape.check.modern import traceparent_problem
from mcptape.check.requirements import REGISTRY
from mcptape.check.verdicts import Verdict
from mcptape.model import STATELESS, STDIO
from mcptape.tape import records
from mcptape.testing.builder import Conversation, error, notification, request, result

from .test_requirements import SAMPLED, URL_CAPABLE, _server_asks, _uses, judged, stdio

C2S, S2C = records.C2S, records.S2C
V = "2026-07-28"
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


# -- tools, resources, prompts, logging, completion ------------------------------------------------------------

def _unvalidated(is_error: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        tape.call("tools/list", result={"tools": [{"name": "add", "inputSchema": SCHEMA}]})
        tape.call("tools/call", {"name": "add", "arguments": {"a": "one"}},
                  result={"content": [{"type": "text", "text": "no"}], "isError": is_error})
        return tape
    return build


def _updated(subscribed: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        if subscribed:
            tape.call("resources/subscribe", {"uri": "file:///a.txt"}, result={})
        tape.server_says(notification("notifications/resources/updated", {"uri": "file:///a.txt"}))
        return tape
    return build


TEMPLATE = {"uriTemplate": "file:///{path}"}
LINK = {"type": "resource_link", "uri": "file:///project/src/main.rs", "name": "main.rs"}

PROMPT = {"name": "review", "arguments": [{"name": "code", "required": True}, {"name": "style"}]}


def _prompt(arguments: dict, reply: str = "result", role: str = "user") -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        tape.call("prompts/list", result={"prompts": [PROMPT]})
        params = {"name": "review", "arguments": arguments}
        if reply == "result":
            tape.call("prompts/get", params, result={"messages": [{"role": role, "content": {"type": "text",
                                                                                              "text": "review"}}]})
        else:
            tape.call("prompts/get", params, error=(int(reply), "Missing required argument: code"))
        return tape
    return build


def _log(level) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        tape.server_says(notification("notifications/message", {"level": level, "data": "x"}))
        return tape
    return build


def _set_level(level: str, refused: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio()
        if refused:
            tape.call("logging/setLevel", {"level": level}, error=(-32602, "Invalid log level"))
        else:
            tape.call("logging/setLevel", {"level": level}, result={})
        return tape
    return build


def _complete(values) -> Callable[[], Conversation]:
    params = {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "code", "value": "p"}}
    return _uses("completion/complete", params, {"completion": {"values": values}})


def _roots_refused(code: int) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = stdio(client_capabilities={})
        tape.line(S2C, request(100, "roots/list"))
        tape.line(C2S, error(100, code, "Roots not supported"))
        return tape
    return build


def _sample(messages: list, client_capabilities=None, **params) -> Callable[[], Conversation]:
    return _server_asks(client_capabilities=client_capabilities, method="sampling/createMessage",
                        params={"messages": messages, "maxTokens": 10, **params}, answer=SAMPLED)


USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "f", "input": {}}]}


def _answer(*items: dict) -> dict:
    return {"role": "user", "content": list(items)}


def _tool_result(id_: str = "u1") -> dict:
    return {"type": "tool_result", "toolUseId": id_, "content": []}


def _elicit(params: dict, client_capabilities=None) -> Callable[[], Conversation]:
    return _server_asks(method="elicitation/create", params={"message": "?", **params}, answer={"action": "decline"},
                        client_capabilities=client_capabilities)


FLAT = {"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array",
                                                                           "items": {"enum": ["a", "b"]}}}}
NESTED = {"type": "object", "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}}}
SIGN_IN = {"mode": "url", "url": "https://example.com/sign-in", "elicitationId": "e-1"}


# -- 2026-07-28 -------------------------------------------------------------------------------------------------

def modern() -> Conversation:
    tape = Conversation(transport=STATELESS)
    tape.initialize()
    return tape


def _meta(*keys: str) -> dict:
    full = {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}
    return {k: full[k] for k in keys}


def _sent(meta: dict, reply=None, method: str = "tools/list", status: int = 200) -> Callable[[], Conversation]:
    """A client request with exactly this _meta, answered with `reply` (a complete listing by default)."""
    def build() -> Conversation:
        tape = modern()
        id_ = tape.next_id()
        answer = reply if reply is not None else {"resultType": "complete", "ttlMs": 0, "tools": []}
        reply_ = result(id_, answer) if "code" not in answer else {"jsonrpc": "2.0", "id": id_, "error": answer}
        tape.exchange(request(id_, method, {"_meta": meta}), status=status, reply=reply_)
        return tape
    return build


ALL = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
       "io.modelcontextprotocol/clientInfo")


def _with_result(value: dict, method: str = "tools/call", params=None) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = modern()
        tape.call(method, params if params is not None else {"name": "a"}, result=value)
        return tape
    return build


def _sent_result(value: dict, method: str = "tools/call") -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = modern()
        id_ = tape.next_id()
        tape.exchange(request(id_, method, {"name": "a", "_meta": _meta(*ALL)}), reply=result(id_, value))
        return tape
    return build


def _asks(*kinds: str, declared=None) -> Callable[[], Conversation]:
    requests = {f"q{n}": {"method": kind, "params": {}} for n, kind in enumerate(kinds)}
    params = {"name": "a", "_meta": {"io.modelcontextprotocol/clientCapabilities": declared or {}}}
    return _with_result({"resultType": "input_required", "inputRequests": requests}, params=params)


def _retry(state: str | None = "s1", same_id: bool = False) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = modern()
        first = tape.call("tools/call", {"name": "a"}, result={"resultType": "input_required", "requestState": "s1",
                                                               "inputRequests": {}})
        params = {"name": "a", "inputResponses": {}, **({"requestState": state} if state is not None else {})}
        tape.call("tools/call", params, id=first if same_id else None, result={"content": []})
        return tape
    return build


def _server_request(mrtr: bool) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = modern()
        if mrtr:
            tape.call("tools/call", {"name": "a"}, result={"resultType": "input_required", "requestState": "s",
                                                           "inputRequests": {}})
        else:
            tape.call("tools/call", {"name": "a"}, stream=True, before=[request(100, "roots/list")],
                      result={"content": []})
        return tape
    return build


def _pages(second: str) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = modern()
        tape.call("tools/list", result={"tools": [], "cacheScope": "private", "nextCursor": "p2"})
        tape.call("tools/list", {"cursor": "p2"}, result={"tools": [], "cacheScope": second})
        return tape
    return build


def _listen(*notes: dict, filter_=None) -> Callable[[], Conversation]:
    def build() -> Conversation:
        tape = modern()
        tape.call("subscriptions/listen", {"notifications": filter_ or {"toolsListChanged": True}}, id=50,
                  stream=True, before=list(notes), reply=None, end=None)  # a subscription stays open
        return tape
    return build


def _note(method: str, sid=50, **params) -> dict:
    meta = {"io.modelcontextprotocol/subscriptionId": sid} if sid is not None else {}
    return notification(method, {"_meta": meta, **params})


ACK = _note("notifications/subscriptions/acknowledged", notifications={"toolsListChanged": True})
TOOLS_CHANGED = _note("notifications/tools/list_changed")


CASES: dict[str, tuple[Callable, Callable]] = {
    "tool-inputs-validated": (_unvalidated(False), _unvalidated(True)),
    "resource-uri-scheme": (_uses("resources/list", value={"resources": [{"uri": "docs/a.txt", "name": "a"}]}),
                            _uses("resources/list", value={"resources": [{"uri": "file:///a.txt", "name": "a"}]})),
    "resource-updated-subscribed": (_updated(False), _updated(True)),
    "resource-template-fields": (_uses("resources/templates/list", value={"resourceTemplates": [TEMPLATE]}),
                                 _uses("resources/templates/list",
                                       value={"resourceTemplates": [{**TEMPLATE, "name": "files"}]})),
    "resource-link-fields": (_uses("tools/call", {"name": "a"}, {"content": [{"type": "resource_link", "uri": "a"}]}),
                             _uses("tools/call", {"name": "a"}, {"content": [LINK]})),
    "content-item-type": (_uses("tools/call", {"name": "a"}, {"content": [{"type": {"text": "x"}}]}),
                          _uses("tools/call", {"name": "a"}, {"content": [{"type": "text", "text": "x"}]})),
    "tool-is-error-boolean": (_uses("tools/call", {"name": "a"}, {"content": [], "isError": "true"}),
                              _uses("tools/call", {"name": "a"}, {"content": [], "isError": True})),
    "prompt-errors-invalid-params": (_prompt({"style": "terse"}), _prompt({"style": "terse"}, reply="-32602")),
    "prompt-message-role": (_prompt({"code": "x"}, role="system"), _prompt({"code": "x"})),
    "log-level-valid": (_log("verbose"), _log("warning")),
    "log-level-invalid-params": (_set_level("verbose", refused=False), _set_level("verbose", refused=True)),
    "completion-values-max": (_complete([str(n) for n in range(101)]), _complete([str(n) for n in range(100)])),
    "completion-result-fields": (_complete([1, 2]), _complete(["flask"])),
    "root-uri-file": (_server_asks(answer={"roots": [{"uri": "https://example.com/repo"}]}),
                      _server_asks(answer={"roots": [{"uri": "file:///home/user/repo"}]})),
    "roots-errors-method-not-found": (_roots_refused(-32603), _roots_refused(-32601)),
    "sampling-tool-results-only": (_sample([USE, _answer(_tool_result(), {"type": "text", "text": "and"})]),
                                   _sample([USE, _answer(_tool_result())])),
    "sampling-tool-use-answered": (_sample([USE, _answer(_tool_result("u2"))]),
                                   _sample([USE, _answer(_tool_result())])),
    "sampling-include-context": (_sample([], includeContext="thisServer"),
                                 _sample([], {"sampling": {"context": {}}}, includeContext="thisServer")),
    "elicitation-form-fields": (_elicit({"mode": "form"}), _elicit({"mode": "form", "requestedSchema": FLAT})),
    "elicitation-schema-flat": (_elicit({"requestedSchema": NESTED}), _elicit({"requestedSchema": FLAT})),
    "elicitation-url-fields": (_elicit({"mode": "url", "url": "https://example.com/sign-in"}, URL_CAPABLE),
                               _elicit(SIGN_IN, URL_CAPABLE)),
    "meta-required-fields": (_sent(_meta(ALL[0], ALL[2])), _sent(_meta(*ALL))),
    "meta-missing-rejected": (_sent(_meta(ALL[0], ALL[2])),
                              _sent(_meta(ALL[0], ALL[2]), {"code": -32602, "message": "Invalid params"}, status=400)),
    "meta-client-info": (_sent(_meta(*ALL[:2])), _sent(_meta(*ALL))),
    "traceparent-format": (_with_result({"content": []}, params={"name": "a", "_meta": {"traceparent": "00-abc"}}),
                           _with_result({"content": []}, params={"name": "a", "_meta": {"traceparent": TRACE}})),
    "result-type": (_sent_result({"content": []}), _sent_result({"resultType": "complete", "content": []})),
    "input-required-methods": (_with_result({"resultType": "input_required", "requestState": "s"}, "tools/list", {}),
                               _with_result({"resultType": "input_required", "requestState": "s"})),
    "input-required-content": (_with_result({"resultType": "input_required"}),
                               _with_result({"resultType": "input_required", "requestState": "s"})),
    "input-requests-kinds": (_asks("tools/list"), _asks("roots/list", declared={"roots": {}})),
    "input-requests-declared": (_asks("elicitation/create", declared={"roots": {}}),
                                _asks("elicitation/create", declared={"elicitation": {}})),
    "retry-echoes-state": (_retry("s2"), _retry("s1")),
    "retry-new-id": (_retry(same_id=True), _retry()),
    "server-requests-mrtr": (_server_request(False), _server_request(True)),
    "cache-hints": (_sent(_meta(*ALL), {"resultType": "complete", "tools": []}), _sent(_meta(*ALL))),
    "ttl-non-negative": (_with_result({"tools": [], "ttlMs": -5}, "tools/list", {}),
                         _with_result({"tools": [], "ttlMs": 60_000}, "tools/list", {})),
    "cache-scope-pages": (_pages("public"), _pages("private")),
    "listen-acknowledged-first": (_listen(TOOLS_CHANGED, ACK), _listen(ACK, TOOLS_CHANGED)),
    "listen-requested-only": (_listen(ACK, _note("notifications/prompts/list_changed")), _listen(ACK, TOOLS_CHANGED)),
    "listen-subscription-id": (_listen(ACK, _note("notifications/tools/list_changed", sid=None)),
                               _listen(ACK, TOOLS_CHANGED)),
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_broken(rule):
    found, verdicts = judged(CASES[rule][0]())
    assert rule in found
    expected = {Verdict.PASS} if REGISTRY[rule].observation else {Verdict.FAIL, Verdict.WARN}
    assert verdicts[rule] in expected


@pytest.mark.parametrize("rule", sorted(CASES))
def test_kept(rule):
    found, verdicts = judged(CASES[rule][1]())
    assert rule not in found
    assert verdicts[rule] == Verdict.PASS


@pytest.mark.parametrize("value, ok", [
    (TRACE, True), ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", False),
    ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", False),
    ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", False),
    ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", False),
    ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", True), (7, False),
])
def test_traceparent_follows_w3c_trace_context(value, ok):
    assert (traceparent_problem(value) is None) is ok


def test_a_modern_requirement_is_not_judged_on_an_older_revision():
    tape = stdio()  # 2025-11-25: no _meta fields, no resultType, no caching hints, and none of it is a finding
    tape.call("tools/list", result={"tools": []})
    found, verdicts = judged(tape)
    assert not found & {"meta-required-fields", "result-type", "cache-hints"}
    assert verdicts["result-type"] == Verdict.NOT_APPLICABLE


def test_a_finding_on_an_injected_answer_blames_no_server():
    tape = modern()
    id_ = tape.next_id()
    tape.exchange(request(id_, "tools/call", {"name": "a", "_meta": _meta(*ALL)}), reply=result(id_, {"content": []}),
                  injected=True)
    (finding,) = [f for f in tape.findings() if f.rule == "result-type"]
    assert finding.injected and finding.blames == "none"


def test_a_resource_link_is_judged_from_the_revision_that_has_it():
    unnamed = {"content": [{"type": "resource_link", "uri": "file:///a"}]}
    assert "resource-link-fields" in judged(_uses("tools/call", {"name": "a"}, unnamed, revision="2025-06-18")())[0]
    older = stdio("2025-03-26")  # ResourceLink is not in this revision's schema: not judged
    older.call("tools/call", {"name": "a"}, result=unnamed)
    found, verdicts = judged(older)
    assert "resource-link-fields" not in found and verdicts["resource-link-fields"] == Verdict.NOT_APPLICABLE


def test_a_client_notification_carries_a_valid_traceparent_or_none():
    def cancelled(trace: str) -> Conversation:
        tape = modern()
        tape.notify("notifications/cancelled", {"requestId": 1, "_meta": {"traceparent": trace}})
        return tape

    (finding,) = [f for f in cancelled("00-abc").findings() if f.rule == "traceparent-format"]
    assert finding.blames == "client" and finding.severity == "error"
    assert "traceparent-format" not in cancelled(TRACE).rules()


def stdio_listen(*notes: dict) -> Conversation:
    """2026-07-28 over stdio: one channel, a subscription open on it (the version rides in each request's _meta)."""
    tape = Conversation(transport=STDIO, revision=V)
    tape.call("server/discover", {"_meta": _meta(*ALL)},
              result={"resultType": "complete", "ttlMs": 0, "supportedVersions": [V], "capabilities": {}})
    tape.line(C2S, request(50, "subscriptions/listen", {"_meta": _meta(*ALL),
                                                        "notifications": {"toolsListChanged": True}}))
    for note in notes:
        tape.line(S2C, note)
    return tape


def test_on_stdio_a_subscription_notification_carries_its_subscription_id():
    (finding,) = [f for f in stdio_listen(ACK, _note("notifications/tools/list_changed", sid=None)).findings()
                  if f.rule == "listen-subscription-id"]
    assert finding.blames == "server" and finding.severity == "error"
    assert "listen-subscription-id" not in stdio_listen(ACK, TOOLS_CHANGED).rules()
    # a log line on the shared channel belongs to no subscription: it needs no subscription id
    assert "listen-subscription-id" not in stdio_listen(ACK, notification("notifications/message", {
        "level": "info", "data": "x"})).rules()
