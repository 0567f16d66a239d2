"""The live view says each call's outcome as the model decided it (Outcome): a result, a JSON-RPC error with its
code, a cancellation, a tool error (a result), and what was never answered when the recording stopped."""

from __future__ import annotations

from mcptape.live import LiveView
from mcptape.testing.builder import Conversation


def test_each_outcome_in_the_live_view():
    tape = Conversation()
    tape.initialize()
    tape.call("tools/call", {"name": "ok"})
    tape.call("tools/call", {"name": "failed"}, result={"content": [], "isError": True})
    tape.call("tools/call", {"name": "bad"}, error=(-32602, "Unknown tool"))
    cancelled = tape.request("tools/call", {"name": "cancelled"}, status=200, events=[])
    tape.notify("notifications/cancelled", {"requestId": cancelled})
    tape.request("tools/call", {"name": "waiting"}, status=200, events=[])
    said: list[str] = []
    view = LiveView(said.append)
    for record in tape.records:
        view.write(record)
    view.close()
    outcome = {line.split("→ tools/call ")[1].split()[0]: line for line in said if "→ tools/call" in line}
    assert "200  result" in outcome["ok"] and "200  result" in outcome["failed"]
    assert "error -32602 Unknown tool" in outcome["bad"]
    assert "cancelled, no answer" in outcome["cancelled"]
    assert "no answer when the recording stopped" in outcome["waiting"]
