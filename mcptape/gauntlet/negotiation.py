"""The gauntlet's negotiation faults: an older server's answers to a 2026-07-28 auto client's probe
(`server/discover`), played by the `refuse-discover` edits (faults.py lists them, `probe=True`). They apply only
to a tape where the client probed, once each, at the probe (`PROBE`); recovery is the fallback the spec's Backward
Compatibility clauses ask for, judged here from the model's calls on the run's log: an `initialize` after the refused
probe, or (over HTTP, after 400/404/405) the GET that looks for a legacy HTTP+SSE server's `endpoint` event."""

from __future__ import annotations

from collections import Counter

from ..check.negotiation import LEGACY_STATUSES
from ..model import Call, Model, Observer, Seen
from ..tape import records
from ..wire import http

PROBE = "server/discover#1"  # where a negotiation fault fires: the client's first probe (the edit refuses every one)
# the client requests of 2026-07-28 that no older revision has (its schema): a client fallen back sends none
MODERN_ONLY = frozenset({"server/discover", "subscriptions/listen"})
NOT_PROBED = ("the client did not probe: the tape has no server/discover before its first other request (a "
              "legacy-mode client, or a tape of a client that never speaks 2026-07-28)")


def probed(recording) -> bool:
    """The tape's client probed: its first request is server/discover (an auto or 2026-07-28 client)."""
    for answer in recording.answers:
        request = answer.request
        if isinstance(request, dict) and "id" in request and isinstance(request.get("method"), str):
            return request["method"] == "server/discover"
    return False


def after_fallback(expected: Counter) -> Counter:
    """What a client fallen back still asks for: each method the recorded run has but the era's own, once at
    least. Counts are not kept: an era changes how often a client lists (the Inspector CLI lists tools twice on
    2026-07-28, once after a handshake)."""
    return Counter({method: 1 for method, n in expected.items() if n and method not in MODERN_ONLY})


class _Fallback(Observer):
    """The client's first probe, and where it sent initialize or a plain GET (HTTP+SSE's detection) after it."""

    kinds = frozenset({records.HTTP_REQUEST})

    def __init__(self) -> None:
        self.probe: int | None = None  # the record of the first server/discover the client sent
        self.status: int | None = None  # the HTTP status that refused it
        self.initialize: list[int] = []
        self.gets: list[int] = []  # GETs without Last-Event-ID: a client looking for an endpoint event

    def record(self, seen: Seen, model: Model) -> None:
        r = seen.record
        if r.get("method") == "GET" and http.get(r.get("headers") or [], http.LAST_EVENT_ID) is None:
            self.gets.append(seen.seq)

    def call(self, call: Call, model: Model) -> None:
        if call.dir != records.C2S:
            return
        if call.method == "server/discover" and (self.probe is None or call.seq < self.probe):
            self.probe, self.status = call.seq, call.rejected_status
        elif call.method == "initialize":
            self.initialize.append(call.seq)


def fallback_missing(log: list[dict]) -> str | None:
    """Why the run's log shows no fallback from the refused probe, or None when the client fell back: sent
    initialize after it (on the same replay; over stdio, to a server it started again), or a GET for HTTP+SSE."""
    seen = _Fallback()
    model = Model([seen])
    for _ in model.feed_tape("gauntlet", log):
        pass
    for _ in model.finish():
        pass
    if seen.probe is None:
        return "the client never probed with server/discover"
    sse = seen.gets if seen.status in LEGACY_STATUSES else []  # the spec's HTTP+SSE detection reads these only
    if any(seq > seen.probe for seq in seen.initialize + sse):
        return None
    return "no initialize after the refused server/discover: the client did not fall back"
