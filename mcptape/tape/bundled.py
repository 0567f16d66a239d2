"""Tapes inside a bundle (`mcptape bundle -o bug.zip`), read where they lie: a bundle is a zip file whose tapes are
under `tapes/`. `bug.zip` names its one tape (or, for commands that read several, all of them, in order);
`bug.zip/tapes/NAME.mcptape` names one, the way Python's zipimport names a file inside an archive.

A bundle comes from a stranger: it is read, never extracted. A member is streamed out of the archive as the tape
reader asks for bytes, only members under `tapes/` with plain names are looked at (no absolute path, no `..`),
and the sizes the archive declares are bounded before anything is decompressed (zipfile never inflates a member
past its declared size, so a bomb that lies about its size stops there)."""

from __future__ import annotations

import functools
import os
import posixpath
import zipfile
import zlib
from typing import BinaryIO

from .codec import ZIP_MAGIC, TapeError, number

TAPES = "tapes/"
MAX_MEMBERS = 10_000  # entries in the archive's directory
MAX_TAPE = 4 << 30  # the largest tape a bundle may declare, uncompressed
MAX_RATIO = 1000  # declared size / compressed size: more than this is a bomb, not a tape
# A large tape that compresses past this was made to: recorded traffic compresses 2-20:1, while a record of a
# million empty arrays compresses 200:1 and costs seconds per megabyte to read. MCPTAPE_MAX_RATIO raises it.
LARGE = 16 << 20
MAX_LARGE_RATIO_ENV = "MCPTAPE_MAX_RATIO"
DEFAULT_MAX_LARGE_RATIO = 100
# All its tapes together, as declared: a command that reads a whole bundle reads them one at a time, so this bounds
# its time, not its memory. MCPTAPE_MAX_BUNDLE_MB raises it.
MAX_BUNDLE_ENV = "MCPTAPE_MAX_BUNDLE_MB"
DEFAULT_MAX_BUNDLE_MB = 4096
DAMAGE = (zipfile.BadZipFile, EOFError, zlib.error)  # what reading a damaged member raises


class BundleError(ValueError):
    """A bundle that cannot be read; the message is one line for a person."""


def is_bundle(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == ZIP_MAGIC
    except OSError:
        return False


def split(path: str) -> tuple[str, str | None] | None:
    """(the archive, the member named or None) when `path` is a bundle or a tape inside one; None otherwise."""
    if os.path.isfile(path):
        return (path, None) if is_bundle(path) else None
    head, tail = path, ""
    while head and not os.path.exists(head):
        head, name = os.path.split(head)
        if not name:
            return None
        tail = posixpath.join(name, tail) if tail else name
    if head and os.path.isfile(head) and is_bundle(head):
        return head, tail
    return None


def _plain(name: str) -> bool:
    parts = name.split("/")
    return not name.startswith("/") and ".." not in parts and "\\" not in name and ":" not in parts[0]


def _archive(path: str) -> zipfile.ZipFile:
    """The bundle's archive, its directory read once: a command reading a bundle of 10,000 tapes opens each tape in
    turn, and reading the directory again for each would take time squared. It stays open for the members."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise BundleError(f"{path}: not a readable bundle ({e.strerror})") from None
    return _opened(os.path.realpath(path), (st.st_ino, st.st_size, st.st_mtime_ns))


@functools.lru_cache(maxsize=4)
def _opened(path: str, _stamp: tuple) -> zipfile.ZipFile:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise BundleError(f"{path}: not a readable bundle ({e})") from None
    if len(archive.infolist()) > MAX_MEMBERS:
        archive.close()
        raise BundleError(f"{path}: more than {MAX_MEMBERS} files in the archive; not a bundle mcptape reads")
    return archive


def tape_names(path: str) -> list[str]:
    """The tapes a bundle holds, in the order they were bundled."""
    return [i.filename for i in _archive(path).infolist()
            if i.filename.startswith(TAPES) and i.filename.endswith(".mcptape") and _plain(i.filename)]


def _max_bundle() -> int:
    return int(_number(MAX_BUNDLE_ENV, DEFAULT_MAX_BUNDLE_MB, "a number of megabytes") * (1 << 20))


def _max_large_ratio() -> float:
    return _number(MAX_LARGE_RATIO_ENV, DEFAULT_MAX_LARGE_RATIO, "a ratio")


def _number(env: str, default: float, what: str) -> float:
    try:
        return number(env, default, what)
    except TapeError as e:
        raise BundleError(str(e)) from None


def expand(paths: list[str]) -> list[str]:
    """Each bundle among `paths` replaced by the tapes it holds (as `bug.zip/tapes/NAME.mcptape`)."""
    out: list[str] = []
    for path in paths:
        found = split(path)
        if found is None or found[1] is not None:
            out.append(path)
            continue
        names = tape_names(path)
        if not names:
            raise BundleError(f"{path}: a zip file with no tapes under {TAPES}")
        total, limit = sum(_archive(path).getinfo(n).file_size for n in names), _max_bundle()
        if total > limit:
            raise BundleError(f"{path}: its {len(names)} tapes declare {total / (1 << 20):.1f} MB in all, over the "
                              f"{limit / (1 << 20):.1f} MB limit (set {MAX_BUNDLE_ENV} to read it if it is real)")
        out += [posixpath.join(path, name) for name in names]
    return out


def open_tape(path: str) -> BinaryIO | None:
    """A tape inside a bundle, opened for reading; None when `path` is not one (an ordinary file)."""
    found = split(path)
    if found is None:
        return None
    bundle, member = found
    if member is None:
        names = tape_names(bundle)
        if len(names) != 1:
            listed = ", ".join(posixpath.join(bundle, n) for n in names[:5]) + (", …" if len(names) > 5 else "")
            raise BundleError(f"{bundle} holds {len(names)} tapes; name one: {listed}" if names else
                              f"{bundle}: a zip file with no tapes under {TAPES}")
        member = names[0]
    if not (member.startswith(TAPES) and _plain(member)):
        raise BundleError(f"{bundle}: {member!r} is not a tape of the bundle (tapes are under {TAPES})")
    archive = _archive(bundle)
    try:
        info = archive.getinfo(member)
    except KeyError:
        raise BundleError(f"{bundle} holds no {member}; it holds: {', '.join(tape_names(bundle)) or 'no tapes'}")\
            from None
    problem = None
    if info.flag_bits & 0x1:
        problem = "is encrypted"
    elif info.file_size > MAX_TAPE:
        problem = f"declares {info.file_size} bytes (more than {MAX_TAPE})"
    elif info.file_size > MAX_RATIO * max(info.compress_size, 1) and info.file_size > 1 << 20:
        problem = f"declares {info.file_size} bytes from {info.compress_size} compressed: a zip bomb, not a tape"
    elif info.file_size > LARGE and info.file_size > (limit := _max_large_ratio()) * max(info.compress_size, 1):
        problem = (f"declares {info.file_size / (1 << 20):.1f} MB from {info.compress_size / (1 << 20):.2f} MB "
                   f"compressed, more than {limit:g}:1 for a tape over {LARGE >> 20} MB (set {MAX_LARGE_RATIO_ENV} "
                   f"to read it if it is real)")
    if problem:
        raise BundleError(f"{bundle}: {member} {problem}")
    try:
        return archive.open(info)  # type: ignore[return-value]
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError) as e:
        raise BundleError(f"{bundle}: cannot read {member} ({e})") from None
