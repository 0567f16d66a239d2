"""A second real auto client: the MCP Inspector CLI with `--protocol-era auto` (TypeScript SDK), against the
Python SDK server behind `mcptape record` with each refusal of the probe played live."""

from __future__ import annotations

import pytest

from mcptape.check import check
from mcptape.tape.file import read

from ..node_peers import inspector

NEGOTIATION = {"no-fallback", "fallback-on-modern-error", "discover-refused"}


def methods(tape) -> list[str]:
    return [r["msg"]["method"] for r in tape.records if r["kind"] == "http.request" and isinstance(r.get("msg"), dict)
            and "method" in r["msg"]]


@pytest.mark.parametrize("edit", [None, "refuse-discover status=400",
                                  'refuse-discover status=404 body="Invalid session ID"', "refuse-discover code=-32601"])
def test_the_inspector_in_auto_mode(demo_server, record, edit):
    rec = record(demo_server(), *(("--edit", edit) if edit else ()))
    result = inspector([rec.url], "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3",
                       "--protocol-era", "auto")
    rec.stop()
    tape = read(rec.tape)
    assert result["structuredContent"] == {"result": 5}
    assert methods(tape)[0] == "server/discover"
    assert ("initialize" in methods(tape)) == (edit is not None)  # it falls back only when refused
    assert not [f for f in check([str(rec.tape)]) if f.severity == "error" or f.rule in NEGOTIATION]


def test_the_inspector_falls_back_on_a_replay_of_its_own_2026_tape(demo_server, record, tmp_path):
    from mcptape.replay import replaying

    rec = record(demo_server())
    call = ("tools/call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3", "--protocol-era", "auto")
    inspector([rec.url], *call)
    rec.stop()
    assert "initialize" not in methods(read(rec.tape))
    log = tmp_path / "replay.mcptape"
    with replaying(str(rec.tape), edits=("refuse-discover status=400",), log=str(log)) as url:
        result = inspector([url], *call)
    assert result["structuredContent"] == {"result": 5}
    assert methods(read(log))[:2] == ["server/discover", "initialize"]
    assert not [f for f in check([str(log)]) if f.severity == "error" or f.rule in NEGOTIATION]
