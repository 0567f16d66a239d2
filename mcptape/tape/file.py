"""The .mcptape file: framed msgpack records (codec.py), appended and flushed one at a time; read as they are
written (follow), locked while a recorder writes.

A bundle (`mcptape bundle`, a zip) is read where it lies: the Reader opens `bug.zip` or `bug.zip/tapes/NAME.mcptape`
through tape/bundled.py, and a Writer refuses to append to one.
"""

from __future__ import annotations

import errno
import fcntl
import os
import string
import time
from collections.abc import Iterator
from typing import BinaryIO

import msgpack
import msgspec

from .codec import (FAST_MAX, FORMAT, crc32, FRAME, MAGIC, MAX_ITEMS_ENV, MAX_RECORD_ENV, ZIP_MAGIC, Record, TapeError,
                    TooMany, decode_counted, encode, ext_hook, fast_decode, max_items, max_record)


class Tape(msgspec.Struct):
    path: str
    header: Record
    records: list[Record] = []
    truncated: str | None = None  # why the tape ends early, when it does
    end_offset: int = 0  # byte offset after the last complete record


# The tapes this process has opened, in order: when a command fails on a record of the wrong shape, the tapes it
# read are looked through for the record to name (records.first_problem).
OPENED: dict[str, None] = {}


class Reader:
    """Iterate a tape's records without holding them all; `header`, `truncated` and `end_offset` are set as read."""

    def __init__(self, path: str | os.PathLike[str], follow: bool = False, poll: float = 0.1) -> None:
        """follow: read a tape while another process writes it. Where the tape ends, wait for more as long as a
        writer holds it (Writer's lock); end once none does and what it wrote last has been read."""
        self.path = os.fspath(path)
        OPENED[self.path] = None
        self._damage: tuple[type[Exception], ...] = ()  # what reading a tape inside a bundle raises on damage
        self._follow, self._poll, self._last_look = follow, poll, False
        while follow and not os.path.exists(self.path) and not _inside_a_file(self.path):
            time.sleep(poll)  # not created yet: its recorder is starting
        try:
            self._file: BinaryIO = open(self.path, "rb", buffering=1 << 20)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as e:
            self._file = self._in_bundle(e)
        except OSError as e:
            raise TapeError(f"cannot open {self.path}: {e.strerror}") from None
        if self._file.peek(4)[:4] == ZIP_MAGIC:  # a bundle (zip): its one tape
            self._file.close()
            self._file = self._in_bundle(None)
        magic = self._file.read(len(MAGIC))
        while not magic and self._more():  # created, its header not written yet
            self._file.seek(0)
            magic = self._file.read(len(MAGIC))
        if magic[:7] != MAGIC[:7] or len(magic) < len(MAGIC):
            self._file.close()
            if len(magic) < len(MAGIC) and MAGIC.startswith(magic) and magic:
                raise TapeError(f"{self.path}: tape is truncated inside its first bytes; nothing was recorded")
            if not magic:  # said as every command that reads files says it (import too)
                raise TapeError(f"{self.path}: the file is empty: not an mcptape tape (record one, or import a "
                                "capture)")
            raise TapeError(f"{self.path}: not an mcptape tape (no MCPTAPE signature at byte 0)")
        if magic[7] != FORMAT:
            self._file.close()
            raise TapeError(f"{self.path}: tape format {magic[7]} is not supported (this mcptape reads {FORMAT})")
        self.truncated: str | None = None
        self.max_record = max_record()
        self.max_items = max_items()
        self.end_offset = len(MAGIC)
        self.count = 0
        self._frames = self._read_frames()
        first = next(self._frames, None)
        if first is None:
            raise TapeError(f"{self.path}: tape has no header record{' (' + self.truncated + ')' if self.truncated else ''}")
        self.header: Record = first
        self.count = 0  # records after the header

    def _in_bundle(self, error: OSError | None) -> BinaryIO:
        """A tape inside a bundle (tape/bundled.py): `bug.zip`, or `bug.zip/tapes/NAME.mcptape`."""
        from . import bundled

        try:
            found = bundled.open_tape(self.path)
        except bundled.BundleError as e:
            raise TapeError(str(e)) from None
        if found is None:
            raise TapeError(f"cannot open {self.path}: {error.strerror if error else 'not a tape'}") from None
        self._damage = bundled.DAMAGE
        return found

    def _read_frames(self) -> Iterator[Record]:
        # The hot loop of every command that reads a tape: locals only, one branch per kind of damage. The header
        # is its first record (taken by __init__); iterating the reader goes on from there.
        read, unpack, size = self._file.read, FRAME.unpack, FRAME.size
        unpackb, hook, fast = msgpack.unpackb, ext_hook, fast_decode
        offset, limit, items = self.end_offset, self.max_record, self.max_items
        small = min(FAST_MAX, items)  # (a record past the item limit is counted, however short)
        try:
            while True:
                head = read(size)
                if len(head) < size:
                    if self._more():
                        self._file.seek(offset)  # a writer is still at it: read from here again once more came
                        continue
                    if head:
                        self.truncated = f"torn frame header at byte {offset}"
                    return
                length, check, crc = unpack(head)
                if length ^ 0xFFFFFFFF != check:
                    raise TapeError(f"{self.path}: corrupt record frame at byte {offset} (length field damaged); "
                                    f"{self.count} records before it are intact")
                if length > limit:
                    raise TapeError(f"{self.path}: record at byte {offset} is {_megabytes(length)}, over the "
                                    f"{_megabytes(limit)} limit (set {MAX_RECORD_ENV} to read it if it is real)")
                payload = read(length)
                if len(payload) < length:
                    if self._more():
                        self._file.seek(offset)
                        continue
                    self.truncated = f"torn record at byte {offset} ({len(payload)} of {length} bytes)"
                    return
                if crc32(payload) != crc:
                    raise TapeError(f"{self.path}: corrupt record at byte {offset} (checksum mismatch); "
                                    f"{self.count} records before it are intact")
                try:
                    if length <= small and 255 not in payload:  # codec.decode_payload, spelled out
                        try:
                            record = fast(payload)
                        except Exception:  # msgpack-python says what is wrong, as a reader always has
                            record = unpackb(payload, ext_hook=hook, raw=False, strict_map_key=False)
                    elif length <= items:  # it cannot hold more items than bytes
                        record = unpackb(payload, ext_hook=hook, raw=False, strict_map_key=False)
                    else:
                        record = decode_counted(payload, items)
                except TooMany as e:
                    raise TapeError(f"{self.path}: record {self.count} at byte {offset} holds {e}, over the "
                                    f"limit (set {MAX_ITEMS_ENV} to read it if it is real)") from None
                except Exception as e:  # a valid CRC over undecodable bytes: written by something else
                    why = str(e) or ("nested too deeply" if isinstance(e, msgpack.StackError) else type(e).__name__)
                    raise TapeError(f"{self.path}: record at byte {offset} is not valid msgpack ({why})") from None
                if type(record) is not dict:
                    raise TapeError(f"{self.path}: record at byte {offset} is not a map")
                offset += size + length
                self.end_offset = offset
                self.count += 1
                yield record
        except self._damage as e:
            raise TapeError(f"{self.path}: the bundle is damaged at byte {offset} of the tape ({e}); "
                            f"{self.count} records before it are intact") from None
        finally:
            self._file.close()

    def __iter__(self) -> Iterator[Record]:
        return self._frames

    def close(self) -> None:
        """Let go of the file before the records are read (a reader opened only to see that a tape reads)."""
        self._frames.close()

    def _more(self) -> bool:
        """Following, at the end of what is written: wait while a writer holds the tape, then take one last look
        (it may have written more before it let go). False when there is nothing more to wait for."""
        if not self._follow or self._last_look:
            return False
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            time.sleep(self._poll)
            return True
        fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
        self._last_look = True
        return True


