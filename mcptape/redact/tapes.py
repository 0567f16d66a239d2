"""A whole tape: redacted (`mcptape redact`, `bundle --redact`), or told why it is not safe to share
(`check --require-redacted`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..tape.records import is_capture_start
from .redactor import Redactor
from .scrub import secrets_in


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
