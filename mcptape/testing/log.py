"""What the client did, read back through the analysis model: the questions a client author asks after an edit
(did it open a new session after the old one died? which requests met the dead session? which were never
answered? what did it get for call N?)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..facts import Outcome
from ..model import STDIO, Call, Model, Observer, Session
from ..replay.serve import MISS, MISS_CODE
from ..tape.file import Reader
from ..tape.records import C2S
from ..wire import jsonrpc



@dataclass
class LoggedCall:
    """One request the client sent and what came of it."""

    method: str
    id: Any
    request: dict
    response: dict | None  # the JSON-RPC answer the client got, if any
    status: int | None  # the HTTP status that refused the request outright (404 for a dead session), if any
    session: str | None  # the session id it carried, as the log has it
    injected: bool  # an edit changed what the client got
    cancelled: bool  # the client sent notifications/cancelled for it (answered or not)
    outcome: Outcome  # how it ended
    tape: str
    seq: int
    _session: Session = field(repr=False, compare=False)

    @property
    def answered(self) -> bool:
        return self.outcome.answered

    @property
    def result(self) -> Any:
        return self.response.get("result") if self.response else None

    @property
    def error(self) -> dict | None:
        return self.response.get("error") if self.response else None

    @property
    def met_dead_session(self) -> bool:
        """Sent on a session that was already gone, or refused as the one that found it gone."""
        dead = self._session.dead
        return dead is not None and (self.seq > dead.seq or (self.status is not None and self.status == dead.status))

    def __str__(self) -> str:
        got = (f"HTTP {self.status}" if self.status is not None and not self.answered
               else jsonrpc.describe(self.response) if self.answered else "no answer")
        return f"{jsonrpc.describe(self.request)} -> {got}"


class _Calls(Observer):
    def __init__(self) -> None:
        self.calls: list[LoggedCall] = []

    def call(self, call: Call, model: Model) -> None:
        if call.dir == C2S and isinstance(call.request, dict):
            label = None if call.session.transport == STDIO else call.session.label
            self.calls.append(LoggedCall(call.method, call.id, call.request, call.response, call.rejected_status,
                                         label, call.injected, call.cancel is not None, call.outcome, call.tape,
                                         call.seq, call.session))


class ClientLog:
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        collect = _Calls()
        model = Model([collect])
        for path in paths:
            for _ in model.feed_tape(path, Reader(path)):
                pass
        for _ in model.finish():
            pass
        order = {path: n for n, path in enumerate(paths)}
        self.calls = sorted(collect.calls, key=lambda c: (order[c.tape], c.seq))  # in the order the client sent
        self.sessions = list(model.sessions.values())

    def requests(self, method: str | None = None) -> list[LoggedCall]:
        """The client's requests (of one method), in the order it sent them."""
        return [c for c in self.calls if method is None or c.method == method]

    def call(self, method: str, n: int = 1) -> LoggedCall:
        """The client's Nth request of a method, counted from 1 as the edits' METHOD#N selector counts."""
        calls = self.requests(method)
        if not 1 <= n <= len(calls):
            raise LookupError(f"the client sent {len(calls)} {method} request(s), so there is no {method}#{n}"
                              f"{'; it sent: ' + ', '.join(sorted({c.method for c in self.calls})) if self.calls else ''}")
        return calls[n - 1]

    @property
    def initializes(self) -> int:
        return len(self.requests("initialize"))

    @property
    def reinitialized(self) -> bool:
        """Whether the client opened a new session (initialize without a session id) after one died."""
        return any(s.superseded is not None for s in self.sessions)

    @property
    def dead_session_requests(self) -> list[LoggedCall]:
        """Requests that met a dead session: the one refused as it died, and every one sent on it afterwards."""
        return [c for c in self.calls if c.met_dead_session]

    @property
    def unanswered(self) -> list[LoggedCall]:
        """Requests that got neither an answer nor a refusal, and were not cancelled."""
        return [c for c in self.calls if c.outcome is Outcome.UNANSWERED]

    @property
    def misses(self) -> list[str]:
        """The replay's own errors for requests the tape had no answer for, each naming the closest recorded
        request and where it differed."""
        return [f"{jsonrpc.describe(c.request)}: {c.error['message'].removeprefix('mcptape: ')}" for c in self.calls
                if c.error and c.error.get("code") == MISS_CODE and str(c.error.get("message", "")).startswith(MISS)]