def _inside_a_file(path: str) -> bool:
    """`bug.zip/tapes/x.mcptape`: a name inside a bundle never appears on disk, so following it must not wait."""
    from . import bundled

    return bundled.split(path) is not None


def _megabytes(size: int) -> str:
    return f"{size / (1 << 20):.1f} MB"


def read(path: str | os.PathLike[str]) -> Tape:
    reader = Reader(path)
    records = list(reader)
    return Tape(reader.path, reader.header, records, reader.truncated, reader.end_offset)


class Writer:
    """Appends records to a tape, one unbuffered write each, so every record is on disk as soon as it is written.

    mode: "new" refuses an existing file, "force" replaces it, "append" continues it (a torn tail is cut off first).
    The file is locked while it is written: two recorders never write one tape. `whole`: the tape appears at its
    path only once closed, complete (import, redact); a failure leaves nothing behind. Where it goes (a symlink's
    target, a device or FIFO written in place) is output.Output's to say, as for every file mcptape writes.
    """

    def __init__(self, path: str | os.PathLike[str], header: Record, mode: str = "new", whole: bool = False) -> None:
        from ..output import Output, OutputError

        self.path = os.fspath(path)
        self.existing: Tape | None = None
        self.repaired: str | None = None
        self._out: Output | None = None
        try:
            out = Output(self.path, force=mode != "new")
        except OutputError as e:
            if "already exists" in str(e):
                e = f"{self.path} already exists (use --append to add to it or --force to replace it)"
            raise TapeError(str(e)) from None
        if whole or out.in_place:  # (a device or FIFO cannot be locked, read back or cut)
            try:
                fd = out.open()
            except OutputError as e:
                raise TapeError(str(e)) from None
            self._out = out
            self._file: BinaryIO = open(fd, "wb", buffering=0)
            self._start(header)
            return
        flags = {"new": os.O_CREAT | os.O_EXCL, "force": os.O_CREAT, "append": os.O_CREAT}[mode]
        try:
            fd = os.open(out.real, os.O_RDWR | flags, 0o644)
        except FileExistsError:
            raise TapeError(f"{self.path} already exists (use --append to add to it or --force to replace it)") from None
        except OSError as e:
            raise TapeError(f"cannot write {self.path}: {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise TapeError(f"{self.path} is being written by another mcptape right now") from None
        self._file = open(fd, "r+b", buffering=0)
        if mode == "append" and os.fstat(fd).st_size > 0:
            if os.pread(fd, 4, 0) == ZIP_MAGIC:  # a bundle is read where it lies, never written into
                self._file.close()
                raise TapeError(f"{self.path} is a bundle (a zip file): record into a tape of its own")
            try:
                self.existing = read(self.path)
            except TapeError:
                self._file.close()
                raise
            if self.existing.truncated:
                self.repaired = self.existing.truncated
                self._file.truncate(self.existing.end_offset)
            self._file.seek(0, os.SEEK_END)
            return
        self._file.truncate(0)
        self._start(header)

    def _start(self, header: Record) -> None:
        try:
            self._file.write(MAGIC + encode(header))
        except OSError as e:
            self.close(failed=True)
            raise TapeError(f"cannot write {self.path}: {e.strerror}") from None

    def write(self, record: Record) -> None:
        """One record, all of it or none: a write cut short (a full disk, a file size limit) is taken back, so the
        tape ends on a whole record and what was on disk before stays readable; then it raises OSError."""
        frame = encode(record)
        written = self._file.write(frame)
        if written != len(frame):
            self._short(frame, written or 0)

    def write_many(self, records: list[Record]) -> None:
        """Records in one write (one system call, not many), all of them or none, as `write`."""
        frames = b"".join(map(encode, records))
        written = self._file.write(frames)
        if written != len(frames):
            self._short(frames, written or 0)

    def _short(self, frame: bytes, written: int) -> None:
        try:
            while written < len(frame):
                n = self._file.write(frame[written:])
                if not n:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                written += n
        except OSError:
            if self._file.seekable():
                end = self._file.seek(0, os.SEEK_CUR) - written
                self._file.truncate(end)
                self._file.seek(end)
            raise

    def close(self, failed: bool = False) -> None:
        """`failed`: a whole tape is thrown away (nothing appears at its path)."""
        from ..output import OutputError

        try:
            self._file.close()
        except OSError as e:
            if self._out is not None:
                self._out.discard()
            raise TapeError(f"cannot write {self.path}: {e.strerror}") from None
        if self._out is not None:
            if failed:
                self._out.discard()
                return
            try:
                self._out.commit()
            except OutputError as e:
                raise TapeError(str(e)) from None

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, kind: type | None, *exc: object) -> None:
        self.close(failed=kind is not None)


