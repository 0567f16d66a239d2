"""Where the recorder's capture writes its records: a tape, guarded so that a tape that can no longer be written
stops the recording and never the traffic (TapeSink), or nowhere, when there are live edits but no tape (Discard)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ...tape import records
from ...tape.file import Writer

logger = logging.getLogger("mcptape")


class Discard:
    """Where records go when there are edits but no tape: the capture still drives the edited streams."""

    def write(self, record: records.Record) -> None:
        pass


class TapeSink:
    """The capture's writer, guarded: a tape that can no longer be written (a full disk, a file gone bad) stops the
    recording once, saying so, and never the traffic. What was written before stays readable (one frame a write).
    A watcher (record's live view) is told of each record once it is written."""

    def __init__(self, writer: Writer, watch: Callable[[records.Record], None] | None = None) -> None:
        self.writer, self.watch = writer, watch
        self.failure: str | None = None
        self.exchanges = 0  # whose request is on disk: what the closing summary counts

    def write(self, record: records.Record) -> None:
        if self.failure is not None:
            return
        try:
            self.writer.write(record)
        except Exception as e:
            self.failure = e.strerror if isinstance(e, OSError) and e.strerror else f"{type(e).__name__}: {e}"
            logger.error(f"mcptape: recording stopped ({self.failure}); the traffic goes on unrecorded")
            return
        if records.is_http_request(record):
            self.exchanges += 1
        if self.watch is not None:
            try:
                self.watch(record)
            except Exception as e:  # the view never costs the tape a record
                logger.error(f"mcptape: the live view failed: {type(e).__name__}: {e}")
