"""`mcptape.recording()`: a recorder for the length of a `with` block, for tests and scripts.

It runs the same recorder `mcptape record` is (the command itself, as a child process: mitmproxy wants a main
thread and its own signal handling, and a recording is rare next to the replays that follow it), so a tape
recorded from a test is the tape a user would record by hand, edits included.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_URL = re.compile(r"point your MCP client at (\S+)")


class RecordingError(Exception):
    """The recorder could not start or did not stop cleanly; the message is one line for a person."""


def record_argv(tape: str, *, upstream: str | None = None, command: list[str] | None = None,
                edits: tuple[str, ...] | list[str] = (), write_mode: str = "new", allow_hosts=(),
                allow_origins=()) -> list[str]:
    """The `mcptape record` command line for a tape: in front of an HTTP upstream, or wrapping a stdio server's
    command (then it is what the client runs as its server)."""
    argv = [sys.executable, "-m", "mcptape", "record", "-o", os.fspath(tape)]
    if write_mode != "new":
        argv.append(f"--{write_mode}")
    for edit in edits:
        argv += ["--edit", edit]
    if command is not None:
        return [*argv, "--", *command]
    for host in allow_hosts:
        argv += ["--allow-host", host]
    for origin in allow_origins:
        argv += ["--allow-origin", origin]
    return [*argv, "--upstream", upstream, "--listen", "127.0.0.1:0"]


@contextmanager
def recording(tape: str, *, upstream: str | None = None, command: list[str] | None = None,
              edits: tuple[str, ...] | list[str] = (), force: bool = False, allow_hosts=(),
              allow_origins=()) -> Iterator:
    """Record into `tape` for the length of the block.

    upstream=URL: yields the URL to point the client at (a reverse proxy on a free port in front of URL).
    command=[...]: yields the argv to start the stdio server through the recorder; every start of it appends a
    run to the tape (a client may start its server more than once).
    `force` replaces an existing tape; without it an existing tape is refused, as `mcptape record` does.
    `allow_hosts`, `allow_origins`: what the recorder accepts beyond loopback (guard.py).
    """
    if (upstream is None) == (command is None):
        raise ValueError("recording() needs upstream=URL or command=[...], not both")
    tape = os.fspath(tape)
    if os.path.exists(tape):
        if not force:
            raise RecordingError(f"{tape} already exists (pass force=True to replace it)")
        os.remove(tape)
    if command is not None:
        yield record_argv(tape, command=list(command), edits=edits, write_mode="append")
        return
    proc = subprocess.Popen(record_argv(tape, upstream=upstream, edits=edits, allow_hosts=allow_hosts,
                                        allow_origins=allow_origins), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = None
    for line in proc.stdout:  # the recorder prints the URL once it listens, or exits saying why not
        if found := _URL.search(line):
            url = found.group(1)
            break
    if url is None:
        proc.wait()
        raise RecordingError(_last_line(proc.stderr.read()) or f"mcptape record exited with {proc.returncode}")
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGINT)  # stops as Ctrl-C does: open exchanges are recorded as proxy-stopped
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    if proc.returncode != 0:  # (not reached when the block raised: its error is the one to see)
        raise RecordingError(_last_line(err) or f"mcptape record exited with {proc.returncode}")


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("mcptape: ") if lines else ""
