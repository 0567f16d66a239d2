"""The bytes of a tape: a magic string, then framed msgpack records.

    file   := MAGIC frame*            MAGIC = b"MCPTAPE" + bytes([FORMAT])
    frame  := length:u32be  ~length:u32be  crc32(payload):u32be  payload
    payload:= msgpack map (the first one is the header record)

Why this framing: a recorder can be killed at any byte, so a reader must tell a torn tail (the last frame is
short: load everything before it, say "truncated") from damage (a length that disagrees with its complement, or a
payload whose CRC is wrong: stop and name the byte offset) instead of decoding garbage. Each frame goes out in one
unbuffered write, so the only tear a crash can leave is at the end.

Numbers: msgpack has no integers beyond 64 bits and no exact decimals, JSON has both; they travel as extension
types 1 (integer, decimal text) and 2 (number literal, text) so every JSON value comes back as it went in.

The limits a reader keeps (a frame claims its own length) are read from the environment here, for the tape reader
(file.py) and the bundle reader (bundled.py) alike.

Decoding: msgspec reads a record in half msgpack-python's time (it caches map keys where msgpack interns them), so
the reader takes it wherever the two are sure to agree, and msgpack-python everywhere else (`decode_payload`).
msgpack-python writes.
"""

from __future__ import annotations

import os
import struct
from decimal import Decimal
from typing import Any

import msgpack
import msgspec

# The same CRC-32 as zlib's, about four times faster on a record's few hundred bytes (ISA-L): zlib's took a tenth of
# the reader's time on a large tape.
from isal.isal_zlib import crc32

FORMAT = 1
MAGIC = b"MCPTAPE" + bytes([FORMAT])
ZIP_MAGIC = b"PK\x03\x04"  # a bundle (tape/bundled.py)
FRAME = struct.Struct(">III")
# A frame claims its own length, so a damaged or hostile tape could make a reader allocate gigabytes. Real records
# stay far below this (a 10 MB tool result is a 10 MB record); MCPTAPE_MAX_RECORD_MB raises it for a tape that needs it.
MAX_RECORD_ENV = "MCPTAPE_MAX_RECORD_MB"
DEFAULT_MAX_RECORD_MB = 64
# Bytes do not bound memory: an empty array is one byte on disk and 64 in memory, so a 50 MB record of 48 million of
# them took 3.5 GB to decode. Containers and their elements are counted too (a string or a number is one element).
# A record can hold no more items than it has bytes, so only a record longer than the limit is counted: the
# common path costs nothing. 1 million items decode to at most ~100 MB; real messages hold far fewer.
MAX_ITEMS_ENV = "MCPTAPE_MAX_ITEMS"
DEFAULT_MAX_ITEMS = 1_000_000
_EXT_BIGINT = 1
_EXT_NUMBER = 2

Record = dict[str, Any]  # a record as a tape holds it (tape/records.py says which kinds and fields)


class TapeError(Exception):
    """A tape that cannot be read or written; the message is one line meant for a person."""


def _default(obj: Any) -> msgpack.ExtType:
    if isinstance(obj, int):  # msgpack calls us for ints that overflow 64 bits
        return msgpack.ExtType(_EXT_BIGINT, str(obj).encode())
    if isinstance(obj, Decimal):
        return msgpack.ExtType(_EXT_NUMBER, str(obj).encode())
    raise TypeError(f"cannot store {type(obj).__name__} in a tape")


def ext_hook(code: int, data: bytes | memoryview) -> Any:
    """An extension's value (msgspec hands its bytes over as a memoryview, msgpack as bytes)."""
    if code == _EXT_BIGINT:
        return int(data)
    if code == _EXT_NUMBER:
        return Decimal(str(data, "utf-8"))
    raise ValueError(f"unknown extension type {code}")


