"""The stdio wrapper on lines longer than a reader takes whole: every byte reaches the client, at once and in time
linear in the length; the wrapper never holds the line whole; the tape reads with default limits and says what it
cut (size, SHA-256, the first bytes)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcptape.tape import records
from mcptape.tape.file import read

from .conftest import MCPTAPE
from .hostile_inputs import resident_kb

SERVER = str(Path(__file__).with_name("long_line_server.py"))
HEAD = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"'


def relay(tape: Path, size: int, ended: bool) -> tuple[str, int, float]:
    """Run the server through the wrapper; the client's side hashes what it gets. Returns (sha256, bytes, peak MB of
    the wrapper and its server, sampled from /proc)."""
    proc = subprocess.Popen([MCPTAPE, "record", "-o", str(tape), "--", sys.executable, SERVER, str(size),
                             "newline" if ended else "no-newline"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    digest, got = hashlib.sha256(), [0]

    def client() -> None:
        while chunk := proc.stdout.read(1 << 20):
            digest.update(chunk)
            got[0] += len(chunk)

    reader = threading.Thread(target=client, daemon=True)
    reader.start()
    peak, deadline = 0, time.monotonic() + 60
    while proc.poll() is None:
        peak = max(peak, resident_kb(proc.pid))
        assert time.monotonic() < deadline, "the wrapper hung"
        time.sleep(0.01)
    reader.join(30)
    proc.stdin.close()
    assert proc.returncode == 0, proc.stderr.read()
    return digest.hexdigest(), got[0], peak / 1024


def expected(size: int, ended: bool) -> tuple[str, int]:
    digest = hashlib.sha256(HEAD)
    piece = b"x" * 65536
    for _ in range(size // len(piece)):
        digest.update(piece)
    tail = b"x" * (size % len(piece)) + b'"}]}}' + (b'\n{"jsonrpc":"2.0","id":2,"result":{}}\n' if ended else b"")
    digest.update(tail)
    return digest.hexdigest(), len(HEAD) + size - size % len(piece) + len(tail)


def test_a_100_mb_line_without_newline_reaches_the_client_whole_and_the_tape_says_what_was_cut(tmp_path):
    size = 100_000_000
    got, length, peak = relay(tmp_path / "long.mcptape", size, ended=False)
    assert (got, length) == expected(size, ended=False)
    assert peak < 200, f"the wrapper and its server peaked at {peak:.0f} MB"
    tape = read(tmp_path / "long.mcptape")  # default limits
    cut = [r for r in tape.records if r["kind"] == records.STDIO_LINE]
    assert len(cut) == 1 and cut[0]["partial"] is True
    assert cut[0]["size"] == length and cut[0]["sha256"] == got  # the whole line was the whole output
    assert len(cut[0]["raw"]) <= records.CUT_KEEP and cut[0]["raw"].startswith(HEAD)
    assert "SHA-256" in cut[0]["problem"] and "the stream ended before this line's newline" in cut[0]["problem"]


@pytest.mark.parametrize("limit_mb, cut", [("1", True), ("64", False)])
def test_a_long_line_with_its_newline_is_cut_past_the_limit_and_the_next_line_is_whole(tmp_path, monkeypatch,
                                                                                        limit_mb, cut):
    monkeypatch.setenv("MCPTAPE_MAX_RECORD_MB", limit_mb)
    size = 3_000_000
    got, length, _ = relay(tmp_path / "t.mcptape", size, ended=True)
    assert (got, length) == expected(size, ended=True)
    lines = [r for r in read(tmp_path / "t.mcptape").records if r["kind"] == records.STDIO_LINE]
    assert len(lines) == 2 and lines[1]["msg"] == {"jsonrpc": "2.0", "id": 2, "result": {}}
    if cut:
        assert lines[0]["size"] == len(HEAD) + size + 5 and "msg" not in lines[0] and "partial" not in lines[0]
    else:
        assert len(lines[0]["msg"]["result"]["content"][0]["text"]) == size


COPY = "import shutil, sys; shutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer, 1 << 16)"


def bulk_input(size: int) -> bytes:
    big = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}' % (
        b"y" * size)
    return big + b'\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n'


def test_bulk_both_ways_goes_on_byte_for_byte_and_is_recorded_whole(tmp_path):
    """Pipes at both ends: the client's 3 MB line and the server's echo of it go on by zero copy
    (capture/handover.py), then the small line after them as read and written; all of it is in the tape whole."""
    data = bulk_input(3_000_000)
    proc = subprocess.Popen([MCPTAPE, "record", "-o", str(tmp_path / "t.mcptape"), "--", sys.executable, "-c", COPY],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(data, timeout=60)
    assert proc.returncode == 0, err
    assert out == data
    lines = [r for r in read(tmp_path / "t.mcptape").records if r["kind"] == records.STDIO_LINE]
    order = [(r["dir"], r["msg"]["id"]) for r in lines]
    assert sorted(order) == [("c2s", 1), ("c2s", 2), ("s2c", 1), ("s2c", 2)]
    assert order.index(("c2s", 1)) < order.index(("s2c", 1))  # causal: the server answered what it had been sent
    assert all(len(r["msg"]["params"]["arguments"]["text"]) == 3_000_000 for r in lines if r["msg"]["id"] == 1)


def test_ends_zero_copy_cannot_use_are_read_and_written(tmp_path):
    """stdin a regular file (tee refuses it), stdout a file opened to append (splice refuses it): the same bytes
    arrive, and the tape is the same."""
    data = bulk_input(3_000_000)
    (tmp_path / "in").write_bytes(data)
    with open(tmp_path / "in", "rb") as stdin, open(tmp_path / "out", "ab") as stdout:
        proc = subprocess.run([MCPTAPE, "record", "-o", str(tmp_path / "t.mcptape"), "--", sys.executable, "-c", COPY],
                              stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out").read_bytes() == data
    lines = [r for r in read(tmp_path / "t.mcptape").records if r["kind"] == records.STDIO_LINE]
    assert sorted((r["dir"], r["msg"]["id"]) for r in lines) == [("c2s", 1), ("c2s", 2), ("s2c", 1), ("s2c", 2)]


def test_the_tape_writer_killed_mid_bulk_the_client_still_gets_every_byte(tmp_path):
    size = 20_000_000
    proc = subprocess.Popen([MCPTAPE, "record", "-o", str(tmp_path / "t.mcptape"), "--", sys.executable, SERVER,
                             str(size), "newline"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    digest = hashlib.sha256(first := proc.stdout.read(1 << 20))  # the relay is mid-line, waiting on us
    deadline = time.monotonic() + 30
    while len(kids := Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()) < 2:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    writer = [k for k in kids if Path(f"/proc/{k}/cmdline").read_text().split("\0")[1] != SERVER]  # forked from us
    os.kill(int(writer[0]), signal.SIGKILL)
    got = len(first)
    while chunk := proc.stdout.read(1 << 20):
        digest.update(chunk)
        got += len(chunk)
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0, proc.stderr.read()
    assert (digest.hexdigest(), got) == expected(size, ended=True)
