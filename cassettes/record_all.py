"""Re-record the cassettes: each story's real server and client, with the real `mcptape record` between them.

    .venv/bin/python cassettes/record_all.py                      # every tape, here
    .venv/bin/python cassettes/record_all.py expired-session-404  # one story
    .venv/bin/python cassettes/record_all.py --out /tmp/again     # somewhere else (to diff against these)

An HTTP story runs `STORY.py serve PORT` (an MCP server on 127.0.0.1), `mcptape record --upstream` in front of it,
then `STORY.py client URL` against the recorder. A stdio story's client starts its server itself, through the
wrapper (`stdio_recorded` below), as a client configured with `mcptape record -o TAPE -- CMD` does.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from mcptape.capture.recording import start

HERE = Path(__file__).resolve().parent

# story -> (its script, transport, the tapes it writes: the thread story's client meets two server processes)
STORIES = {
    "cancelled-call": ("cancelled_call", "stdio", ["cancelled-call"]),
    "session-not-found-401": ("stale_session_401", "http", ["session-not-found-401"]),
    "thread-ids": ("thread_ids", "stdio", ["thread-first-process", "thread-later-process"]),
    "expired-session-404": ("expired_session_404", "http", ["expired-session-404"]),
    "deleted-session-400": ("deleted_session_400", "http", ["deleted-session-400"]),
    "resumed-stream": ("resumed_stream", "http", ["resumed-stream"]),
}


def stdio_recorded(tape: str | os.PathLike, story: str):
    """The command a client starts its stdio server with: `mcptape record -o TAPE -- python -m STORY serve`, run
    from / so the tape names no folder of the machine it was recorded on."""
    from mcp import StdioServerParameters

    env = {"PYTHONPATH": str(HERE), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return StdioServerParameters(
        command=sys.executable, env=env, cwd="/",
        args=["-m", "mcptape", "record", "-o", str(Path(tape).resolve()), "--force", "--",
              "python", "-m", story, "serve"])


def stdio_servers(args: list[str], story: str) -> list:
    """The stdio servers a story's client starts, from its command line: `TAPE…` runs the story's server through
    `mcptape record -o TAPE` (one tape per server process); `-- CMD… [-- CMD…]` runs the commands as given (a
    replay of the tapes: `-- mcptape replay TAPE --stdio`)."""
    from mcp import StdioServerParameters

    if args[:1] != ["--"]:
        return [stdio_recorded(tape, story) for tape in args]
    return [StdioServerParameters(command=cmd[0], args=cmd[1:]) for cmd in _split(args[1:])]


def _split(args: list[str]) -> list[list[str]]:
    commands = [[]]
    for arg in args:
        if arg == "--":
            commands.append([])
        else:
            commands[-1].append(arg)
    return commands


def _python(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=HERE, **kw)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, ready, proc: subprocess.Popen, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > end:
            raise SystemExit(f"record_all: {what} did not start")
        time.sleep(0.05)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def record_http(story: str, tape: Path) -> None:
    port = _free_port()
    server = _python(story + ".py", "serve", str(port), stderr=subprocess.DEVNULL)
    try:
        _wait(f"{story} server", lambda: _listening(port), server)
        recorder, ready = start([sys.executable, "-m", "mcptape", "record", "--upstream",
                                 f"http://127.0.0.1:{port}/mcp", "--listen", "127.0.0.1:0", "-o", str(tape),
                                 "--force"])
        try:
            if ready is None:
                raise SystemExit(f"record_all: mcptape record exited ({recorder.wait()})")
            _run_client(story, ready.url)
        finally:
            _stop(recorder)
    finally:
        _stop(server)


def _run_client(story: str, *args: str) -> None:
    client = _python(story + ".py", "client", *args, stderr=subprocess.PIPE, text=True)
    _, err = client.communicate(timeout=120)
    if client.returncode != 0:
        raise SystemExit(f"{err}record_all: the {story} client failed ({client.returncode})")


def record(name: str, out: Path) -> list[Path]:
    story, transport, names = STORIES[name]
    tapes = [out / f"{tape}.mcptape" for tape in names]
    if transport == "stdio":
        _run_client(story, *map(str, tapes))
    else:
        record_http(story, tapes[0])
    return tapes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", metavar="NAME", help=f"the stories to re-record (all when none): {', '.join(STORIES)}")
    p.add_argument("--out", type=Path, default=HERE, help="folder for the tapes (default: cassettes/)")
    a = p.parse_args()
    if unknown := [n for n in a.names if n not in STORIES]:
        p.error(f"no story named {unknown[0]!r} (there are: {', '.join(STORIES)})")
    a.out.mkdir(parents=True, exist_ok=True)
    for name in a.names or STORIES:
        for tape in record(name, a.out.resolve()):
            print(f"recorded {tape}")


if __name__ == "__main__":
    main()
