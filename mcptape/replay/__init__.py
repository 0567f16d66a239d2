"""Replay: a tape served back as a faithful MCP server, over HTTP or stdio, offline.

Library use (a test fixture, say):

    from mcptape.replay import replaying
    with replaying("run.mcptape") as url:      # or: async with areplaying(...) as url
        ...point the client at url...
    with replaying("run.mcptape", edits=["expire-session at=tools/call#2"]) as url:
        ...
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager

import msgspec

from .recorded import load
from .serve import Replayer


class Replay(msgspec.Struct):
    url: str
    replayer: Replayer


def pace_function(spec: str):
    """--pace fast | recorded | xN (N times faster than recorded)."""
    if not isinstance(spec, str):  # made at the option already (cli.options.PACE): the function, or None for fast
        return spec
    if spec == "fast":
        return None
    if spec == "recorded":
        return lambda gap: gap
    if spec.startswith("x"):
        try:
            factor = float(spec[1:])
        except ValueError:
            factor = 0
        if factor > 0:
            return lambda gap: gap / factor
    raise ValueError(f"--pace {spec!r}: use fast, recorded, or xN (e.g. x10)")


@asynccontextmanager
async def serving(tape: str, host: str = "127.0.0.1", port: int = 0, ignore: tuple[str, ...] = (),
                  log: str | None = None, pace: str = "fast", replayer: Replayer | None = None,
                  edits: tuple[str, ...] = (), log_mode: str = "new",
                  sock: socket.socket | None = None, allow_hosts: tuple[str, ...] = (),
                  allow_origins: tuple[str, ...] = ()) -> AsyncIterator[Replay]:
    """`sock`: a socket already listening, to serve on instead of host:port (its clients may already be
    connecting: they wait in its backlog until the replay is up). `allow_hosts`, `allow_origins`: what the
    Host and Origin checks accept beyond loopback and the listen address (guard.py)."""
    from .. import TOOL
    from ..guard import Guard
    from ..tape import records
    from ..tape.file import Writer
    from .http import HttpReplay

    if replayer is None:
        from ..edits import Editor, check_transport, parse

        editor = None
        if edits:
            editor = Editor([parse(e) for e in edits])
            check_transport(editor.edits)
        replayer = Replayer(load(tape), list(ignore), editor)
    writer = capture = None
    if log is not None:
        from ..capture.http import HttpCapture, Scope  # only here: a replay without a log starts without them
        from ..redact.redactor import Redactor

        redactor = Redactor()
        writer = Writer(log, records.header(time.time(), TOOL, redactor.describe()), log_mode)  # "force" replaces
        capture = HttpCapture(writer, redactor, Scope(set(replayer.recording.paths)))
        capture.start(time.time(), TOOL, {"replay": tape}, 0)
    listen = sock.getsockname()[0] if sock is not None else host
    replay = HttpReplay(replayer, capture, pace_function(pace), Guard(listen, allow_hosts, allow_origins))
    if sock is not None:
        server = await asyncio.get_running_loop().create_server(replay.protocol, sock=sock)
    else:
        server = await asyncio.get_running_loop().create_server(replay.protocol, host, port)
    host, bound = server.sockets[0].getsockname()[:2]
    path = replayer.recording.entry
    try:
        yield Replay(f"http://{host}:{bound}{path}", replayer)
    finally:
        server.close()
        await replay.close_clients()
        if capture is not None:
            capture.stop(time.time(), "replay stopped")
            writer.close()


@asynccontextmanager
async def areplaying(tape: str, **options) -> AsyncIterator[str]:
    """Serve a tape on a free port for the length of the block; yields the URL."""
    async with serving(tape, **options) as replay:
        yield replay.url


class Background:
    """An event loop in a daemon thread, for serving replays to synchronous code. One can serve many replays in
    turn (the pytest plugin keeps one for a whole run: a test pays no thread start)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pending: list[concurrent.futures.Future] = []
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcptape-replay", daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float | None = None):
        return self.submit(coro).result(timeout)

    def submit(self, coro) -> concurrent.futures.Future:
        """Run a coroutine on the loop without waiting for it; close() waits for what is still running."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        self.pending = [f for f in self.pending if not f.done()] + [future]
        return future

    def enter(self, manager) -> tuple:
        """Enter an async context manager on the loop: its value, and the function that exits it."""
        stack = AsyncExitStack()
        value = self.run(stack.enter_async_context(manager))
        return value, lambda: self.run(stack.aclose(), 30)

    def start(self, manager) -> tuple:
        """The same without waiting, in either direction: the future of its value, and the function that exits it
        once it is entered (and returns that exit's future). A test that hands its replay a listening socket pays
        no wait for another thread, which on a busy machine can cost milliseconds each time."""
        stack = AsyncExitStack()
        entered = self.submit(stack.enter_async_context(manager))

        async def leave() -> None:
            try:
                await asyncio.wrap_future(entered)
            finally:
                await stack.aclose()

        return entered, lambda: self.submit(leave())

    def close(self) -> None:
        for future in self.pending:
            try:
                future.result(30)
            except BaseException:
                pass  # whoever started it reads its error; here it only has to be finished
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


@contextmanager
def replaying(tape: str, **options) -> Iterator[str]:
    """The same, for synchronous code: the server runs on its own event loop in a thread."""
    background = Background()
    try:
        replay, close = background.enter(serving(tape, **options))
        try:
            yield replay.url
        finally:
            close()
    finally:
        background.close()
