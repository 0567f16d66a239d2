"""The session lifecycle in the model, and the rules that read it, on synthetic records fed in process (fast; the
real-peer tests in test_check.py are the integration layer). Each transition, each refusal wording and status,
a body-less refusal, a capture that begins mid-session, and the order of the observers."""

from __future__ import annotations

import itertools
import random
import json
from pathlib import Path

import pytest

from mcptape.check import check
from mcptape.check.rules import all_rules
from mcptape.model import Model
from mcptape.show import timeline
from mcptape.tape import records
from mcptape.tape.file import Reader
from mcptape.wire import sse

from ..conftest import write_tape

JSON = [("content-type", "application/json")]


def rpc(id_, method: str, **params) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def result(id_, value=None) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "result": value if value is not None else {}}


def error(message: str) -> dict:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}


class Synth:
    """A Streamable HTTP conversation written record by record, as the recorder writes it."""

    def __init__(self, path: Path, start: bool = True) -> None:
        self.path, self.items, self.t, self.exchange = path, [records.capture_start(0.0, "test", {}, {})], 0.0, 0
        self.ids = itertools.count(1)
        if start:
            self.session = self.initialize("s1")

    def post(self, msg: dict | None, session: str | None, status: int = 200, reply: dict | None = None,
             raw: bytes | None = None, method: str = "POST", new_session: str | None = None,
             injected: bool = False) -> int:
        """One exchange; returns the seq of its response record."""
        self.t += 1
        body = records.body(json.dumps(msg).encode()) if msg is not None else {}
        self.items.append(records.http_request(self.t, self.exchange, 0, method, "/mcp", [], [], session,
                                               "2025-11-25" if session else None, True, body))
        fields = records.body(json.dumps(reply).encode()) if reply is not None else \
            ({"raw": raw} if raw else {})
        response = records.http_response(self.t, self.exchange, status, "", JSON, new_session, fields)
        if injected:
            self.items.append(records.edit(self.t, ["expire-session at=post:3"], "answered", self.exchange))
            response["injected"] = True
        self.items.append(response)
        seq = len(self.items) - 1
        self.items.append(records.end(self.t, self.exchange, records.COMPLETE))
        self.exchange += 1
        return seq

    def initialize(self, session: str) -> str:
        request_id = next(self.ids)
        self.post(rpc(request_id, "initialize", protocolVersion="2025-11-25"), None,
                  reply=result(request_id, {"protocolVersion": "2025-11-25"}), new_session=session)
        return session

    def call(self, session: str, status: int = 200, reply: dict | None = None, raw: bytes | None = None,
             injected: bool = False) -> int:
        request_id = next(self.ids)
        if reply is None and status == 200:
            reply = result(request_id, {"content": []})
        return self.post(rpc(request_id, "tools/call", name="add", arguments={}), session, status, reply, raw,
                         injected=injected)

    def delete(self, session: str, status: int = 200) -> int:
        return self.post(None, session, status, method="DELETE")

    def write(self) -> str:
        return write_tape(self.path, self.items)

    def findings(self) -> list[dict]:
        return [f.to_json() for f in check([self.write()])]


# Synth writes the records these tests are about and no more: no Accept header, a bare initialize, no
# notifications/initialized, no capabilities; the requirements that judges are tested in test_requirements.py.
TERSE = {"post-accept-both", "get-accept-sse", "declare-tools", "initialize-request-fields", "initialize-result-fields", "initialized-sent",
         "use-negotiated-capabilities"}


def rules(found: list[dict]) -> list[str]:
    return [f["rule"] for f in found if f["rule"] not in TERSE]


def by_rule(found: list[dict], rule: str) -> dict:
    return next(f for f in found if f["rule"] == rule)


def test_a_deleted_session_used_again_and_refused_with_400(tmp_path):
    """What the TypeScript SDK server does: "No valid session ID provided" for a session it has itself deleted."""
    tape = Synth(tmp_path / "t.mcptape")
    deleted = tape.delete(tape.session)
    tape.call(tape.session, 400, error("Bad Request: No valid session ID provided"))
    found = tape.findings()
    wrong = by_rule(found, "wrong-status-for-dead-session")
    assert wrong["blames"] == "server" and not wrong["injected"]
    assert wrong["transition"] == {"kind": "deleted", "record": deleted, "status": 200, "injected": False}
    assert "a session the client had deleted" in wrong["message"]
    reuse = by_rule(found, "dead-session-reuse")
    assert reuse["blames"] == "client" and reuse["transition"]["kind"] == "deleted"
    assert "no-reinitialize" not in rules(found)  # no 404: nothing told the client to re-initialize


def test_a_400_to_a_live_session_for_a_malformed_request_is_no_death(tmp_path):
    tape = Synth(tmp_path / "t.mcptape")
    tape.call(tape.session, 400, {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "Invalid params"}})
    tape.call(tape.session)
    assert not {"wrong-status-for-dead-session", "dead-session-reuse"} & set(rules(tape.findings()))


