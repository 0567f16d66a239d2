"""The re-drive over stdio: one server process per recorded run, lines in and out as the recorder writes them."""

from __future__ import annotations

import asyncio
import os
import signal
import time

from .. import TOOL
from ..tape import records
from . import script as scripted
from .drive import Run, Unstartable

# "closing the input stream to the child process … Waiting for the server to exit, or sending SIGTERM if the server
# does not exit within a reasonable time" (2025-11-25 lifecycle, shutdown over stdio): 2 s, as the Python SDK's stdio
# client waits; then SIGTERM, and SIGKILL after as long again. (Waiting the per-request --timeout kept verify 10 s
# on every server that ignores its stdin closing.)
_EXIT_GRACE = 2.0


class StdioRun(Run):
    """A stdio server, one process per recorded run; lines in and out as the recorder writes them."""

    def __init__(self, script, writer, timeout, secrets, pseudonyms, command: list[str]) -> None:
        super().__init__(script, writer, timeout, secrets, pseudonyms)
        self.command = command
        self.proc: asyncio.subprocess.Process | None = None
        self.session: str | None = None
        self.readers: list[asyncio.Task] = []

    def write(self, record: records.Record) -> None:
        self.log(record)
        if record.get("dir") == records.S2C and "msg" in record:
            self.tracker.saw(self.session, record["msg"])

    async def _start(self, session: str | None) -> None:
        if self.proc is not None:
            await self._finish()
        self.session = session
        self.tracker.gone = None  # a new run, a new process
        self.write(records.capture_start(time.time(), TOOL, {"stdio": self.command, "cwd": os.getcwd()}, {}))
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, limit=1 << 24)
        except OSError as e:
            message = f"cannot start {self.command[0]}: {e.strerror}"
            self.write(records.stdio_exit(time.time(), 127 if isinstance(e, FileNotFoundError) else 126,
                                          error=message))
            self.write(records.capture_stop(time.time(), "server did not start"))
            raise Unstartable(message) from None
        self.readers = [asyncio.create_task(self._read(self.proc.stdout, records.S2C)),
                        asyncio.create_task(self._read(self.proc.stderr, None))]

    async def _read(self, stream: asyncio.StreamReader, direction: str | None) -> None:
        while line := await stream.readline():
            partial = not line.endswith(b"\n")
            line = line.removesuffix(b"\n")
            if direction is None:
                self.write(records.stdio_stderr(time.time(), line.removesuffix(b"\r")))
            else:
                self.write(records.stdio_line(time.time(), direction, line, partial))
        if direction is not None:
            self.write(records.stdio_eof(time.time(), direction))
            self.tracker.left("the server closed its stdout")

    async def send(self, step: scripted.Step) -> None:
        if self.proc is None or step.session != self.session:
            await self._start(step.session)
        stdin = self.proc.stdin
        if step.kind == scripted.EOF:
            if not stdin.is_closing():
                stdin.close()
                self.write(records.stdio_eof(time.time(), records.C2S))
            return
        line = self.encode(step, self.message(step))
        self.write(records.stdio_line(time.time(), records.C2S, line))
        try:
            stdin.write(line + b"\n")
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server has gone: its exit is in the log, and what it never answered shows in the diff

    async def _finish(self) -> None:
        proc, self.proc = self.proc, None
        if not proc.stdin.is_closing():
            proc.stdin.close()
            self.write(records.stdio_eof(time.time(), records.C2S))
        try:
            await asyncio.wait_for(proc.wait(), min(self.timeout, _EXIT_GRACE))
        except TimeoutError:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), _EXIT_GRACE)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        await asyncio.gather(*self.readers, return_exceptions=True)
        code = proc.returncode
        if code is not None and code < 0:
            self.write(records.stdio_exit(time.time(), None, signal.Signals(-code).name))
        else:
            self.write(records.stdio_exit(time.time(), code))
        self.write(records.capture_stop(time.time(), "verify finished"))

    async def stop(self) -> None:
        if self.proc is not None:
            await self._finish()
