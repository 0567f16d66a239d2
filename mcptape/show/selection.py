"""Which records `show` picks: its filters (--session, --method, --exchange, --status, --grep, --around)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from ..tape import json_form, records
from ..tape.records import Record
from .rows import Row


@dataclass(frozen=True)
class Selection:
    """Which records to show. Each filter given must match (AND); a filter given several times matches any of its
    values (OR)."""

    sessions: tuple[str, ...] = ()  # a session id, or its start as the timeline shows it
    methods: tuple[str, ...] = ()  # a JSON-RPC or HTTP method; shell wildcards (tools/*)
    exchanges: tuple[int, ...] = ()
    statuses: tuple[str, ...] = ()  # 404, 4xx
    grep: re.Pattern | None = None
    around: tuple[int, int] | None = None  # first and last record number

    def __bool__(self) -> bool:
        return bool(self.sessions or self.methods or self.exchanges or self.statuses or self.grep or self.around)

    def _waits(self, row: Row) -> bool:
        """An HTTP request is judged by what its exchange turns out to be (its status, the session its answer
        opened): it waits for the answer."""
        return row.kind == records.HTTP_REQUEST and bool(
            self.statuses or (self.sessions and row.session is None))

    def matches(self, row: Row) -> bool:
        record = row.record
        if self.around and not self.around[0] <= row.seq <= self.around[1]:
            return False
        if self.exchanges and record.get("exchange") not in self.exchanges:
            return False
        if self.sessions:
            session = row.session
            names = (session.label, session.short) if session is not None else ()
            if not any(name.startswith(s) for name in names for s in self.sessions):
                return False
        if self.methods and not any(fnmatchcase(m, pattern) for m in row.methods for pattern in self.methods):
            return False
        if self.statuses:
            ex = row.seen.exchange
            status = str(ex.status) if ex is not None and ex.status is not None else ""
            if not any(_status_matches(status, pattern) for pattern in self.statuses):
                return False
        return self.grep is None or self.grep.search(grep_text(record)) is not None

    def select(self, items: Iterable[Row]) -> Iterator[Row]:
        """The rows that match, in tape order; a request that waits for its answer comes just before it."""
        held: dict[Any, list[Row]] = {}
        last = self.around[1] if self.around else None
        for row in items:
            if last is not None and row.seq > last and not held:
                return
            record = row.record
            if self._waits(row):
                held.setdefault(record.get("exchange"), []).append(row)
                continue
            if held and row.kind in (records.HTTP_RESPONSE, records.END):
                yield from filter(self.matches, held.pop(record.get("exchange"), ()))
            if self.matches(row):
                yield row


def _status_matches(status: str, pattern: str) -> bool:
    return len(status) == len(pattern) and all(p in ("x", s) for p, s in zip(pattern, status))


def parse_status(value: str) -> str:
    """`404`, `4xx`, `40x`; raises ValueError with the reason."""
    pattern = value.lower()
    if not re.fullmatch(r"[1-5x][0-9x]{2}", pattern):
        raise ValueError(f"--status {value!r}: expected an HTTP status such as 404, or a class such as 4xx")
    return pattern


def parse_around(value: str) -> tuple[int, int]:
    """`RECORD[:N]`: N records either side (5 when N is not given); raises ValueError with the reason."""
    found = re.fullmatch(r"(\d+)(?::(\d+))?", value.strip())
    if not found:
        raise ValueError(f"--around {value!r}: expected RECORD or RECORD:N (N records either side), e.g. 26:3")
    center, n = int(found.group(1)), int(found.group(2) or 5)
    return max(0, center - n), center + n


def grep_text(record: Record) -> str:
    """What --grep searches: the record as one line of JSON (as `--format jsonl` prints it), a body that is not
    JSON as its text rather than base64."""
    raw = record.get("raw")
    if isinstance(raw, bytes):
        record = {**record, "raw": raw.decode("utf-8", "replace")}
    return json_form.dumps(record)
