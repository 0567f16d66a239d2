"""Coverage-guided fuzzing (atheris, libFuzzer) of the readers that take a stranger's bytes: the tape reader and
the SSE parser. Run by hand for minutes, not in CI:

    .venv/bin/pip install atheris
    .venv/bin/python scripts/fuzz.py tape -max_total_time=300    # or: sse, jsonrpc
    .venv/bin/python scripts/fuzz.py sse -max_total_time=300 -print_final_stats=1

Any exception other than the reader's own clean error (TapeError) is a crash and stops the run with its input
saved as crash-*; a corpus folder can follow the target name as libFuzzer's usual positional argument.
"""

from __future__ import annotations

import os
import struct
import sys
import tempfile
import zlib

import atheris

with atheris.instrument_imports():
    from mcptape.tape import records
    from mcptape.tape.file import MAGIC, Reader, TapeError, encode
    from mcptape.wire import jsonrpc, sse

_HEADER = MAGIC + encode(records.header(0.0, "fuzz"))
_PATH = os.path.join(tempfile.mkdtemp(), "fuzz.mcptape")


def tape(data: bytes) -> None:
    # The first byte picks the shape: a well-framed payload (so msgpack decoding itself is fuzzed past the CRC),
    # raw bytes after a valid header (frame damage), or a whole file (the signature).
    mode, rest = (data[0] % 3, data[1:]) if data else (0, b"")
    framed = struct.pack(">III", len(rest), len(rest) ^ 0xFFFFFFFF, zlib.crc32(rest)) + rest
    with open(_PATH, "wb") as f:
        f.write((_HEADER + framed, _HEADER + rest, rest)[mode])
    try:
        for record in Reader(_PATH):
            assert type(record) is dict
    except TapeError:
        pass


def sse_target(data: bytes) -> None:
    cut, stream = (data[0], data[1:]) if data else (0, b"")  # the first byte says where to split the rest
    parser = sse.Parser()
    events = parser.feed(stream[:cut]) + parser.feed(stream[cut:]) + parser.close()
    whole = sse.Parser()
    assert events == whole.feed(stream) + whole.close(), "chunking changed the events"
    for event in events:
        if event.data is not None:
            jsonrpc.parse(event.data)


def jsonrpc_target(data: bytes) -> None:
    body = jsonrpc.parse(data)
    if body.is_json:
        for message in body.msg if isinstance(body.msg, list) else [body.msg]:
            jsonrpc.kind(message)
            jsonrpc.describe(message)


TARGETS = {"tape": tape, "sse": sse_target, "jsonrpc": jsonrpc_target}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        raise SystemExit(f"usage: fuzz.py {{{','.join(TARGETS)}}} [libFuzzer options]")
    target = TARGETS[sys.argv.pop(1)]
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()
