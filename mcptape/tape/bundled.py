"""Tapes inside a bundle (`mcptape bundle -o bug.zip`), read where they lie: a bundle is a zip file whose tapes are
under `tapes/`. `bug.zip` names its one tape (or, for commands that read several, all of them, in order);
`bug.zip/tapes/NAME.mcptape` names one, the way Python's zipimport names a file inside an archive.

A bundle comes from a stranger: it is read, never extracted. A member is streamed out of the archive as the tape
reader asks for bytes, only members under `tapes/` with plain names are looked at (no absolute path, no `..`),
and the sizes the archive declares are bounded before anything is decompressed (zipfile never inflates a member
past its declared size, so a bomb that lies about its size stops there)."""

from __future__ import annotations

import os
import posixpath
import zipfile
import zlib
from typing import BinaryIO

from .file import ZIP_MAGIC

TAPES = "tapes/"
MAX_MEMBERS = 10_000  # entries in the archive's directory
MAX_TAPE = 4 << 30  # the largest tape a bundle may declare, uncompressed
MAX_RATIO = 1000  # declared size / compressed size: more than this is a bomb, not a tape
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
    with _archive(path) as archive:
        return [i.filename for i in archive.infolist()
                if i.filename.startswith(TAPES) and i.filename.endswith(".mcptape") and _plain(i.filename)]


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
        archive.close()
        raise BundleError(f"{bundle} holds no {member}; it holds: {', '.join(tape_names(bundle)) or 'no tapes'}")\
            from None
    problem = None
    if info.flag_bits & 0x1:
        problem = "is encrypted"
    elif info.file_size > MAX_TAPE:
        problem = f"declares {info.file_size} bytes (more than {MAX_TAPE})"
    elif info.file_size > MAX_RATIO * max(info.compress_size, 1) and info.file_size > 1 << 20:
        problem = f"declares {info.file_size} bytes from {info.compress_size} compressed: a zip bomb, not a tape"
    if problem:
        archive.close()
        raise BundleError(f"{bundle}: {member} {problem}")
    try:
        member_file = archive.open(info)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError) as e:
        archive.close()
        raise BundleError(f"{bundle}: cannot read {member} ({e})") from None
    archive.close()  # the member keeps the archive's file open until it is closed itself
    return member_file  # type: ignore[return-value]
