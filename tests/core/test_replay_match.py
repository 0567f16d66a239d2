"""Replay matching in memory: which parts of a request must match a recorded one (issue 36: `_meta` is metadata)."""

from __future__ import annotations

from mcptape.replay import match


def test_2_matching_compares_only_the_meta_keys_with_protocol_meaning():
    request = {"method": "tools/call", "params": {"name": "add", "_meta": {
        "progressToken": 7, "x-codex-turn-metadata": {"turn": 3}, "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "dev.mcp/extra": 1, "com.example.mcp/x": 2}}}
    shaped = match.normalize(request, [])
    assert shaped["params"]["_meta"] == {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "dev.mcp/extra": 1}
    assert set(match.normalize(request, [], match_meta=True)["params"]["_meta"]) == {
        "x-codex-turn-metadata", "io.modelcontextprotocol/protocolVersion", "dev.mcp/extra", "com.example.mcp/x"}
