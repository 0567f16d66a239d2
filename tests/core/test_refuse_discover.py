"""refuse-discover and modern-only, decided in memory. refuse-discover: each variant an older server answers a
2026-07-28 probe with, met in the field (an HTTP status with no body, a body, a JSON-RPC error in it, the error
alone, no answer, the stdio server exiting), and where each may run."""

from __future__ import annotations

import json

import pytest

from mcptape.edits import EditError, Editor, Exit, Reply, check_transport, instead, parse

PROBE = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add"}}


def answer(text: str, msg: dict = PROBE):
    return instead(Editor([parse(text)]).plan(0.0, msg, "POST"))


@pytest.mark.parametrize("text, status, body", [
    ("refuse-discover status=400", 400, b""),
    ("refuse-discover status=405", 405, b""),
    ('refuse-discover status=404 body="Invalid session ID"', 404, b"Invalid session ID"),
    ('refuse-discover status=404 body="Session not found"', 404, b"Session not found"),
])
def test_http_statuses_with_no_body_or_a_text_body(text, status, body):
    reply = answer(text)
    assert isinstance(reply, Reply) and (reply.status, reply.body) == (status, body)
    if status == 405:
        assert ("allow", "GET") in reply.headers  # a legacy HTTP+SSE endpoint


@pytest.mark.parametrize("code, message", [(-32600, "Bad Request: Unsupported protocol version"),
                                           (-32602, "Invalid params")])
def test_a_400_with_a_json_rpc_error(code, message):
    reply = answer(f"refuse-discover status=400 code={code}")
    assert reply.status == 400 and ("content-type", "application/json") in reply.headers
    assert json.loads(reply.body) == {"jsonrpc": "2.0", "id": 0, "error": {"code": code, "message": message}}


def test_method_not_found_over_json_and_the_message_given():
    reply = answer("refuse-discover code=-32601")
    assert reply.status == 200
    assert json.loads(reply.body)["error"] == {"code": -32601, "message": "Method not found"}
    said = answer("refuse-discover code=-32601 message='Unknown method: server/discover'")
    assert json.loads(said.body)["error"]["message"] == "Unknown method: server/discover"


def test_no_answer_and_exit():
    plan = Editor([parse("refuse-discover answer=none")]).plan(0.0, PROBE, "POST")
    assert plan.drop and instead(plan) is None
    assert isinstance(answer("refuse-discover answer=exit"), Exit)


def test_it_fires_on_every_probe_and_nothing_else_unless_told():
    editor = Editor([parse("refuse-discover status=400")])
    assert not editor.plan(0.0, CALL, "POST")
    assert all(editor.plan(0.0, PROBE, "POST") for _ in range(3))  # an older server refuses every probe
    once = Editor([parse("refuse-discover status=400 times=1")])
    assert once.plan(0.0, PROBE, "POST") and not once.plan(0.0, PROBE, "POST")


@pytest.mark.parametrize("text, says", [
    ("refuse-discover", "needs status= or code= or answer="),
    ("modern-only", "needs status= or code="),
    ("refuse-discover answer=later", "none or exit"),
    ("refuse-discover status=99", "an HTTP status"),
    ("refuse-discover code=x", "JSON-RPC error code"),
])
def test_wrong_refusals_are_one_line_naming_the_bad_part(text, says):
    with pytest.raises(EditError, match=says):
        parse(text)


def test_where_each_variant_may_run():
    check_transport([parse("refuse-discover code=-32601"), parse("refuse-discover answer=exit")], stdio=True)
    check_transport([parse("refuse-discover status=400 code=-32600")], live=True)
    with pytest.raises(EditError, match="status= and body= are HTTP-only"):
        check_transport([parse("refuse-discover status=400")], stdio=True)
    check_transport([parse("refuse-discover answer=exit")])  # a replay over HTTP: the connection drops
    with pytest.raises(EditError, match="answer=exit needs a server mcptape runs"):
        check_transport([parse("refuse-discover answer=exit")], live=True)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}


def test_modern_only_refuses_initialize_as_given_and_answers_get_and_delete_405():
    editor = Editor([parse("modern-only status=400")])
    refused = instead(editor.plan(0.0, INITIALIZE, "POST"))
    assert refused.status == 400 and json.loads(refused.body)["error"]["code"] == -32020  # HeaderMismatch
    for method in ("GET", "DELETE"):
        assert instead(editor.plan(0.0, None, method)).status == 405
    assert not editor.plan(0.0, CALL, "POST")  # what a modern client sends is served
    assert json.loads(answer("modern-only code=-32601", INITIALIZE).body)["error"]["code"] == -32601
    with pytest.raises(EditError, match="HTTP-only"):
        check_transport([parse("modern-only status=400")], stdio=True)
