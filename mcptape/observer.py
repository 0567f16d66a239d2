"""How the analysis model (model.py) speaks to whoever reads it: each record as the model understood it (`Seen`),
and the `Observer` a reader subclasses to hear of records, noticed facts, settled calls and finished exchanges."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from mypy_extensions import mypyc_attr

from .conversation import Call, Exchange, Session
from .facts import Fact

if TYPE_CHECKING:
    from .model import Model


class Seen:
    """A record as the model understands it: where it sits, its message, which session and exchange it belongs to,
    and the facts the model noticed on it (facts.py: a session transition, a duplicate request, an orphan or late
    answer, progress after the answer, an answer on the GET stream, a malformed message)."""

    __slots__ = ("tape", "seq", "record", "kind", "t", "msg", "session", "exchange", "notes")
    tape: str
    seq: int
    record: dict
    kind: Any  # the record's kind (records.KINDS; anything in a hostile tape)
    t: float
    msg: Any  # the record's message (or batch), read once for every observer: record.get("msg")
    session: Session | None
    exchange: Exchange | None
    notes: tuple[Fact, ...]

    # (written out, as the model's classes are, conversation.py; a new field is set here too)
    def __init__(self, tape: str, seq: int, record: dict, kind: Any, t: float = 0.0, msg: Any = None,
                 session: Session | None = None, exchange: Exchange | None = None,
                 notes: tuple[Fact, ...] = ()) -> None:
        self.tape, self.seq, self.record, self.kind, self.t, self.msg = tape, seq, record, kind, t, msg
        self.session, self.exchange, self.notes = session, exchange, notes

    def __repr__(self) -> str:
        return f"Seen({self.tape!r}, seq={self.seq}, {self.kind!r})"

    def note(self, fact: Fact) -> None:
        self.notes += (fact,)


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled (docs/compiled.md), subclassed by plain Python readers
class Observer:
    """Override what you need. Findings or anything else come back as iterables. `record` runs for every record of
    the kinds in `kinds` (of every kind when None), so it returns None fast when a record is not its business;
    `noted` runs for the records the model noticed something on (see Seen.notes), a few in a large tape."""

    kinds: ClassVar[frozenset[str] | None] = None

    def record(self, seen: Seen, model: Model) -> Iterable[Any] | None:
        return None

    def noted(self, seen: Seen, model: Model) -> Iterable[Any] | None:
        return None

    def call(self, call: Call, model: Model) -> Iterable[Any] | None:
        return None

    def exchange(self, ex: Exchange, model: Model) -> Iterable[Any] | None:
        """An HTTP exchange is over: its end came, a request took its number, or the tape ended first. Its
        records are in `ex.passed` (the model keeps them only when an observer overrides this)."""
        return None

    def finish(self, model: Model) -> Iterable[Any]:
        return ()
