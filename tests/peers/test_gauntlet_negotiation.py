"""A negotiation fault over a real auto client (issue 35): the official SDK client in auto mode, recorded against
the SDK server (it probes; no initialize on the tape), then run by the gauntlet with its probe refused by an empty
400, as legacy servers answer. What the client really did is in the run's log."""

from __future__ import annotations

import sys

import anyio

from mcptape.demo.client import script
from mcptape.gauntlet import Gauntlet
from mcptape.tape.file import read


def test_the_sdk_auto_client_falls_back_on_an_empty_400_and_goes_on(demo_server, record, tmp_path):
    rec = record(demo_server())
    anyio.run(script, rec.url, "auto")
    code, _, err = rec.stop()
    assert code == 0, err
    result = Gauntlet(str(rec.tape), [sys.executable, "-m", "mcptape.demo.client", "{url}", "--mode", "auto"],
                      faults=["probe-400", "probe-exit"], timeout=30, logs=str(tmp_path / "logs")).run(2)
    (run, exit_) = result.runs
    assert (run.fault.name, run.at, run.verdict) == ("probe-400", "server/discover#1", "recovered"), run.why
    assert (exit_.verdict, exit_.why) == ("n/a", "only a server the client starts can exit on the probe (over HTTP, "
                                                 "see reset)")
    sent = [r["msg"]["method"] for r in read(run.logs[0]).records
            if r["kind"] == "http.request" and isinstance(r.get("msg"), dict) and "method" in r["msg"]]
    assert sent[:3] == ["server/discover", "initialize", "notifications/initialized"]  # refused, it fell back
    assert "server/discover" not in sent[1:] and "tools/call" in sent  # and the conversation went on
