"""`mcptape.recording()`: a recorder for the length of a `with` block, for tests and scripts.

It runs the same recorder `mcptape record` is (the command itself, as a child process: mitmproxy wants a main
thread and its own signal handling, and a recording is rare next to the replays that follow it), so a tape
recorded from a test is the tape a user would record by hand, edits included.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from ..output import WriteMode

if TYPE_CHECKING:
    import subprocess

    from ..edits import Edit


class ProxyKind(StrEnum):
    """How an HTTP recorder stands between client and server: reverse (the client uses the recorder's URL, one
    upstream) or regular (an explicit HTTP(S) proxy; the client names where it goes)."""

    REVERSE = "reverse"
    REGULAR = "regular"


@dataclass(frozen=True)
class Ready:
    """What an HTTP recorder announces once it listens (`mcptape record --ready-fd N`): one JSON line, for the
    programs that started it; the lines it prints for people may change wording at any time."""

    url: str  # where clients go: reverse mode, the upstream's path on our address; regular mode, the proxy
    mode: ProxyKind
    listen: str  # http://HOST:PORT the recorder bound
    tape: str

    def to_json(self) -> dict:
        return {"url": self.url, "mode": str(self.mode), "listen": self.listen, "tape": self.tape}

    @classmethod
    def from_json(cls, line: str) -> Ready:
        data = json.loads(line)
        return cls(data["url"], ProxyKind(data["mode"]), data["listen"], data["tape"])


class RecordingError(Exception):
    """The recorder could not start or did not stop cleanly; the message is one line for a person."""


def record_argv(tape: str, *, upstream: str | None = None, command: list[str] | None = None,
                edits: Sequence[Edit] = (), write_mode: WriteMode = WriteMode.NEW,
                ready_fd: int | None = None, allow_hosts=(), allow_origins=()) -> list[str]:
    """The `mcptape record` command line for a tape: in front of an HTTP upstream, or wrapping a stdio server's
    command (then it is what the client runs as its server). `edits` are parsed edits: they travel as JSON data
    (`--edits-json`), never as edit-language text to parse again. `ready_fd`: the descriptor the recorder announces
    its address on (see `start`)."""
    argv = [sys.executable, "-m", "mcptape", "record", "-o", os.fspath(tape)]
    if write_mode is not WriteMode.NEW:
        argv.append(f"--{write_mode}")
    if edits:
        from ..edits import language

        argv += ["--edits-json", language.dumps(list(edits))]
    if command is not None:
        return [*argv, "--", *command]
    for host in allow_hosts:
        argv += ["--allow-host", host]
    for origin in allow_origins:
        argv += ["--allow-origin", origin]
    ready = ["--ready-fd", str(ready_fd)] if ready_fd is not None else []
    return [*argv, "--upstream", upstream, "--listen", "127.0.0.1:0", *ready]


def start(argv: list[str], **popen) -> tuple[subprocess.Popen, Ready | None]:
    """Start an HTTP recorder (`argv` from record_argv without ready_fd) and wait until it listens. Returns the
    process and what it announced on its ready descriptor, or None when it exited first (then its stderr says
    why). The address is read from that machine-readable line, never from the sentences the recorder prints for
    people."""
    import subprocess  # here, not at the top: `mcptape check` imports this module's names (ProxyKind) at start

    read, write = os.pipe()
    try:
        proc = subprocess.Popen([*argv, "--ready-fd", str(write)], pass_fds=(write,), **popen)
    finally:
        os.close(write)  # the child holds the only write end: EOF here means it exited before listening
    with os.fdopen(read, encoding="utf-8") as channel:
        line = channel.readline()
    return proc, (Ready.from_json(line) if line else None)


@contextmanager
def recording(tape: str, *, upstream: str | None = None, command: list[str] | None = None,
              edits: Sequence[str | Edit] = (), force: bool = False, allow_hosts=(),
              allow_origins=()) -> Iterator:
    """Record into `tape` for the length of the block.

    upstream=URL: yields the URL to point the client at (a reverse proxy on a free port in front of URL).
    command=[...]: yields the argv to start the stdio server through the recorder; every start of it appends a
    run to the tape (a client may start its server more than once).
    `force` replaces an existing tape; without it an existing tape is refused, as `mcptape record` does.
    `edits`: edit-language text (parsed here, once) or edits already parsed (mcptape.edits.Edit).
    `allow_hosts`, `allow_origins`: what the recorder accepts beyond loopback (guard.py).
    """
    if (upstream is None) == (command is None):
        raise ValueError("recording() needs upstream=URL or command=[...], not both")
    edits = _parsed(edits)
    tape = os.fspath(tape)
    if os.path.exists(tape):
        if not force:
            raise RecordingError(f"{tape} already exists (pass force=True to replace it)")
        os.remove(tape)
    if command is not None:
        yield record_argv(tape, command=list(command), edits=edits, write_mode=WriteMode.APPEND)
        return
    import subprocess

    proc, ready = start(record_argv(tape, upstream=upstream, edits=edits, allow_hosts=allow_hosts,
                                    allow_origins=allow_origins), stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if ready is None:
        proc.wait()
        raise RecordingError(_last_line(proc.stderr.read()) or f"mcptape record exited with {proc.returncode}")
    try:
        yield ready.url
    finally:
        proc.send_signal(signal.SIGINT)  # stops as Ctrl-C does: open exchanges are recorded as proxy-stopped
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    if proc.returncode != 0:  # (not reached when the block raised: its error is the one to see)
        raise RecordingError(_last_line(err) or f"mcptape record exited with {proc.returncode}")


def _parsed(edits: Sequence[str | Edit]) -> list[Edit]:
    if not edits:
        return []
    from ..edits import EditError, language

    try:
        return [edit if isinstance(edit, language.Edit) else language.parse(edit) for edit in edits]
    except EditError as e:
        raise RecordingError(str(e)) from None


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("mcptape: ") if lines else ""
