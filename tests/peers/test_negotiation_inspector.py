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


@pytest.mark.parametrize("edit", [None, "refuse-discover status=400", 'refuse-discover status=404 body="Invalid '
                                  'session ID"', "refuse-discover code=-32601"])
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


def test_the_inspector_falls_back_on_a_modern_error_and_check_says_so(demo_server, record):
    rec = record(demo_server(), "--edit", "refuse-discover status=400 code=-32020")
    result = inspector([rec.url], "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3",
                       "--protocol-era", "auto")
    rec.stop()
    assert result["structuredContent"] == {"result": 5}
    assert [f.rule for f in check([str(rec.tape)]) if f.rule in NEGOTIATION] == ["fallback-on-modern-error"]


def test_the_inspector_gives_up_when_the_probe_gets_no_answer(demo_server, record):
    """With no answer the Inspector waits its connect timeout and exits with an error: it does not fall back
    (where the SDK's Python client falls back after ~10 s)."""
    rec = record(demo_server(), "--edit", "refuse-discover answer=none")
    with pytest.raises(AssertionError, match="exit|timed out|Timeout|timeout"):
        inspector([rec.url], "tools/list", "--protocol-era", "auto", "--connect-timeout", "3000", timeout=60)
    rec.stop()
    tape = read(rec.tape)
    assert methods(tape) == ["server/discover"]
    # live, the proxy held the withheld probe until it stopped: the tape cannot show the client giving up, so
    # check says the recording is incomplete rather than judge the client
    assert [f.rule for f in check([str(rec.tape)])] == ["capture-incomplete"]