# Where msgspec and msgpack-python may read the same bytes differently, msgpack-python decides (every tape reads as
# it always has, and a bad record gets the words it always got):
# - nesting: msgpack-python refuses past 1,024 levels, msgspec only at the C stack's limit (~10,000). A record of at
#   most FAST_MAX bytes cannot nest deeper than msgpack-python takes (a level is at least a byte), and real messages
#   are small: longer records go to msgpack-python.
# - an extension -1 (msgpack's timestamp) is a Timestamp to msgpack-python, a datetime to msgspec (the hook never
#   sees it): its type byte is 0xff, so a record holding that byte anywhere goes to msgpack-python (~1 in 70).
# - anything msgspec refuses is decoded again by msgpack-python, which says what is wrong in the words a reader has
#   always used (or reads it: then that is the record).
# One difference remains, in bytes no mcptape writes: an array used as a map key, which msgpack-python refuses
# (unhashable) and msgspec reads as a tuple (records.first_problem names such a record when a command trips on it).
FAST_MAX = 1024
fast_decode = msgspec.msgpack.Decoder(ext_hook=ext_hook).decode


def max_record() -> int:
    """The largest record a reader accepts, in bytes."""
    return int(number(MAX_RECORD_ENV, DEFAULT_MAX_RECORD_MB, "a number of megabytes") * (1 << 20))


def max_items() -> int:
    """The most containers and elements a reader decodes in one record."""
    return int(number(MAX_ITEMS_ENV, DEFAULT_MAX_ITEMS, "a count of items"))


def number(env: str, default: float, what: str) -> float:
    """A limit from the environment (a non-negative number), or its default; TapeError naming it otherwise."""
    value = os.environ.get(env, "")
    try:
        number = float(value) if value else default
    except ValueError:
        number = -1.0
    if not number >= 0 or number == float("inf"):
        raise TapeError(f"{env}={value!r} is not {what}")
    return number


class TooMany(ValueError):
    """A record holds more items than the limit."""


def decode_counted(payload: bytes, limit: int) -> Any:
    """A record longer than `limit` bytes decoded with its items counted; raises TooMany past `limit`. msgpack
    allocates an array's slots from its header, so one length is refused before anything is allocated. (By
    msgpack-python: msgspec has no hook to count with, and a record this long is past FAST_MAX anyway.)"""
    count = 0

    def counted(container):
        nonlocal count
        count += len(container) + 1
        if count > limit:
            raise TooMany(f"more than {limit:,} items")
        return container

    try:
        return msgpack.unpackb(payload, ext_hook=ext_hook, raw=False, strict_map_key=False, list_hook=counted,
                               object_hook=counted, max_array_len=limit, max_map_len=limit)
    except ValueError as e:
        if isinstance(e, TooMany) or "exceeds max_" in str(e):  # msgpack's own words for a length over the limit
            raise TooMany(f"more than {limit:,} items") from None
        raise


def pack(value: Any) -> bytes:
    """A value as msgpack, exactly as a tape stores it (big integers and exact decimals included)."""
    return msgpack.packb(value, default=_default, use_bin_type=True)


def packer() -> msgpack.Packer:
    """A packer that packs as `pack` does, to reuse in a loop (msgpack.packb makes a new one per value)."""
    return msgpack.Packer(default=_default, use_bin_type=True)


def encode(record: Record) -> bytes:
    """One framed record. Raises ValueError/TypeError when the record holds something a tape cannot."""
    payload = pack(record)
    return FRAME.pack(len(payload), len(payload) ^ 0xFFFFFFFF, crc32(payload)) + payload


def decode_payload(payload: bytes) -> Any:
    """One record's msgpack back to a map, as the tape reader decodes it (it spells this out: it runs for every
    record). Raises what msgpack-python raises on bytes it cannot decode."""
    if len(payload) <= FAST_MAX and 255 not in payload:
        try:
            return fast_decode(payload)
        except Exception:
            pass  # msgpack-python says what is wrong (below)
    return msgpack.unpackb(payload, ext_hook=ext_hook, raw=False, strict_map_key=False)
