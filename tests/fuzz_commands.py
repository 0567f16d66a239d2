"""Every command against tapes a stranger could send (issue 54): each run must end in a result or one clear line
with exit 2, never `internal error`, a traceback or another exit code. Mutations start from real conversations (the
builder's, over every transport, and the cassettes) and are of two kinds: a record's field set to a hostile value
(NaN, huge and odd numbers, bytes, a map where a string belongs, a control character…), or the record's msgpack
bytes mutated (the frame written right, so the bytes reach the decoder). Commands run in this process through
click (milliseconds each), on whichever core is installed (pure, or compiled with MCPTAPE_COMPILED=1).

    python -m tests.fuzz_commands --seconds 600      # by hand; CI runs it for a minute (.ci/run)

It stops at the first failure, saves the tape beside the working directory as fuzz-failure-N.mcptape, and prints
the command and what it printed. A tape it found belongs in tests/core/test_hostile_records.py.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import msgpack
from click.testing import CliRunner

from mcptape.cli import main
from mcptape.model import LEGACY_SSE, STATELESS, STDIO, STREAMABLE
from mcptape.tape import codec, records
from mcptape.tape.file import MAGIC, Reader, encode
from mcptape.testing.builder import Conversation, Event

from .hostile_inputs import frame

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = [math.nan, math.inf, -0.0, Decimal("NaN"), Decimal("1e999999999"), 2**62, -2**63, 10**4000, 0, -1, True,
           None, b"\x00\xff", "", "\x1b[2J\x07\u202e\x9b", "x" * 5000, {}, {"a": [1, {"b": None}]}, [], [[[]]],
           "2025-11-25", "tools/call", "http.request", "stdio.line", "s2c", "/mcp?x=%ff", "\ud800"]
FIELDS = ["kind", "t", "exchange", "conn", "dir", "method", "path", "query", "headers", "session",
          "protocol_version", "mcp", "status", "reason", "msg", "raw", "problem", "id", "event", "retry", "comments",
          "data", "partial", "code", "signal", "error", "text", "edits", "detail", "injected", "request_id",
          "withheld", "source", "redaction", "tool", "format"]
COMMANDS = [["check"], ["check", "--requirements"], ["check", "--format", "json"], ["show"],
            ["show", "--format", "json"], ["show", "--format", "jsonl"], ["report", "--format", "md"],
            ["report", "--format", "html"], ["report", "--format", "json"], ["report", "--format", "mermaid"],
            ["export", "--format", "har"], ["diff", "{tape}"], ["edits", "--edit", "drop at=tools/call"],
            ["redact", "-o", "{out}.mcptape", "--force"], ["bundle", "-o", "{out}.zip", "--force", "--redact"],
            ["bundle", "-o", "{out}.zip", "--force", "--allow-secrets"]]


def seeds() -> list[list[dict]]:
    tapes = []
    for transport in (STREAMABLE, STDIO, LEGACY_SSE, STATELESS):
        c = Conversation(transport=transport)
        if transport != STATELESS:
            c.initialize()
        c.call("tools/list", result={"tools": [{"name": "add", "inputSchema": {"type": "object"}}]})
        c.call("tools/call", {"name": "add", "arguments": {"a": 1}},
               result={"content": [{"type": "text", "text": '{\n  "sum": 1.0\n}'}]})
        c.call("tools/call", {"name": "add"}, error=(-32602, "bad"))
        if transport == STREAMABLE:
            c.call("tools/call", {"name": "slow"}, stream=True, event_ids=True,
                   before=[{"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": 1, "progress": 1}}])
            c.exchange(method="GET", status=200, events=[Event(data="")], end=records.CLIENT_DISCONNECTED)
        tapes.append(c.records)
    for cassette in sorted((ROOT / "cassettes").glob("*.mcptape")):
        tapes.append(list(Reader(str(cassette))))
    return tapes


def mutate(rng: random.Random, tape: list[dict]) -> bytes:
    """A tape file's bytes: the records of `tape` with one to three mutations."""
    payloads = [encode(r)[12:] for r in tape]  # (a frame's 12 bytes of length, its complement and CRC dropped)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(payloads))
        if rng.random() < 0.7:  # a field set to a hostile value (or taken away)
            try:
                record = msgpack.unpackb(payloads[i], ext_hook=codec.ext_hook, raw=False, strict_map_key=False)
            except Exception:  # noqa: BLE001 - bytes an earlier mutation broke: mutated as bytes only
                continue
            if not isinstance(record, dict):
                continue
            field = rng.choice(FIELDS + list(record))
            where = record
            if field == "msg" and isinstance(record.get("msg"), dict) and rng.random() < 0.6:
                where = _deep_container(rng, record["msg"])
                field = rng.choice(list(where)) if isinstance(where, dict) and where else field
            if isinstance(where, list) and where:
                where[rng.randrange(len(where))] = rng.choice(HOSTILE)
            elif rng.random() < 0.15 and field in where:
                del where[field]
            else:
                where[field] = rng.choice(HOSTILE)
            payloads[i] = msgpack.packb(record, default=_pack_default, use_bin_type=True, unicode_errors="surrogatepass")
        else:  # the record's bytes: flipped, cut, or a byte inserted
            data = bytearray(payloads[i])
            at = rng.randrange(len(data)) if data else 0
            what = rng.random()
            if what < 0.5 and data:
                data[at] = rng.randrange(256)
            elif what < 0.75:
                del data[at:at + rng.randint(1, 4)]
            else:
                data[at:at] = bytes([rng.randrange(256)])
            payloads[i] = bytes(data)
    return MAGIC + encode(records.header(0.0, "fuzz")) + b"".join(frame(p) for p in payloads)


