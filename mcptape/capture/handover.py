"""The hand-over from the stdio relay to its tape writer (capture/stdio.py), both ends.

What each pipe brought goes over as frames of (what, time, length) and the bytes, in the order their times say;
`what` is a pipe, or a record the relay made (pickled). The pipe between is made large where the system allows,
so bursts pass without waiting for the writer; past it the relay waits (memory stays bounded when the tape is
slower than the pipes).

Zero copy (Linux): bulk data on a pipe whose bytes no edit can change goes on by tee(2) and splice(2). tee
duplicates what the pipe holds into a side pipe of its own for the tape writer, the frame then says its bytes wait
there, and splice moves them on to the reader: the kernel passes page references, the bytes never come into this
process. Read and written, each byte was copied three times here (into us, to the reader, to the tape writer).
Bulk: from a read that filled its buffer until a tee brings less than _LIGHT; a message or a few costs less read
and written than by tee, splice and a second read in the tape writer. Where tee or splice cannot serve (not Linux;
a file, terminal or socket at either end; the tape writer gone), the relay reads and writes, as before.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import queue
import struct
import time
from collections.abc import Callable

_FRAME = struct.Struct("<BdI")
_ASIDE = 0x80  # in `what`: the frame's bytes wait in that pipe's side pipe, not after the frame
_SIZE = 1 << 20  # each pipe to the tape writer, and the most one read or tee takes
_LIGHT = 4096  # a read of fewer bytes is light traffic (a message or a few); a bulk read never waits (below)
_GATHER = 0.01  # seconds the tape writer lets frames gather between reads (fewer wake-ups, larger writes)


class Handover:
    """Made before the fork; then the relay keeps the writing ends (sender()), the tape writer the reading ends
    (receiver()). `spliced`: the pipes (by `what`) that may go on by zero copy."""

    def __init__(self, spliced: tuple[int, ...]) -> None:
        self._control = _pipe()
        self._sides = {what: _pipe() for what in spliced} if spliced and _tee() else {}
        self._refused: set[int] = set()  # pipes zero copy failed on once: read and written from then on

    def sender(self) -> None:
        self._keep(1)

    def receiver(self) -> None:
        self._keep(0)

    def _keep(self, end: int) -> None:
        for pipe in (self._control, *self._sides.values()):
            os.close(pipe[1 - end])
            pipe[1 - end] = -1

    # -- the relay's end -------------------------------------------------------------------------------------------

    def send(self, what: int, t: float, data: bytes) -> bool:
        """One frame and its bytes; False when the tape writer is gone (it said why): relaying goes on."""
        return self._frame(_FRAME.pack(what, t, len(data)), data)

    def relay(self, src: int, dst: int, what: int, lock) -> bool:
        """Move src to dst by zero copy until src ends (True), each chunk framed for the tape (under `lock`) before
        it goes on; False at once when zero copy cannot serve, or after a chunk went on when it could not or was
        light traffic again: the caller reads and writes from there (nothing is pending)."""
        tee, side = _tee(), self._sides.get(what, [-1, -1])[1]
        if tee is None or side < 0 or what in self._refused:
            return False
        while True:
            try:
                size = tee(src, side, _SIZE)
            except OSError:  # not two pipes (EINVAL), or the tape writer is gone (EPIPE)
                self._refused.add(what)
                return False
            if not size:
                return True
            with lock:
                framed = self._frame(_FRAME.pack(what | _ASIDE, time.time(), size))
            moved = _forward(src, dst, size)
            if not (framed and moved):  # the tape writer is gone, or dst is a terminal, a file opened to append…
                self._refused.add(what)
                return False
            if size < _LIGHT:
                return False

    def _frame(self, *data: bytes) -> bool:
        control = self._control[1]
        if control < 0 or write_all(control, *data):
            return control >= 0
        self.close()
        return False

    def close(self) -> None:
        """The relay's end (under the relay's lock): the tape writer reads to the end of what was sent, then stops.
        The side pipes stay open, as a pump may still tee into one (the tape writer only reads them as frames say;
        once it is gone, a tee fails and that pump reads and writes)."""
        if self._control[1] >= 0:
            os.close(self._control[1])
            self._control[1] = -1

    # -- the tape writer's end -------------------------------------------------------------------------------------

    def read_ahead(self, batches: queue.Queue) -> None:
        """Put what comes on `batches`, as lists of (what, time, bytes) of about a read's worth each, then an empty
        list at the end. Run on a thread of its own, with a bounded queue: it reads ahead while the writer hashes a
        long line or waits on a slow disk, and stops where the queue is full (the relay then waits)."""
        control, pending = self._control[0], bytearray()
        while data := _read(control, _SIZE):
            pending += data
            batch: list[tuple[int, float, bytes]] = []
            at = size = brought = 0
            with memoryview(pending) as view:
                while len(view) - at >= _FRAME.size:
                    what, t, length = _FRAME.unpack_from(view, at)
                    start = at + _FRAME.size
                    if what & _ASIDE:
                        what &= ~_ASIDE
                        item, at = _read_exactly(self._sides[what][0], length), start
                    elif start + length <= len(view):
                        item, at = view[start:start + length].tobytes(), start + length
                    else:
                        break
                    batch.append((what, t, item))
                    size, brought = size + len(item), brought + len(item)
                    if size >= _SIZE:  # batches of about a read each: the queue's bound is one of bytes
                        batches.put(batch)
                        batch, size = [], 0
            del pending[:at]
            if batch:
                batches.put(batch)
            if brought < _LIGHT:
                time.sleep(_GATHER)  # light traffic: let frames gather, a wake-up per message would cost the relay
        batches.put([])


def widen(fd: int) -> None:
    """Let a pipe hold what one read or tee takes (1 MB; 64 KB by default): fewer, larger moves of bulk data."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _SIZE)
    except (AttributeError, OSError):  # not Linux, not a pipe, or past /proc/sys/fs/pipe-max-size: as it is
        pass


