"""Inputs an attacker would attach to a bug report, built small and fast, for tests/test_bounded.py and
bench/hostile.py; and a way to run a command while sampling its resident memory (/proc/PID/status), because an
address-space limit would kill mitmproxy at start and ru_maxrss counts only children that were waited for."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import threading
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import msgpack

from mcptape.tape import records
from mcptape.tape.file import MAGIC, encode

_FRAME = struct.Struct(">III")


def frame(payload: bytes) -> bytes:
    return _FRAME.pack(len(payload), len(payload) ^ 0xFFFFFFFF, zlib.crc32(payload)) + payload


def tape_bytes(*payloads: bytes) -> bytes:
    return MAGIC + encode(records.header(0.0, "test")) + b"".join(frame(p) for p in payloads)


def amplification_tape(path: Path, empties: int = 48_000_000) -> Path:
    """One record whose message is a single array of `empties` empty arrays: a byte each on disk, ~64 in memory."""
    head = msgpack.packb({"kind": "stdio.line", "t": 1.0, "dir": "s2c"})
    # the map grows a third key: msg -> array32 of empty arrays
    payload = bytes([head[0] + 1]) + head[1:] + msgpack.packb("msg") + b"\xdd" + struct.pack(">I", empties) + \
        b"\x90" * empties
    path.write_bytes(tape_bytes(payload))
    return path


def nested_arrays_tape(path: Path, outer: int = 5_000, inner: int = 5_000) -> Path:
    """Arrays each within any per-array limit, 25 million empty arrays in all."""
    head = msgpack.packb({"kind": "stdio.line", "t": 1.0, "dir": "s2c"})
    one = b"\xdc" + struct.pack(">H", inner) + b"\x90" * inner
    payload = bytes([head[0] + 1]) + head[1:] + msgpack.packb("msg") + b"\xdd" + struct.pack(">I", outer) + \
        one * outer
    path.write_bytes(tape_bytes(payload))
    return path


def _small_tape() -> bytes:
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}).encode()
    return tape_bytes(msgpack.packb(records.stdio_line(1.0, records.C2S, line)))


def many_tapes_bundle(path: Path, count: int = 9_999) -> Path:
    """A bundle of `count` small tapes, each with an unanswered request (a finding each)."""
    one = _small_tape()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n in range(count):
            z.writestr(f"tapes/{n:05}.mcptape", one)
    return path


def high_ratio_bundle(path: Path, count: int = 50, empties: int = 990_000) -> Path:
    """A small bundle whose one tape inflates at ~220:1 (under the 1000:1 bomb limit): `count` records each just
    under the item limit (990,000 empty arrays, ~64 MB decoded) with a few random bytes that keep the ratio honest."""
    head = msgpack.packb({"kind": "stdio.line", "t": 1.0, "dir": "s2c", "raw": b""})[:-2]  # its empty bin8 cut off
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z, \
            z.open("tapes/big.mcptape", "w", force_zip64=True) as member:
        member.write(MAGIC + encode(records.header(0.0, "test")))
        for _ in range(count):
            noise = os.urandom(3_500)
            payload = (bytes([head[0] + 1]) + head[1:] + b"\xc5" + struct.pack(">H", len(noise)) + noise +
                       msgpack.packb("msg") + b"\xdd" + struct.pack(">I", empties) + b"\x90" * empties)
            member.write(frame(payload))
    return path


def deep_tape(path: Path, depth: int = 100_000) -> Path:
    head = msgpack.packb({"kind": "stdio.line", "t": 1.0, "dir": "s2c"})
    payload = bytes([head[0] + 1]) + head[1:] + msgpack.packb("msg") + b"\x91" * depth + b"\xc0"
    path.write_bytes(tape_bytes(payload))
    return path


WRONG_TYPES = {  # records a stranger's tape may hold: the right kinds with the wrong types of fields
    "headers-not-a-list": {"kind": "http.request", "t": 1.0, "exchange": 1, "method": "POST", "path": "/mcp",
                           "headers": 7},
    "header-not-a-pair": {"kind": "http.request", "t": 1.0, "exchange": 1, "method": "POST", "path": "/mcp",
                          "headers": [["a"], 3]},
    "status-text": {"kind": "http.response", "t": 1.0, "exchange": 1, "status": "two hundred", "headers": []},
    "exchange-map": {"kind": "http.request", "t": 1.0, "exchange": {"a": 1}, "method": "POST", "path": "/mcp",
                     "headers": []},
    "msg-string-line": {"kind": "stdio.line", "t": 1.0, "dir": "c2s", "msg": "tools/call"},
    "raw-int": {"kind": "stdio.line", "t": 1.0, "dir": "s2c", "raw": 5},
    "text-list": {"kind": "stdio.stderr", "t": 1.0, "text": ["a"]},
    "t-string": {"kind": "stdio.line", "t": "yesterday", "dir": "c2s", "msg": {"jsonrpc": "2.0", "method": "x"}},
    "t-nan": {"kind": "stdio.line", "t": float("nan"), "dir": "c2s", "msg": {"jsonrpc": "2.0", "method": "x"}},
    "t-huge": {"kind": "stdio.line", "t": 1e308, "dir": "c2s", "msg": {"jsonrpc": "2.0", "method": "x"}},
    "t-inf": {"kind": "stdio.line", "t": float("-inf"), "dir": "c2s", "msg": {"jsonrpc": "2.0", "method": "x"}},
    "kind-int": {"kind": 3, "t": 1.0},
    "dir-list": {"kind": "stdio.line", "t": 1.0, "dir": ["c2s"], "msg": {"jsonrpc": "2.0", "method": "x"}},
    "session-int": {"kind": "http.request", "t": 1.0, "exchange": 1, "method": "POST", "path": "/mcp",
                    "headers": [], "session": 5},
    "edits-string": {"kind": "edit", "t": 1.0, "edits": "drop", "detail": {"x": 1}},
}


def wrong_type_tape(path: Path, name: str) -> Path:
    path.write_bytes(tape_bytes(msgpack.packb(WRONG_TYPES[name])))
    return path


def deep_json(depth: int = 200_000) -> str:
    return "[" * depth + "]" * depth


def deep_har(path: Path, depth: int = 200_000) -> Path:
    path.write_text('{"log": {"entries": [' + deep_json(depth) + "]}}")
    return path


def deep_flows(path: Path, depth: int = 200_000) -> Path:
    """A tnetstring (mitmproxy's flow file) of lists within lists."""
    inner = b"0:]"
    for _ in range(depth):
        inner = str(len(inner)).encode() + b":" + inner + b"]"
    path.write_bytes(inner)
    return path


def deep_json_document(path: Path, depth: int = 200_000) -> Path:
    path.write_text('{"mcptape": 1, "header": {"kind": "header"}, "records": [' + deep_json(depth) + "]}")
    return path


@dataclass
class Run:
    code: int | None  # None: killed after the hang timeout
    peak_mb: float
    seconds: float
    stdout: str
    stderr: str


def run_measured(argv: list[str], timeout: float = 60, env: dict | None = None, stdin=subprocess.DEVNULL) -> Run:
    """Run a command, sampling the resident memory of it and its children every 10 ms; kill it at `timeout`."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})}, start_new_session=True)
    peak = 0
    out: dict[str, bytes] = {}

    def drain(name: str, stream) -> None:
        out[name] = stream.read()

    readers = [threading.Thread(target=drain, args=(n, s), daemon=True)
               for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for reader in readers:
        reader.start()
    killed = False
    while proc.poll() is None:
        peak = max(peak, resident_kb(proc.pid))
        if time.perf_counter() - start > timeout:
            os.killpg(proc.pid, 9)
            killed = True
            break
        time.sleep(0.01)
    proc.wait()
    for reader in readers:
        reader.join(10)
    return Run(None if killed else proc.returncode, peak / 1024, time.perf_counter() - start,
               out.get("out", b"").decode("utf-8", "replace"), out.get("err", b"").decode("utf-8", "replace"))


def resident_kb(pid: int) -> int:
    """VmRSS of a process and its children (a wrapper's server, mitmproxy's helpers), in KB."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        return []
    return kids + [g for k in kids for g in _children(k)]
