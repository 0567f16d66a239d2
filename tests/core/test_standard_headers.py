"""2026-07-28's standard headers are compared with the body after their =?base64?…?= form is decoded: a
non-ASCII tool name or resource URI sent as the spec says is no mismatch; one that cannot be decoded is its own
finding, blamed on the client."""

from __future__ import annotations

import pytest

from mcptape.model import STATELESS
from mcptape.testing.builder import Conversation
from mcptape.wire import header_value


def stateless() -> Conversation:
    tape = Conversation(transport=STATELESS)
    tape.initialize(capabilities={"tools": {}, "resources": {}})
    return tape


@pytest.mark.parametrize("method, params", [
    ("tools/call", {"name": "météo_中文", "arguments": {}}),
    ("tools/call", {"name": " padded ", "arguments": {}}),
    ("tools/call", {"name": "=?base64?literal?=", "arguments": {}}),
    ("prompts/get", {"name": "résumé"}),
    ("resources/read", {"uri": "file:///home/zoë/notes/日本.txt"}),
])
def test_a_name_or_uri_sent_in_the_base64_form_matches_its_body(method, params):
    tape = stateless()
    tape.call(method, params, result={})
    sent = [h for r in tape.records if r["kind"] == "http.request" for h in r["headers"] if h[0] == "mcp-name"]
    assert sent[-1][1].startswith("=?base64?")  # the builder encodes as the SDK client does
    assert tape.findings() == []


def test_the_spec_examples_decode_and_plain_values_pass_through():
    assert header_value.decode("=?base64?SGVsbG8sIOS4lueVjA==?=") == "Hello, 世界"
    assert header_value.decode("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=") == "=?base64?literal?="
    assert header_value.decode("us-west1") == "us-west1"
    assert header_value.encode("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert header_value.encode("line1\nline2") == "=?base64?bGluZTEKbGluZTI=?="
    assert header_value.encode("us-west1") == "us-west1"


def test_a_wrong_name_is_still_a_mismatch_when_encoded():
    tape = stateless()
    tape.call("tools/call", {"name": "météo"}, headers=[("mcp-name", header_value.encode("wéather"))])
    (found,) = tape.findings()
    assert (found.rule, found.blames, found.severity) == ("header-mismatch", "client", "error")
    assert "(decoded 'wéather')" in found.message and "météo" in found.message


@pytest.mark.parametrize("sent, why", [("=?base64?not base64!?=", "not Base64"),
                                       ("=?base64?/w==?=", "not UTF-8"),
                                       ("mÃ©tÃ©o", "outside visible ASCII")])
def test_a_malformed_encoding_is_its_own_finding(sent, why):
    tape = stateless()
    tape.call("tools/call", {"name": "météo"}, headers=[("mcp-name", sent)])
    (found,) = tape.findings()
    assert (found.rule, found.blames, found.severity) == ("header-encoding", "client", "error")
    assert why in found.message
    assert "Value Encoding" in found.spec and "MUST use Base64" in found.spec


SQL_TOOL = {"name": "execute_sql", "inputSchema": {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "where": {"type": "object", "properties": {"limit": {"type": "integer", "x-mcp-header": "Limit"}}},
    "query": {"type": "string"}}}}


def test_param_headers_are_compared_decoded_with_the_arguments_the_schema_mirrors():
    tape = stateless()
    tape.call("tools/list", result={"tools": [SQL_TOOL]})
    good = {"name": "execute_sql", "arguments": {"region": "zürich", "where": {"limit": 5}, "query": "x"}}
    tape.call("tools/call", good, headers=[("Mcp-Param-Region", header_value.encode("zürich")),
                                           ("Mcp-Param-Limit", "5.0")])
    assert tape.findings() == []
    tape.call("tools/call", good, headers=[("Mcp-Param-Region", header_value.encode("zurich"))])
    tape.call("tools/call", good, headers=[("Mcp-Param-Region", "=?base64?***?="), ("Mcp-Param-Limit", "5")])
    found = sorted((f.record, f.rule, f.message.split(" ")[0]) for f in tape.findings())
    assert [f[1:] for f in found] == [("header-mismatch", "Mcp-Param-Region"), ("header-mismatch", "no"),
                                      ("header-encoding", "Mcp-Param-Region")]
    assert any(f.message.startswith("no Mcp-Param-Limit") for f in tape.findings())


def test_param_headers_of_a_tool_whose_schema_was_not_seen_are_checked_only_for_their_encoding():
    tape = stateless()
    tape.call("tools/call", {"name": "t", "arguments": {"a": "x"}}, headers=[("Mcp-Param-A", "whatever")])
    assert tape.findings() == []
    tape.call("tools/call", {"name": "t", "arguments": {"a": "x"}}, headers=[("Mcp-Param-A", "=?base64?%?=")])
    assert tape.rules() == ["header-encoding"]


def test_a_long_malformed_value_is_quoted_short():
    tape = stateless()
    tape.call("tools/call", {"name": "x"}, headers=[("mcp-name", "=?base64?" + "%" * 100_000 + "?=")])
    (found,) = tape.findings()
    assert found.rule == "header-encoding" and len(found.message) < 200
