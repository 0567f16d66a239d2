"""Whatever a peer sends, `check` (with its verdicts), `diff` and `report` give a result, never an exception
(issue 54: a stdio server answering `tools/call` with `{"content": [{"type": {"text": "x"}}]}` crashed them all).
Conversations made with the builder, so that every judge is reached: a session is open, each method's own rules
run, and what it is answered with is any JSON, shaped like MCP's results (their keys, wrong types in them)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptape.check import run
from mcptape.check.diff import diff
from mcptape.model import LEGACY_SSE, STATELESS, STDIO, STREAMABLE
from mcptape.report import FORMATS, build, render
from mcptape.testing.builder import Conversation, notification

# the keys MCP's results and params are read by, so that the fuzz reaches the code reading them
KEYS = ["content", "type", "text", "data", "mimeType", "uri", "name", "title", "tools", "inputSchema",
        "outputSchema", "structuredContent", "isError", "resources", "resourceTemplates", "uriTemplate", "contents",
        "blob", "prompts", "messages", "role", "arguments", "annotations", "audience", "priority", "resource",
        "nextCursor", "cursor", "_meta", "progressToken", "progress", "total", "message", "level", "logger",
        "requestId", "reason", "roots", "model", "stopReason", "completion", "values", "hasMore", "action",
        "capabilities", "protocolVersion", "serverInfo", "clientInfo", "instructions", "listChanged", "subscribe",
        "tools", "logging", "prompts", "resources", "sampling", "elicitation", "requestedSchema", "properties",
        "required", "code", "id", "method", "params", "result", "error", "task", "taskId", "status", "ttl"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.integers(2**62, 2**64),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(["", "text", "image", "audio", "resource", "resource_link", "user", "assistant",
                                     "object", "string", "2025-11-25", "2026-07-28", "x", "file:///a", "info"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4), max_leaves=12)
# an item of a result's list (a content block, a tool, a resource, a prompt, a message), keys of any type
ITEM_KEYS = ["type", "text", "data", "mimeType", "uri", "name", "title", "resource", "annotations", "blob",
             "inputSchema", "outputSchema", "role", "content", "arguments", "description", "_meta", "required"]
items = st.dictionaries(st.sampled_from(ITEM_KEYS), st.one_of(values, st.dictionaries(st.sampled_from(ITEM_KEYS),
                                                                                         values, max_size=3)),
                        max_size=5)
LISTS = ["content", "tools", "resources", "prompts", "contents", "messages", "resourceTemplates", "roots", "values"]
objects = st.one_of(st.dictionaries(st.sampled_from(KEYS), values, max_size=5),
                    st.fixed_dictionaries({}, optional={**{k: st.one_of(values, st.lists(items, max_size=3))
                                                           for k in LISTS},
                                                        **{k: values for k in ("structuredContent", "isError",
                                                                               "nextCursor", "_meta", "name",
                                                                               "arguments", "uri", "progress",
                                                                               "total", "level", "data")}}))
METHODS = ["tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list",
           "resources/subscribe", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel", "ping",
           "sampling/createMessage", "elicitation/create", "roots/list", "tasks/get", "server/discover"]
NOTIFICATIONS = ["notifications/progress", "notifications/message", "notifications/cancelled",
                 "notifications/resources/updated", "notifications/tools/list_changed"]


@st.composite
def conversations(draw) -> Conversation:
    tape = Conversation(transport=draw(st.sampled_from([STREAMABLE, STDIO, LEGACY_SSE, STATELESS])))
    if tape.transport != STATELESS:
        tape.initialize(capabilities=draw(st.one_of(st.none(), objects)))
    for _ in range(draw(st.integers(1, 5))):
        step = draw(st.sampled_from(["call", "error", "notify", "server"]))
        method = draw(st.sampled_from(METHODS))
        if step == "call":
            tape.call(method, draw(objects), result=draw(st.one_of(objects, values)))
        elif step == "error":
            tape.call(method, draw(objects), error=draw(st.one_of(objects, values)))
        elif step == "notify":
            tape.notify(draw(st.sampled_from(NOTIFICATIONS)), draw(st.one_of(st.none(), objects)))
        else:
            tape.server_says(notification(draw(st.sampled_from(NOTIFICATIONS)), draw(objects)))
    return tape


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_check_diff_and_report_take_any_message(tape):
    with tempfile.TemporaryDirectory() as tmp:
        path = tape.write(Path(tmp) / "any.mcptape")
        checked = run([path], requirements=True)
        assert all(f.rule and f.spec for f in checked.findings)
        assert diff(path, path) == []
        report = build([path])
        assert all(render(report, fmt) for fmt in FORMATS)