def test_a_404_never_gives_wrong_status_and_asks_for_a_new_session(tmp_path):
    tape = Synth(tmp_path / "t.mcptape")
    refused = tape.call(tape.session, 404, error("Session not found"))
    tape.call(tape.session, 404, error("Session not found"))
    found = tape.findings()
    assert "wrong-status-for-dead-session" not in rules(found)
    lost = by_rule(found, "no-reinitialize")
    assert lost["blames"] == "client" and lost["transition"] == {"kind": "refused", "record": refused,
                                                                "status": 404, "injected": False}


def test_a_new_initialize_supersedes_the_dead_session(tmp_path):
    tape = Synth(tmp_path / "t.mcptape")
    tape.call(tape.session, 404, error("Session not found"))
    tape.call(tape.session, 404, error("Session not found"))
    tape.call(tape.initialize("s2"))
    found = tape.findings()
    assert "no-reinitialize" not in rules(found) and "dead-session-reuse" in rules(found)
    assert "[session s1 superseded]" in "\n".join(timeline(tape.path, Reader(tape.path)))


@pytest.mark.parametrize("status, said", [
    (400, "Bad Request: No valid session ID provided"), (400, "Invalid or expired session"),
    (401, "Unauthorized: Session not found"), (400, "Session terminated"), (404, "session not found"),
])
def test_each_wording_of_a_first_refusal(tmp_path, status, said):
    """Wording is the only evidence the first time a session the tape thinks alive is refused (not 404)."""
    tape = Synth(tmp_path / "t.mcptape")
    refused = tape.call(tape.session, status, error(said))
    found = tape.findings()
    assert "auth-rejected" not in rules(found)
    if status == 404:
        assert "wrong-status-for-dead-session" not in rules(found)
        return
    wrong = by_rule(found, "wrong-status-for-dead-session")
    assert wrong["transition"]["record"] == refused and said in wrong["message"]


def test_410_says_gone_by_its_status_and_a_bodyless_refusal_of_an_unknown_session(tmp_path):
    tape = Synth(tmp_path / "t.mcptape")
    tape.call(tape.session, 410)
    found = tape.findings()
    assert "(no body)" in by_rule(found, "wrong-status-for-dead-session")["message"]
    tape = Synth(tmp_path / "u.mcptape")
    tape.call("never-issued", 400)  # the tape holds the conversation's start: the server should not know it either
    wrong = by_rule(tape.findings(), "wrong-status-for-dead-session")
    assert "an unknown session" in wrong["message"] and "(no body)" in wrong["message"]


def test_an_auth_refusal_is_not_a_death(tmp_path):
    tape = Synth(tmp_path / "t.mcptape")
    tape.call(tape.session, 401, error("invalid_token"))
    tape.call(tape.session)
    found = tape.findings()
    assert rules(found) == ["auth-rejected"] and by_rule(found, "auth-rejected")["blames"] == "none"


def test_a_capture_that_begins_mid_session(tmp_path):
    """No initialize in the tape: a session id it never saw opened is no proof the server should not know it."""
    tape = Synth(tmp_path / "t.mcptape", start=False)
    tape.call("opened-before", 400)
    tape.call("opened-before")
    found = tape.findings()
    assert rules(found) == ["capture-incomplete"] and by_rule(found, "capture-incomplete")["blames"] == "none"
    tape = Synth(tmp_path / "u.mcptape", start=False)
    tape.call("opened-before", 404, error("Session not found"))  # a 404 is a 404
    tape.call("opened-before", 404, error("Session not found"))
    assert "no-reinitialize" in rules(tape.findings())


def test_an_edit_that_expires_a_session(tmp_path):
    """The death is mcptape's doing: a finding blaming the server is excused, the client's reaction is not."""
    tape = Synth(tmp_path / "t.mcptape")
    tape.call(tape.session, 401, error("Session not found"), injected=True)
    tape.call(tape.session, 401, error("Session not found"), injected=True)
    found = tape.findings()
    wrong = by_rule(found, "wrong-status-for-dead-session")
    assert wrong["injected"] and wrong["blames"] == "none" and wrong["transition"]["kind"] == "expired"
    reuse = by_rule(found, "dead-session-reuse")
    assert reuse["injected"] and reuse["blames"] == "client"
    shown = "\n".join(timeline(tape.path, Reader(tape.path)))
    assert "[session s1 expired 401 by an edit]" in shown


def test_show_marks_each_transition(tmp_path):
    tape = Synth(tmp_path / "t.mcptape")
    tape.delete(tape.session)
    tape.write()
    shown = "\n".join(timeline(tape.path, Reader(tape.path)))
    assert "[session s1 opened]" in shown and "[session s1 deleted 200]" in shown


