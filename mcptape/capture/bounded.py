"""A line or body as it passes, held only as far as a reader of the tape takes it whole.

The recorder writes what passed as one record; a reader refuses a record over its limit (MCPTAPE_MAX_RECORD_MB), so
a 100 MB line recorded whole could never be read back, and holding it whole costs its size in memory (or its size
squared in time, grown one chunk at a time). So the parts are kept in a list (no copy as they come); past the limit
only the first bytes are kept and the rest is counted and hashed as it passes (records.cut_body).
"""

from __future__ import annotations

import hashlib

from ..tape import records
from ..tape.codec import max_record

# A record carries a little besides its body (kind, time, direction; headers for HTTP): keep room for it.
_ROOM = 1 << 20


def body_limit() -> int:
    """The longest body or line recorded whole: what the default reader reads, less room for the record."""
    return max(max_record() - _ROOM, records.CUT_KEEP)


class Bounded:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self._parts: list[bytes] = []
        self._hash = None  # hashlib's, once over the limit

    def add(self, data: bytes) -> None:
        if not data:
            return
        self.size += len(data)
        if self._hash is not None:
            self._hash.update(data)
            return
        self._parts.append(data)
        if self.size > self.limit:  # from here on only the first bytes are kept
            self._hash = hashlib.sha256()
            for part in self._parts:
                self._hash.update(part)
            first, kept = [], 0
            for part in self._parts:
                if kept >= records.CUT_KEEP:
                    break
                first.append(part[: records.CUT_KEEP - kept])
                kept += len(first[-1])
            self._parts = [b"".join(first)]

    @property
    def prefix(self) -> bytes:
        """The first bytes (up to 1 KB), cut or not."""
        return self._parts[0][:1024] if self._parts else b""

    @property
    def cut(self) -> bool:
        return self._hash is not None

    def whole(self) -> bytes:
        """All of it (only when not cut)."""
        return self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)

    def fields(self) -> records.Record:
        """The record's body fields: the body as records.body reads it, or what was kept of one too large."""
        if self._hash is None:
            return records.body(self.whole())
        return records.cut_body(self._parts[0], self.size, self._hash.hexdigest(), self.limit)

    def clear(self) -> None:
        self.size, self._parts, self._hash = 0, [], None
