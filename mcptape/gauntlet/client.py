"""The client under test as a process: the command it runs (`{url}`, `{server}`), the stdio replay it may spawn,
and one run of it under the gauntlet's timeout. Each client is started in a process group of its own, and the
whole group is killed when the run ends, so nothing it started (a stdio replay included) outlives the run."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from .verdicts import ERROR, HUNG, Run, last_line

CANNOT_EXECUTE = (126, 127)  # a shell's "cannot execute" and "not found"


class Processes:
    """The client process groups alive now, so a gauntlet that is stopped can kill them all; once stopped, no new
    client starts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.groups: set[int] = set()
        self.stopped = False

    def start(self, argv: list[str], **options) -> subprocess.Popen | None:
        with self.lock:
            if self.stopped:
                return None
            proc = subprocess.Popen(argv, start_new_session=True, **options)
            self.groups.add(proc.pid)
            return proc

    def end(self, proc: subprocess.Popen) -> None:
        """Kill what is left of the client's group (its children too, even once it has exited), then reap it."""
        with self.lock:
            self.groups.discard(proc.pid)
            _kill_group(proc.pid)
        proc.wait()

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            for group in self.groups:
                _kill_group(group)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def expand(command: list[str], url: str | None, server: list[str] | None) -> list[str]:
    """`{server}` as a whole argument becomes the server command's arguments in place; `{url}` anywhere in an
    argument becomes the replay's URL."""
    argv: list[str] = []
    for arg in command:
        if arg == "{server}" and server is not None:
            argv.extend(server)
        else:
            argv.append(arg.replace("{url}", url) if url is not None else arg)
    return argv


def uses_stdio(command: list[str]) -> bool:
    return any("{server}" in arg for arg in command)


def mcptape_command() -> list[str]:
    """The installed mcptape: its console script beside this interpreter, else this interpreter with `-P` (no
    current directory on sys.path), so a `mcptape/` folder where the client runs is never imported instead."""
    script = Path(sys.executable).with_name("mcptape")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    found = shutil.which("mcptape")
    if found and Path(found).resolve().parent == Path(sys.executable).resolve().parent:
        return [found]
    return [sys.executable, "-P", "-m", "mcptape"]


def stdio_server(tape: str, edit: str, log: str | None, ignore: tuple[str, ...] = (),
                 match_meta: bool = False) -> list[str]:
    argv = [*mcptape_command(), "replay", os.path.abspath(tape), "--stdio"]
    if edit:  # crosses as JSON data: the replay does not parse the edit language again
        from ..edits import language

        argv += ["--edits-json", language.dumps([language.parse(edit)])]
    argv += [a for pointer in ignore for a in ("--ignore", pointer)]
    argv += ["--match-meta"] if match_meta else []
    return argv + ["--log", log] if log else argv


def check_stdio_replay(tape: str, workdir: Path) -> str | None:
    """Start the stdio replay once with nothing to answer: why it cannot start, or None when it can."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "preflight.mcptape"
    log.unlink(missing_ok=True)  # a --logs folder used before
    try:
        done = subprocess.run(stdio_server(tape, "", str(log)), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=60, cwd=workdir)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the stdio replay cannot start: {e}"
    if done.returncode != 0 or not log.exists():
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"the stdio replay cannot start (exit {done.returncode}): {said[-1] if said else 'no message'}"
    return None


def reproduce(tape: str, edit: str, stdio: bool, ignore: tuple[str, ...] = (), match_meta: bool = False) -> str:
    """The command that serves the failing cell by hand."""
    argv = ["mcptape", "replay", tape, *(["--stdio"] if stdio else []), "--edit", edit]
    argv += [a for pointer in ignore for a in ("--ignore", pointer)]
    return shlex.join(argv + (["--match-meta"] if match_meta else []))


def run_client(gauntlet: Any, run: Run, argv: list[str], env: dict, workdir: Path) -> int | None:
    """Run the client to its end or its timeout; its exit code, or None when it hung (run.verdict says so) or the
    gauntlet was stopped. A client that cannot start is an error (run.verdict)."""
    out = workdir / "client.out"
    with open(out, "wb") as sink:
        try:
            proc = gauntlet.processes.start(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                            env=env)
        except OSError as e:
            run.verdict, run.why = ERROR, f"the client cannot start: {e.strerror}: {argv[0]}"
            return 127
        if proc is None:
            return None
        try:
            code = proc.wait(gauntlet.timeout)
        except subprocess.TimeoutExpired:
            code = None
            run.verdict, run.why = HUNG, f"still running after {gauntlet.timeout:g}s; killed"
        finally:
            gauntlet.processes.end(proc)
    run.output = out.read_bytes()[-2000:].decode("utf-8", "replace")
    if code is not None and code < 0 and gauntlet.processes.stopped:
        return None
    if code in CANNOT_EXECUTE:
        run.verdict = ERROR
        run.why = f"the client cannot start (exit {code}): {last_line(run.output) or argv[0]}"
    return code
