"""A tape exported as a mitmproxy flow file is the same bytes every time: flow and connection ids come from the
flow's place in the file, and each is its own."""

from __future__ import annotations

import io

from mitmproxy import io as mitm_io

from mcptape.formats import flowfile
from mcptape.testing.builder import Conversation


def _export(tape: Conversation) -> bytes:
    out = io.BytesIO()
    flowfile.write(tape.records, out)
    return out.getvalue()


def test_the_same_tape_exports_to_the_same_bytes_with_distinct_ids():
    tape = Conversation()
    tape.initialize()
    tape.call("tools/list", result={"tools": []}, conn=1)
    tape.call("tools/call", {"name": "add"}, stream=True, event_ids=True)
    data = _export(tape)
    assert data == _export(tape)
    flows = list(mitm_io.FlowReader(io.BytesIO(data)).stream())
    assert len(flows) == 4
    assert len({f.id for f in flows}) == 4 and len({f.server_conn.id for f in flows}) == 4
    assert len({f.client_conn.id for f in flows}) == 2  # two connections (conn 0 and 1)
