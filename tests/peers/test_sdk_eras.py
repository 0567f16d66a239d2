"""The official Python SDK's client and server at the older revisions they still speak (2025-03-26, 2025-06-18),
recorded through `mcptape record` over Streamable HTTP and stdio: `check` says nothing at warning or above (issue 33:
no false alarms on real peers).

The SDK's client always asks for its latest handshake revision in `initialize` (client/session.py sends
LATEST_HANDSHAKE_VERSION) and its server answers with the revision asked for when it supports it (server/runner.py):
the client is made to ask for the older one, as an older client would."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import StdioServerParameters

from mcptape.demo.client import script
from mcptape.tape.file import read

from ..conftest import MCPTAPE, loud_findings

ERAS = ("2025-03-26", "2025-06-18")


@pytest.fixture(params=ERAS)
def era(request, monkeypatch) -> str:
    monkeypatch.setattr("mcp.client.session.LATEST_HANDSHAKE_VERSION", request.param)
    return request.param


def negotiated(tape) -> str:
    return next(r["msg"]["result"]["protocolVersion"] for r in read(tape).records
                if isinstance(r.get("msg"), dict) and "protocolVersion" in r["msg"].get("result", {}))


def test_streamable_http(era, demo_server, record):
    rec = record(demo_server("--event-store", "--handshake-only"))
    lines = anyio.run(script, rec.url, "legacy")
    assert rec.stop()[0] == 0
    assert lines[0] == f"protocol {era}" and "resource hello from a resource" in lines
    assert negotiated(rec.tape) == era
    assert loud_findings(rec.tape) == []


def test_stdio(era, tmp_path):
    tape = tmp_path / "stdio.mcptape"
    argv = [MCPTAPE, "record", "-o", str(tape), "--", sys.executable, "-m", "mcptape.demo.server", "--stdio"]
    lines = anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")
    assert lines[0] == f"protocol {era}" and "countdown counted down from 3" in lines
    assert negotiated(tape) == era
    assert loud_findings(tape) == []