def create_from_template(
    template: str, header: Record, directory: str | None = None, mode: str = "new", when: float | None = None
) -> Writer:
    """Open a new tape named by a template: {date} {time} {pid} {n}. With {n}, the first free number is taken,
    so clients that relaunch their servers (or run two at once) never share a file. A relative name goes into
    `directory` when one is given."""
    import time as _time

    stamp = _time.localtime(when)
    fields = {"date": _time.strftime("%Y%m%d", stamp), "time": _time.strftime("%H%M%S", stamp), "pid": os.getpid()}
    parts = _template_parts(template)

    def name(n: int) -> str:
        values = {**fields, "n": n}
        path = "".join(text + (str(values[field]) if field else "") for text, field in parts)
        return os.path.join(directory, path) if directory and not os.path.isabs(path) else path

    first = name(1)
    if directory and not _inside(first, directory):
        # $MCPTAPE_DIR is where a client's config says every tape goes: a name (or a field) must not lead out
        raise TapeError(f"-o {template!r} leads out of MCPTAPE_DIR={directory}: name a file inside it")
    if "n" not in (field for _, field in parts):
        return Writer(first, header, mode)
    for n in range(1, 100_000):
        try:
            return Writer(name(n), header, "new")
        except TapeError as e:
            if "already exists" not in str(e) and "being written" not in str(e):
                raise
    raise TapeError(f"-o {template!r}: no free file name left")


def _template_parts(template: str) -> list[tuple[str, str | None]]:
    """A name template as literal texts, each followed by a field or None. A field is a bare name and nothing more:
    a template is often copied from someone else's config, and str.format would run {date.__class__} (attributes,
    indexes, !r) or build {n:>100000000} (a width) before the name was ever looked at."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as e:
        raise TapeError(f"-o {template!r}: {e} (a brace in a name is written {{{{ or }}}})") from None
    for _, field, spec, conversion in parsed:
        if field is not None and (field not in ("date", "time", "pid", "n") or spec or conversion):
            written = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise TapeError(f"-o {template!r}: unknown field {written} (use {{date}}, {{time}}, {{pid}}, {{n}})")
    return [(text, field) for text, field, _, _ in parsed]


def _inside(path: str, directory: str) -> bool:
    folder = os.path.realpath(directory)
    return os.path.commonpath([os.path.realpath(path), folder]) == folder
