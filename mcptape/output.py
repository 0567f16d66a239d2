"""Where a command's `-o FILE` goes: one way, for every command that writes a file.

- A regular file (or a name not there yet) is written whole or not at all: into a temporary file beside it, moved
  into place at the end, so a reader never sees half of it. One that exists is refused unless the command was
  given --force.
- Anything else that exists (a character device such as /dev/null or /dev/full, a FIFO, /dev/stdout) is opened and
  written where it is, never replaced: a rename would put a regular file in its place (run as root, `-o /dev/null`
  once replaced this project's own /dev/null).
- A symlink is followed: its target gets the content (and is what --force replaces); the link stays a link.

A tape being recorded is the one file written as it goes (it must be readable at any moment and after a crash):
tape.file.Writer asks `Output` where to write and does the rest itself.

Errors are OutputError, one line naming the path as given.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import IO


class WriteMode(StrEnum):
    """What to do with an output file that exists: refuse it (new), add to it (append; a tape), replace it
    (force)."""

    NEW = "new"
    APPEND = "append"
    FORCE = "force"


class OutputError(Exception):
    """The file cannot be written; the message is one line for a person."""


def failure(path: str, error: OSError) -> OutputError:
    return OutputError(f"cannot write {path}: {error.strerror or error}")


class Output:
    """Where `path` resolves to and how it is written. Raises OutputError for a directory, a missing folder, or a
    regular file that exists when `force` is not given."""

    def __init__(self, path: str | os.PathLike[str], force: bool = False) -> None:
        self.path = os.fspath(path)
        self.real = os.path.realpath(self.path)  # a symlink is written through
        self.force = force
        self.part: str | None = None
        try:
            st = os.stat(self.real)
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise failure(self.path, e) from None
        self.exists = st is not None
        self.in_place = st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)
        self.mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise OutputError(f"-o {self.path}: not a file in an existing directory (it is a directory)")
        if st is None and not os.path.isdir(os.path.dirname(self.real)):
            raise OutputError(f"-o {self.path}: not a file in an existing directory")
        if st is not None and not self.in_place and not force:
            raise OutputError(f"{self.path} already exists (add --force to replace it)")

    def open(self) -> int:
        """A file descriptor to write to: the device or FIFO itself, else a temporary file beside the target."""
        import tempfile  # here: every command imports this module's names (WriteMode) at start

        try:
            if self.in_place:
                return os.open(self.real, os.O_WRONLY)
            fd, self.part = tempfile.mkstemp(dir=os.path.dirname(self.real),
                                             prefix=f".{os.path.basename(self.real)}.", suffix=".part")
            os.fchmod(fd, self.mode)
            return fd
        except OSError as e:
            raise failure(self.path, e) from None

    def commit(self) -> None:
        """Move the finished temporary file into place (nothing to do for a device or FIFO)."""
        part, self.part = self.part, None
        if part is None:
            return
        try:
            if self.force:
                os.replace(part, self.real)
                return
            try:
                os.link(part, self.real)  # never over a file that appeared meanwhile
            except FileExistsError:
                raise OutputError(f"{self.path} already exists (add --force to replace it)") from None
            except OSError:  # a file system without hard links
                os.replace(part, self.real)
                return
            os.remove(part)
        except OSError as e:
            raise failure(self.path, e) from None
        finally:
            if os.path.exists(part):
                os.remove(part)

    def discard(self) -> None:
        part, self.part = self.part, None
        if part is not None and os.path.exists(part):
            os.remove(part)


@contextmanager
def opened(path: str | os.PathLike[str], force: bool = False, text: bool = False) -> Iterator[IO]:
    """Write a whole output file: `with opened(path, force) as f: f.write(...)`."""
    out = Output(path, force)
    fd = out.open()
    try:
        with open(fd, "w" if text else "wb", **({"encoding": "utf-8"} if text else {})) as f:
            yield f
    except OSError as e:
        out.discard()
        raise failure(out.path, e) from None
    except BaseException:
        out.discard()
        raise
    out.commit()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
