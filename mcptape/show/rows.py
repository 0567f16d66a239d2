"""A tape's records as `show` lists them: each with what the model knows of it (its session, its exchange, the facts
noticed on it) and the methods it concerns, read in one pass."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..model import Model, Observer, Seen, Session
from ..tape import records
from ..tape.records import Record
from ..wire import jsonrpc


@dataclass(slots=True)
class Row:
    """A record with what the model knows of it and the methods it concerns (for --method)."""

    seen: Seen
    methods: frozenset[str]
    start: float | None  # the time of the tape's first record: the timeline's clock runs from it
    answered: bool = False  # an exchange's end, after the answer to the request it carried: a hang-up is normal

    @property
    def seq(self) -> int:
        return self.seen.seq

    @property
    def record(self) -> Record:
        return self.seen.record

    @property
    def kind(self) -> Any:
        return self.seen.kind

    @property
    def session(self) -> Session | None:
        """Its session; for a request that opened one (initialize), known once the answer came."""
        ex = self.seen.exchange
        return self.seen.session or (ex.session if ex is not None else None)


class _Rows(Observer):
    def __init__(self, methods: bool) -> None:
        self.start: float | None = None
        self.methods = methods  # work out the methods each record concerns (only --method needs them)
        self._asked: dict[tuple, str] = {}  # requests not answered yet -> their method, to name their answers
        self._carried: dict[Any, str] = {}  # open HTTP exchange -> the method of the request it carried
        self._answered: set[int] = set()  # open HTTP exchanges whose request got its final response

    def record(self, seen: Seen, model: Model) -> list[Row]:
        record = seen.record
        t = record.get("t")
        if self.start is None and isinstance(t, (int, float)):
            self.start = t
        ex = seen.exchange
        if ex is not None and isinstance(ex.msg, dict) and "id" in ex.msg and isinstance(record.get("msg"), dict) \
                and record["msg"].get("id") == ex.msg["id"] and "method" not in record["msg"]:
            self._answered.add(ex.number)
        answered = ex is not None and seen.kind == records.END and ex.number in self._answered
        if answered:
            self._answered.discard(ex.number)
        return [Row(seen, self._methods(seen) if self.methods else frozenset(), self.start, answered)]

    def _methods(self, seen: Seen) -> frozenset[str]:
        record, ex, session = seen.record, seen.exchange, seen.session
        found: set[str] = set()
        if ex is not None:
            found.add(ex.method)  # GET, POST, DELETE
            # every record of an exchange concerns the request it carried (the model forgets it at the end)
            if isinstance(ex.msg, dict) and isinstance(ex.msg.get("method"), str):
                self._carried[ex.number] = ex.msg["method"]
            carried = (self._carried.pop if seen.kind == records.END else self._carried.get)(ex.number, None)
            if carried is not None:
                found.add(carried)
        if "msg" not in record:
            return frozenset(found)
        direction = record.get("dir") or (records.C2S if seen.kind == records.HTTP_REQUEST else records.S2C)
        for msg in jsonrpc.messages(record["msg"]):
            if not isinstance(msg, dict):
                continue
            method = msg.get("method")
            if isinstance(method, str):
                found.add(method)
                if "id" in msg:
                    self._asked[(id(session), direction, jsonrpc.id_key(msg["id"]))] = method
            elif "id" in msg:
                asked = records.C2S if direction == records.S2C else records.S2C
                method = self._asked.pop((id(session), asked, jsonrpc.id_key(msg.get("id"))), None)
                if method is not None:
                    found.add(method)
        return frozenset(found)


def rows(name: str, items: Iterable[Record], methods: bool = False) -> Iterator[Row]:
    """Every record of a tape with the model's view of it, in order; with the methods it concerns if asked."""
    yield from Model([_Rows(methods)]).feed_tape(name, items)
