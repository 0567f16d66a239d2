"""The README's quickstart, run as written on a fresh tape: each line in order, in an empty folder, each checked
against the comment beside it (what it prints: fragments in order, `…` between them; `exit N:` its exit status).
Two liberties, both stated in the README: the fixed ports become free ones (a test never takes a well-known port
from whatever else runs here), and the first two lines (make a venv, `pip install '.[demo]'`) are the checkout's
.venv, which tests/peers/test_packaging.py builds from scratch. The wall time is printed (`-s`) and recorded as a
property, so a run says how long the quickstart takes a reader's machine."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from ..conftest import BIN, free_port, stop

ROOT = Path(__file__).resolve().parents[2]
SETUP = ("python3 -m venv", "pip install")


def quickstart() -> list[tuple[str, int, list[str]]]:
    """(command, exit status, output fragments) for each line of the quickstart's sh block."""
    section = (ROOT / "README.md").read_text().split("## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    steps = []
    for line in block.splitlines():
        command, _, comment = line.partition("  # ")
        said = re.match(r"exit (\d): ", comment.strip())
        fragments = [f.strip() for f in comment.strip()[said.end() if said else 0:].split("…") if f.strip()]
        steps.append((command.strip(), int(said[1]) if said else 0, fragments))
    return steps


def test_the_quickstart_runs_as_written(tmp_path, record_property):
    steps = quickstart()
    assert [c for c, _, _ in steps[:2]] and all(c.startswith(SETUP) for c, _, _ in steps[:2]), steps[:2]
    ports = {p: str(free_port()) for p in re.findall(r"(?:127\.0\.0\.1:|--port )(\d{4,5})",
                                                     "\n".join(c for c, _, _ in steps))}
    free = lambda text: re.sub(r"\b(\d{4,5})\b", lambda m: ports.get(m[1], m[1]), text)  # noqa: E731
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONUNBUFFERED": "1",
           "VIRTUAL_ENV": str(BIN.parent)}
    background: list[tuple[subprocess.Popen, Path]] = []
    began = time.monotonic()
    try:
        for n, (command, status, fragments) in enumerate(steps[2:]):
            command, fragments = free(command), [free(f) for f in fragments]
            if command.endswith("&"):
                out = tmp_path.parent / f"{tmp_path.name}-{n}.out"
                with out.open("wb") as sink:
                    proc = subprocess.Popen(["bash", "-c", "exec " + command[:-1]], cwd=tmp_path, env=env,
                                            stdout=sink, stderr=subprocess.STDOUT)
                background.append((proc, out))
                _wait_for(fragments, out, proc, command)
                continue
            if command == "kill $!":
                proc, out = background.pop()
                code = stop(proc, signal.SIGTERM)
                assert code == status, (command, code, out.read_text())
                _assert_in_order(fragments, out.read_text(), command)
                continue
            done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
            assert done.returncode == status, (command, done.stdout[-3000:])
            _assert_in_order(fragments, done.stdout, command)
    finally:
        for proc, _ in background:
            stop(proc)
    took = time.monotonic() - began
    record_property("quickstart_wall_seconds", round(took, 1))
    print(f"\nquickstart: {len(steps) - 2} commands as written, {took:.1f} s wall time")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bug.zip", "edited.mcptape", "report.html", "run.mcptape"]


def _assert_in_order(fragments: list[str], output: str, command: str) -> None:
    at = 0
    for fragment in fragments:
        found = output.find(fragment, at)
        assert found >= 0, f"{command!r} did not print {fragment!r} (after offset {at}):\n{output[-3000:]}"
        at = found + len(fragment)


def _wait_for(fragments: list[str], out: Path, proc: subprocess.Popen, command: str, timeout: float = 30) -> None:
    """Until a background line has printed what its comment says (its signal that it is ready)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = out.read_text(errors="replace")
        if all(f in text for f in fragments):
            _assert_in_order(fragments, text, command)
            return
        assert proc.poll() is None, f"{command!r} exited {proc.returncode}:\n{text}"
        time.sleep(0.05)
    raise AssertionError(f"{command!r} never printed {fragments}:\n{out.read_text()}")
