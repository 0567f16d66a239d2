"""The recorder's sans-I/O core (capture/http.py), in memory: what it reads of a request, and how often."""

from __future__ import annotations

import json

from mcptape.capture.http import HttpCapture, Scope
from mcptape.redact.redactor import Redactor
from mcptape.wire import jsonrpc


class Records:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def write(self, record: dict) -> None:
        self.records.append(record)


def test_with_no_endpoint_named_a_post_is_read_once_to_tell_mcp_and_to_record_it(monkeypatch):
    """A regular proxy (no endpoint named) reads a POST's body to tell whether it is MCP; the record takes that
    reading instead of parsing the body a second time."""
    read, parse = [], jsonrpc.parse
    monkeypatch.setattr(jsonrpc, "parse", lambda data: read.append(data) or parse(data))
    sink = Records()
    capture = HttpCapture(sink, Redactor(), Scope(mcp_only=True))
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1}}}
    body = json.dumps(call).encode()
    assert capture.request("flow-1", "conn-1", 1.0, "POST", "/mcp", [("content-type", "application/json")], body)
    assert read == [body] and sink.records[-1]["msg"] == call and sink.records[-1]["mcp"]
    read.clear()
    assert not capture.request("flow-2", "conn-1", 2.0, "POST", "/form", [], b"a=1&b=2")  # not MCP: not recorded
    assert read == [b"a=1&b=2"] and len(sink.records) == 1
