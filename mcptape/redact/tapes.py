"""A whole tape: redacted (`mcptape redact`, `bundle --redact`), or told why it is not safe to share
(`check --require-redacted`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..tape.file import Reader
from ..tape.records import is_capture_start
from .redactor import Redactor
from .scrub import secrets_in


@dataclass(frozen=True)
class Unredacted:
    """One reason a tape is not safe to share: a secret at a JSON pointer of a record (`rule`: the shape or name
    that found it), or a header or recording run that says bodies were not redacted (`rule` "not-redacted")."""

    tape: str
    record: int | None  # None: the tape's header
    where: str  # a JSON pointer, or (for the header) the reason in words
    rule: str

    def to_json(self) -> dict:
        """`pointer` is always a JSON pointer: the header's reason points at /redaction, with its words under
        `detail`."""
        where = {"pointer": self.where} if self.where.startswith("/") else {"pointer": "/redaction",
                                                                            "detail": self.where}
        return {"tape": self.tape, "record": self.record, "rule": self.rule, **where}

    def line(self) -> str:
        fix = f"run: mcptape redact {self.tape} -o REDACTED.mcptape"
        if self.record is None:
            return f"{self.tape}: not redacted ({self.where}); {fix}"
        if self.rule == "not-redacted":
            return (f"{self.tape}#{self.record} {self.where}: not redacted (a recording run without body redaction); "
                    f"{fix}")
        return f"{self.tape}#{self.record} {self.where}: still holds a secret ({self.rule}); {fix}"


def unredacted_in(tape: str) -> Iterator[Unredacted]:
    """Why the tape at `tape` is not safe to share (`check --require-redacted`). Raises TapeError."""
    reader = Reader(tape)
    for number, where, rule in unredacted(reader.header, reader):
        yield Unredacted(tape, number, where, rule)


def unredacted(header: dict, records: Iterable[dict]) -> Iterator[tuple[int | None, str, str]]:
    """Why a tape is not safe to share, for `check --require-redacted`: (None, what, "not-redacted") when its
    header, or (record number, "/redaction", "not-redacted") when a recording run in it, says redaction was off
    or did not cover bodies; then each secret `secrets_in` finds."""
    if not _covers_bodies(header.get("redaction")):
        yield None, "its header says it was recorded without body redaction", "not-redacted"
    starts: list[int] = []

    def watched(records: Iterable[dict]) -> Iterator[dict]:
        for number, record in enumerate(records):
            if is_capture_start(record) and not _covers_bodies(record.get("redaction")):
                starts.append(number)
            yield record

    found = list(secrets_in(watched(records)))
    yield from sorted([(number, "/redaction", "not-redacted") for number in starts] + found)


def _covers_bodies(redaction: Any) -> bool:
    return isinstance(redaction, dict) and redaction.get("enabled") is True and redaction.get("body") is True


def redacted_tape(header: dict, records: Iterable[dict], redactor: Redactor) -> tuple[dict, Iterator[dict]]:
    """A tape's header and records redacted, each part that says how a tape was redacted saying so: what
    `mcptape redact` writes, and `mcptape bundle --redact` puts in a bundle."""
    described = redactor.describe()

    def redacted() -> Iterator[dict]:
        for record in records:
            if is_capture_start(record):
                record = {**record, "redaction": described}
            yield redactor.record(record)

    return {**header, "redaction": described}, redacted()
