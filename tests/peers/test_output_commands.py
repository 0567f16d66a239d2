"""-o for every command that writes a file: onto a character device node (made in a temp dir with os.mknod, never
/dev/*), a FIFO, a symlink, an existing file and a full device, the same way everywhere (output.py)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest

from ..conftest import MCPTAPE, run_mcptape

SERVER = [sys.executable, "-m", "mcptape.demo.server", "--stdio"]


@pytest.fixture(scope="module")
def sources(real_tapes, tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("sources")
    exported = str(folder / "session.json")
    assert run_mcptape("export", real_tapes["session"], "--format", "json", "-o", exported).returncode == 0
    return {"tape": real_tapes["session"], "json": exported}


COMMANDS = {
    "export": lambda s, out: ["export", s["tape"], "--format", "json", "-o", out],
    "report": lambda s, out: ["report", s["tape"], "--format", "md", "-o", out],
    "bundle": lambda s, out: ["bundle", s["tape"], "--redact", "-o", out],
    "redact": lambda s, out: ["redact", s["tape"], "-o", out],
    "import": lambda s, out: ["import", s["json"], "-o", out],
    "record": lambda s, out: ["record", "-o", out, "--", *SERVER],
}


def run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([MCPTAPE, *argv], capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def device(folder, name: str, minor: int) -> str:
    path = os.path.join(folder, name)
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, minor))
    return path


@pytest.mark.parametrize("command", COMMANDS)
def test_a_device_is_written_in_place_and_stays_a_device(command, sources, tmp_path):
    null = device(tmp_path, "null", 3)
    done = run(COMMANDS[command](sources, null))
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.stat(null).st_mode) and sorted(os.listdir(tmp_path)) == ["null"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_full_device_is_one_line_and_exit_2(command, sources, tmp_path):
    full = device(tmp_path, "full", 7)
    done = run(COMMANDS[command](sources, full))
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "No space left on device" in lines[0], done.stderr
    assert stat.S_ISCHR(os.stat(full).st_mode)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_fifo_gets_the_content(command, sources, tmp_path):
    fifo = str(tmp_path / "pipe")
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    done = run(COMMANDS[command](sources, fifo))
    reader.join(30)
    assert done.returncode == 0, done.stderr
    assert got and len(got[0]) > 100 and stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_symlink_is_written_through_and_an_existing_file_needs_force(command, sources, tmp_path):
    target, link = tmp_path / "target", tmp_path / "link"
    target.write_bytes(b"old")
    link.symlink_to(target)
    refused = run(COMMANDS[command](sources, str(link)))
    assert refused.returncode == 2 and b"already exists" in refused.stderr and target.read_bytes() == b"old"
    done = run([*COMMANDS[command](sources, str(link)), "--force"] if command != "record" else
               ["record", "--force", "-o", str(link), "--", *SERVER])
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and len(target.read_bytes()) > 100
    assert sorted(os.listdir(tmp_path)) == ["link", "target"]  # no temporary file left beside it
