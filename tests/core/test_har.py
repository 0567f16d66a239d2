"""HAR export reads the exchanges the model grouped: each handed out once, when it ends, when a request takes its
number, or when the tape ends first; a stdio tape has none."""

from __future__ import annotations

import pytest

from mcptape.formats import har
from mcptape.model import STDIO, Model, Observer
from mcptape.tape import records
from mcptape.testing.builder import Conversation, Event, result


class Over(Observer):
    def __init__(self) -> None:
        self.over: list[tuple[int, str | None, int]] = []

    def exchange(self, ex, model):
        self.over.append((ex.number, ex.passed.end and ex.passed.end["reason"], len(ex.passed.records)))


def test_each_exchange_is_handed_out_once_with_its_records():
    tape = Conversation()
    tape.initialize()  # exchanges 0 and 1 (initialize, initialized)
    tape.call("tools/call", {"name": "slow"}, stream=True, event_ids=True)  # 2: request, head, 1 event, end
    tape.edit(["drop at=tools/call"], "dropped", exchange=2)  # after its end: not its record any more
    tape.request("tools/list", status=200, events=[], end=None)  # 3: never ended
    watch = Over()
    list(Model([watch]).feed_tape("t", tape.records))
    assert watch.over == [(0, "complete", 3), (1, "complete", 3), (2, "complete", 4), (3, None, 2)]


def test_a_request_that_takes_an_open_exchanges_number_ends_it_for_the_export():
    tape = Conversation()
    tape.initialize()
    tape.request("tools/list", status=None, end=None)  # exchange 2, open
    tape._exchanges = iter([2])  # the recorder starts numbering again (a second run appended)
    tape.call("tools/list", result={"tools": []})
    entries = har.document(tape.records)["log"]["entries"]
    assert [(e["_mcptape"]["exchange"], e["response"]["status"], e["_mcptape"]["end"]) for e in entries] == [
        (0, 200, "complete"), (1, 202, "complete"), (2, 0, "not ended in the tape"), (2, 200, "complete")]


def test_har_entries_carry_the_stream_the_edit_and_the_time_the_exchange_last_moved():
    tape = Conversation()
    tape.initialize()
    number = tape.exchange({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "a"}},
                           events=[Event(msg=result(9), id="e1")], end=None)
    tape.edit(["close at=tools/call"], "closed the stream", exchange=number)
    tape.tick(5)
    tape.end(number, records.CLIENT_DISCONNECTED)
    entry = har.document(tape.records)["log"]["entries"][-1]
    assert entry["_eventSourceMessages"][0]["eventId"] == "e1"
    assert '"id": 9' in entry["response"]["content"]["text"] and entry["_mcptape"]["injected"] is False
    assert entry["time"] == 5000.0 and entry["_mcptape"]["end"] == records.CLIENT_DISCONNECTED


def test_a_stdio_tape_has_no_http_exchanges():
    tape = Conversation(transport=STDIO)
    tape.initialize()
    with pytest.raises(har.NotHttp):
        har.document(tape.records)
