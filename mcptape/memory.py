"""What keeps the analysis model's memory flat on a tape of any length, and its time linear: a bounded recall of
recent entries (`Recent`), and the cyclic garbage collector paused while a tape is fed."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a long tape is fed. The model's objects hold no reference
    cycles (reference counting frees every record, exchange and call), but the bounded caches of settled calls keep
    ~10^5 objects alive that each collection would rescan for garbage that is not there: about a sixth of check's
    time on a large tape."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Recent:
    """Remembers at least the last `size` entries and at most twice that: two generations of plain dicts, the
    older dropped whole when the newer fills (cheaper than evicting one entry at a time)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.new: dict = {}
        self.old: dict = {}

    def remember(self, key: Any, value: Any) -> None:
        self.new[key] = value
        if len(self.new) >= self.size:
            self.old, self.new = self.new, {}

    def get(self, key: Any) -> Any:
        found = self.new.get(key)
        return self.old.get(key) if found is None else found