def test_stdio_and_legacy_sessions_open_and_end(tmp_path):
    from mcptape.wire import sse

    items = [records.capture_start(0.0, "t", {}, {}),
             records.stdio_line(1.0, records.C2S, json.dumps(rpc(1, "initialize")).encode()),
             records.stdio_line(1.0, records.S2C, json.dumps(result(1)).encode()),
             records.stdio_exit(2.0, 0)]
    path = write_tape(tmp_path / "stdio.mcptape", items)
    shown = "\n".join(timeline(path, Reader(path)))
    assert "[session stdio#1 opened]" in shown and "[session stdio#1 ended]" in shown
    items = [records.capture_start(0.0, "t", {}, {}),
             records.http_request(1.0, 0, 0, "GET", "/sse", [], [], None, None, True, {}),
             records.http_response(1.0, 0, 200, "", [("content-type", "text/event-stream")], None, {}),
             {**records.sse_event(1.0, 0, sse.Event(event="endpoint", data="/messages/?session_id=abc")),
              "session": "abc"},
             records.end(2.0, 0, records.COMPLETE)]
    path = write_tape(tmp_path / "legacy.mcptape", items)
    shown = "\n".join(timeline(path, Reader(path)))
    assert "[session abc opened]" in shown and "[session abc ended]" in shown


def test_the_findings_do_not_depend_on_the_order_of_the_rules(tmp_path):
    """No rule changes the model: every order of the observers gives the same findings."""
    tape = Synth(tmp_path / "t.mcptape")
    tape.call(tape.session, 400, error("Invalid or expired session"))
    tape.call(tape.session, 400, error("Invalid or expired session"))
    other = tape.initialize("s2")
    tape.delete(other)
    tape.call(other, 404, error("Session not found"))
    path = tape.write()

    def run(observers) -> list[str]:
        model = Model(observers)
        found = list(model.feed_tape(path, Reader(path))) + list(model.finish())
        return sorted(json.dumps(f.to_json(), sort_keys=True, default=str) for f in found)

    # every permutation of ten rules is 3.6 million runs: the identity, its reverse and 200 shuffles instead
    count = len(all_rules())
    shuffles = random.Random(0)
    orders = []
    for order in [list(range(count)), list(reversed(range(count)))] + [shuffles.sample(range(count), count)
                                                                       for _ in range(200)]:
        fresh = all_rules()  # rules keep state: new ones for every run
        orders.append(run([fresh[i] for i in order]))
    assert orders[0] and all(order == orders[0] for order in orders)


def test_two_answers_in_one_batch_settle_a_call_once(tmp_path):
    """A batch whose two null-id errors both fall back to the one request of their exchange: the second is a
    duplicate answer, and the call is settled once (diff of the tape with itself finds nothing)."""
    from mcptape.check.diff import diff

    tape = Synth(tmp_path / "t.mcptape")
    tape.call(tape.session, 400, [error("first"), error("second")])
    path = tape.write()
    assert "duplicate-response" in rules(tape.findings()) and diff(path, path) == []


def _closed_early(tape: Synth, version: str = "2025-11-25", resume: bool = False) -> None:
    """A tools/call whose SSE stream the server closes after its priming event (id 7), before the answer; then, if
    `resume`, the client's GET with Last-Event-ID: 7, answered with a stream that never brings the answer."""
    tape.t += 1
    tape.items.append(records.http_request(tape.t, tape.exchange, 0, "POST", "/mcp", [], [], tape.session, version,
                                           True, records.body(json.dumps(rpc(9, "tools/call", name="slow")).encode())))
    tape.items.append(records.http_response(tape.t, tape.exchange, 200, "", [("content-type", "text/event-stream")],
                                            None, {}))
    tape.items.append(records.sse_event(tape.t, tape.exchange, sse.Event(id="7", data="", retry=100)))
    tape.items.append(records.end(tape.t, tape.exchange, records.COMPLETE))
    tape.exchange += 1
    if resume:
        tape.t += 1
        tape.items.append(records.http_request(tape.t, tape.exchange, 0, "GET", "/mcp", [],
                                               [("last-event-id", "7")], tape.session, version, True, {}))
        tape.items.append(records.http_response(tape.t, tape.exchange, 200, "",
                                                [("content-type", "text/event-stream")], None, {}))
        tape.items.append(records.end(tape.t, tape.exchange, records.COMPLETE))
        tape.exchange += 1


def test_a_stream_the_server_closed_for_resumption_and_never_resumed_is_the_clients_to_resume(tmp_path):
    tape = Synth(tmp_path / "t.mcptape")
    _closed_early(tape)
    found = tape.findings()
    assert rules(found) == ["no-resume-after-close"]
    assert by_rule(found, "no-resume-after-close")["blames"] == "client"


def test_a_resumed_stream_that_never_brings_the_answer_is_the_servers(tmp_path):
    tape = Synth(tmp_path / "t.mcptape")
    _closed_early(tape, resume=True)
    found = tape.findings()
    assert rules(found) == ["unanswered-request"] and by_rule(found, "unanswered-request")["blames"] == "server"


def test_before_2025_11_25_a_server_closing_the_stream_early_leaves_the_request_unanswered(tmp_path):
    tape = Synth(tmp_path / "t.mcptape", start=False)
    request_id = next(tape.ids)
    tape.post(rpc(request_id, "initialize", protocolVersion="2025-06-18"), None,
              reply=result(request_id, {"protocolVersion": "2025-06-18"}), new_session="s1")
    tape.session = "s1"
    _closed_early(tape, version="2025-06-18")
    assert rules(tape.findings()) == ["unanswered-request"]