def _pipe() -> list[int]:
    pipe = list(os.pipe())
    widen(pipe[1])
    return pipe


@functools.cache
def _tee() -> Callable[[int, int, int], int] | None:
    """tee(2) (Python has no os.tee), or None where there is none; loaded on first use (ctypes: ~1 ms)."""
    if not hasattr(os, "splice"):
        return None
    try:
        import ctypes

        call = ctypes.CDLL(None, use_errno=True).tee
    except (ImportError, OSError, AttributeError):
        return None
    call.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint)
    call.restype = ctypes.c_ssize_t

    def tee(src: int, dst: int, size: int) -> int:
        while (done := call(src, dst, size, 0)) < 0:
            if (code := ctypes.get_errno()) != errno.EINTR:
                raise OSError(code, os.strerror(code))
        return done

    return tee


def _forward(src: int, dst: int, size: int) -> bool:
    """Move `size` bytes that src holds on to dst, by splice where dst takes it; False when it did not (the
    rest was read and written; a dead reader's share dropped)."""
    try:
        while size and (moved := os.splice(src, dst, size)):
            size -= moved
        if size:  # it stopped part-way: the tape writer was told of all of it, so the rest goes on read and written
            write_all(dst, _read_exactly(src, size))
            return False
        return True
    except OSError:  # dst is not a pipe nor a file splice writes (a terminal, O_APPEND), or its reader is gone
        write_all(dst, _read_exactly(src, size))
        return False


def _read(fd: int, size: int) -> bytes:
    try:
        return os.read(fd, size)
    except OSError:
        return b""


def _read_exactly(fd: int, size: int) -> bytes:
    parts = []
    while size and (part := _read(fd, size)):
        parts.append(part)
        size -= len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def write_all(fd: int, data: bytes, more: bytes = b"") -> bool:
    """Write all of data (and then more, in the same system call while it fits); False when the reader is gone."""
    try:
        done = os.writev(fd, (data, more)) if more else os.write(fd, data)
        if done < len(data) + len(more):  # a full pipe taking part, or a signal: the rest as it goes
            view = memoryview(data + more)[done:]
            while view:
                view = view[os.write(fd, view):]
    except OSError as e:
        if e.errno in (errno.EPIPE, errno.EBADF, errno.EINVAL):
            return False
        raise
    return True
