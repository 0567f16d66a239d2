"""One tape, one writer, across the processes of a run (xdist workers)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time

import pytest

LOCK_WAIT = 600.0  # seconds a worker waits for another to finish recording a tape


class TapeLock:
    """One tape, one writer, across processes (xdist workers): an flock on a file named after the tape's path, in
    the temporary directory (nothing is left beside the tapes). The file says which run last recorded the tape, so
    a worker that waited for another's recording replays it instead of recording again."""

    def __init__(self, tape: str) -> None:
        folder = os.path.join(tempfile.gettempdir(), "mcptape-locks")
        os.makedirs(folder, exist_ok=True)
        key = hashlib.sha1(os.path.realpath(tape).encode()).hexdigest()
        self.fd = os.open(os.path.join(folder, key), os.O_RDWR | os.O_CREAT, 0o644)

    def acquire(self, tape: str) -> None:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self.release()
                    pytest.fail(f"mcptape: {tape} has been being recorded by another process for "
                                f"{LOCK_WAIT:.0f}s; gave up waiting", pytrace=False)
                time.sleep(0.05)  # another worker records this tape: wait for it to finish

    def recorded_by(self) -> str:
        return os.pread(self.fd, 64, 0).decode(errors="replace")

    def mark(self, run: str) -> None:
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, run.encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing drops the flock
            self.fd = -1
