"""The negotiation rules on conversations built in memory: a dual-era client probes with server/discover and falls
back to initialize on a legacy server's answer, stays modern on a modern error; a server that speaks 2026-07-28
does not refuse the probe."""

from __future__ import annotations

import pytest

from mcptape.model import STATELESS, STDIO
from mcptape.testing.builder import Conversation, error, request

DISCOVERED = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete"}
META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}


def probed(status: int = 400, reply=None, injected: bool = False, **http) -> Conversation:
    """An auto client's probe over HTTP (2026-07-28 headers, no session), answered so."""
    tape = Conversation()
    tape.exchange(request(tape.next_id(), "server/discover", META), session=None, version_header="2026-07-28",
                  headers=[("mcp-method", "server/discover")], status=status, reply=reply, injected=injected, **http)
    return tape


def negotiation(tape: Conversation) -> list[tuple[str, str, str]]:
    return [(f.rule, f.severity, f.blames) for f in tape.findings()
            if f.rule in ("no-fallback", "fallback-on-modern-error", "discover-refused")]


@pytest.mark.parametrize("status, reply", [
    (400, None), (405, None), (404, None),
    (400, error(None, -32600, "Bad Request: Unsupported protocol version")), (400, error(1, -32602, "Invalid params")),
    (200, error(1, -32601, "Method not found")),
])
def test_a_legacy_answer_then_initialize_is_silent_and_without_it_is_said(status, reply):
    stops = probed(status, reply)
    assert negotiation(stops) == [("no-fallback", "info", "client")]
    falls_back = probed(status, reply)
    falls_back.initialize()
    falls_back.call("tools/list", result={"tools": []})
    assert negotiation(falls_back) == []
    assert falls_back.findings() == []  # and nothing else about a probe refused as the spec expects


@pytest.mark.parametrize("code", [-32020, -32021, -32022])
def test_falling_back_on_a_modern_error_is_a_warning(code):
    tape = probed(400, error(1, code, "modern"))
    tape.initialize()
    (found,) = [f for f in tape.findings() if f.rule == "fallback-on-modern-error"]
    assert (found.severity, found.blames) == ("warning", "client")
    assert "rather than falling back" in found.spec
    stays = probed(400, error(1, code, "modern"))
    assert negotiation(stays) == []  # staying modern is right


def test_over_stdio_any_other_error_or_no_answer_means_fall_back():
    for answer in (error(1, -32601, "Method not found"), None):
        tape = Conversation(transport=STDIO, revision="2025-11-25")
        tape.call("server/discover", META, reply=answer)
        tape.eof()
        tape.exit(0)
        assert ("no-fallback", "info", "client") in negotiation(tape)
        fell = Conversation(transport=STDIO, revision="2025-11-25")
        fell.call("server/discover", META, reply=answer)
        fell.initialize()
        assert negotiation(fell) == []
    modern = Conversation(transport=STDIO, revision="2025-11-25")
    modern.call("server/discover", META, reply=error(1, -32022, "Unsupported protocol version"))
    modern.initialize()
    assert [r for r, *_ in negotiation(modern)] == ["fallback-on-modern-error"]
    assert "stdio" in next(f for f in modern.findings() if f.rule == "fallback-on-modern-error").spec


def test_a_server_that_speaks_2026_but_refuses_the_probe_is_blamed_unless_an_edit_refused_it():
    for injected in (False, True):
        tape = Conversation(transport=STATELESS)
        tape.call("server/discover", {}, status=404, reply=None, injected=injected, raw_reply=b"Invalid session ID")
        tape.call("tools/call", {"name": "add"}, result={"content": [], "resultType": "complete"})
        found = [f for f in tape.findings() if f.rule == "discover-refused"]
        if injected:
            assert found == []
        else:
            (f,) = found
            assert (f.severity, f.blames, f.injected) == ("error", "server", False)
            assert "Invalid session ID" in f.message and "MUST implement it" in f.spec
    modern_error = Conversation(transport=STATELESS)
    modern_error.call("server/discover", {}, status=400, reply=error(1, -32022, "Unsupported protocol version"))
    modern_error.call("tools/call", {"name": "add"}, result={"content": []})
    assert "discover-refused" not in modern_error.rules()  # a modern error is a modern server's right answer


def test_a_probe_left_unanswered_over_http_counts_once_the_client_gave_up_on_it():
    from mcptape.tape import records

    gave_up = probed(status=None, end=records.CLIENT_DISCONNECTED)
    assert negotiation(gave_up) == [("no-fallback", "info", "client")]
    cut = probed(status=None, end=None)  # the recording stopped while the probe waited
    assert negotiation(cut) == []
