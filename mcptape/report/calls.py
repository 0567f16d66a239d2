"""The report's calls, in memory that does not grow with the tape. A conversation of a million calls would cost a
kilobyte a call if each were held as a dict; the pages list at most a hundred and draw what matters, so only those
are kept: every call of a short conversation, and of a long one the first CALLS_KEPT plus those that matter (up to
CALLS_KEPT more). The calls left out are counted (per method, for the diagram's folded runs and the method table)
and written to a spool file, from which the JSON report still lists every call."""

from __future__ import annotations

import pickle
import statistics
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterator

from ..tape import records
from ..wire import jsonrpc

CALLS_KEPT = 1000  # ordinary calls kept in memory, and as many more that matter
_SPOOL_IN_MEMORY = 1 << 20  # the spool stays in memory up to this size, then goes to a temporary file
_NOWHERE: frozenset = frozenset()  # while calls settle no finding is known yet


def matters(call: dict, about: set) -> bool:
    """A call the pages show one by one: the handshake, failures, injected answers, requests the server sent, and
    calls a finding is about (`about`: their (tape, record))."""
    return (call["outcome"] != "result" or call["injected"] or call["dir"] == records.S2C
            or call["method"] in ("initialize", "server/discover")
            or (call["tape"], call["record"]) in about)


class CallList(list):
    """The calls kept in memory, in the order they settled; `folded` counts the runs left out between them, and
    `every()` gives back all calls from the spool."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0
        self.folded: list[dict] = []  # runs of calls not kept: where each began, its first methods, its counts
        self._ordinary = self._notable = 0
        self._spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)
        self._stats: dict[tuple[str, str], _Stats] = {}

    def add(self, call: dict) -> None:
        self.total += 1
        self._stats.setdefault((call["dir"], call["method"]), _Stats()).add(call)
        pickle.dump(call, self._spool, pickle.HIGHEST_PROTOCOL)  # our own file, read back by us: pickle is exact
        notable = matters(call, _NOWHERE)
        if notable and self._notable < CALLS_KEPT:
            self._notable += 1
        elif not notable and self._ordinary < CALLS_KEPT:
            self._ordinary += 1
        else:
            self._fold(call)
            return
        self.append(call)

    def _fold(self, call: dict) -> None:
        run = self.folded[-1] if self.folded and self.folded[-1]["after"] == len(self) else None
        if run is None:
            run = {"tape": call["tape"], "record": call["record"], "after": len(self), "first": [],
                   "methods": Counter(), "unanswered": 0}
            self.folded.append(run)
        if len(run["first"]) < 2:
            run["first"].append(call["method"])
        run["methods"][call["method"]] += 1
        run["unanswered"] += call["outcome"] != "result"

    def methods(self) -> list[dict]:
        """Calls by (direction, method): how many, their outcomes, median and slowest duration."""
        return [stats.to_json(direction, method) for (direction, method), stats in self._stats.items()]

    def every(self) -> Iterator[dict]:
        """Every call, in the order they settled, read back from the spool one at a time."""
        self._spool.seek(0)
        while True:
            try:
                yield pickle.load(self._spool)
            except EOFError:
                return

    def where(self, wanted: set[tuple]) -> dict[tuple, dict]:
        """The calls at `wanted` (tape, record, dir, id key), kept or not: those not kept are read back from the
        spool, one at a time (only when a finding names a call the report did not keep)."""
        found = {key: c for c in self if (key := _where(c)) in wanted}
        if len(found) < len(wanted) and len(self) < self.total:
            for call in self.every():
                if (key := _where(call)) in wanted:
                    found[key] = call
        return found

    def close(self) -> None:
        self._spool.close()


def _where(call: dict) -> tuple:
    return call["tape"], call["record"], call["dir"], jsonrpc.id_key(call["id"])


class _Stats:
    __slots__ = ("count", "durations", "outcomes")

    def __init__(self) -> None:
        self.count = 0
        self.outcomes: Counter = Counter()
        self.durations = array("d")  # 8 bytes a call: a median needs them all

    def add(self, call: dict) -> None:
        self.count += 1
        self.outcomes[call["outcome"]] += 1
        if call["duration_ms"] is not None:
            self.durations.append(call["duration_ms"])

    def to_json(self, direction: str, method: str) -> dict:
        durations = self.durations
        return {"dir": direction, "method": method, "count": self.count, "outcomes": dict(self.outcomes),
                "median_ms": round(statistics.median(durations), 3) if durations else None,
                "max_ms": max(durations) if durations else None}
