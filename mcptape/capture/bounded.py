"""A line or body as it passes, held only as far as a reader of the tape takes it whole.

The recorder writes what passed as one record; a reader refuses a record over its limit (MCPTAPE_MAX_RECORD_MB), so
a 100 MB line recorded whole could never be read back, and holding it whole costs its size in memory (or its size
squared in time, grown one chunk at a time). So the parts are kept in a list (no copy as they come); past the limit
only the first bytes are kept and the rest is counted and hashed as it passes (records.cut_body). Past _EARLY bytes
the parts are hashed as they come, so the hash is ready when the limit is passed: hashed then at once, 63 MB held
stalled the relay's tape writer (or mitmproxy's loop) ~50 ms while more piled up behind.
"""

from __future__ import annotations

import hashlib

from ..tape import records
from ..tape.codec import max_record

# A record carries a little besides its body (kind, time, direction; headers for HTTP): keep room for it.
_ROOM = 1 << 20
_EARLY = 1 << 20


def body_limit() -> int:
    """The longest body or line recorded whole: what the default reader reads, less room for the record."""
    return max(max_record() - _ROOM, records.CUT_KEEP)


class Bounded:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self._parts: list[bytes] = []
        self._hash = None  # hashlib's, once past _EARLY
        self._cut = False

    def add(self, data: bytes) -> None:
        if not data:
            return
        self.size += len(data)
        if self._hash is not None:
            self._hash.update(data)
        if self._cut:
            return
        self._parts.append(data)
        if self._hash is None and self.size > min(_EARLY, self.limit):
            self._hash = hashlib.sha256()
            for part in self._parts:
                self._hash.update(part)
        if self.size > self.limit:  # from here on only the first bytes are kept
            self._cut = True
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
        return self._cut

    def whole(self) -> bytes:
        """All of it (only when not cut)."""
        return self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)

    def fields(self) -> records.Record:
        """The record's body fields: the body as records.body reads it, or what was kept of one too large."""
        if not self._cut:
            return records.body(self.whole())
        return records.cut_body(self._parts[0], self.size, self._hash.hexdigest(), self.limit)

    def clear(self) -> None:
        self.size, self._parts, self._hash, self._cut = 0, [], None, False