def _deep_container(rng: random.Random, value):
    while True:
        children = [v for v in (value.values() if isinstance(value, dict) else value) if isinstance(v, (dict, list))]
        if not children or rng.random() < 0.3:
            return value
        value = rng.choice(children)


def _pack_default(obj):
    if isinstance(obj, Decimal):
        return msgpack.ExtType(2, str(obj).encode())
    if isinstance(obj, int):
        return msgpack.ExtType(1, str(obj).encode())
    raise TypeError(type(obj).__name__)


def run(tape: Path, args: list[str]) -> tuple[int, str]:
    argv = [a.replace("{tape}", str(tape)).replace("{out}", str(tape.parent / "out")) for a in args]
    result = CliRunner().invoke(main, [argv[0], str(tape), *argv[1:]])
    return result.exit_code, result.output + (repr(result.exception) if result.exception is not None and not
                                              isinstance(result.exception, SystemExit) else "")


def bad(code: int, output: str) -> bool:
    return code not in (0, 1, 2) or "internal error" in output or "Traceback" in output or "Error(" in output[-300:]


def fuzz(seconds: float, seed: int | None = None) -> int:
    rng = random.Random(seed)
    corpus = seeds()
    runs, deadline = 0, time.monotonic() + seconds
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.mcptape"
        while time.monotonic() < deadline:
            path.write_bytes(mutate(rng, rng.choice(corpus)))
            for args in rng.sample(COMMANDS, 3):
                code, output = run(path, args)
                runs += 1
                if bad(code, output):
                    saved = Path(f"fuzz-failure-{runs}.mcptape")
                    saved.write_bytes(path.read_bytes())
                    print(f"fuzz: `mcptape {' '.join(args)}` on {saved} exited {code}:\n{output[-2000:]}",
                          file=sys.stderr)
                    return 1
    print(f"fuzz: {runs} command runs in {seconds:.0f} s, no internal error", file=sys.stderr)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int)
    a = parser.parse_args()
    sys.exit(fuzz(a.seconds, a.seed))
