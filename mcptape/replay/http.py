"""The replay as an HTTP server: asyncio with httptools' C parser (no mitmproxy, no ASGI stack: start-up time and
CPU per call are what a replay in a test suite is judged by).

This is the front door: it serves the recorded paths (others get 404), records each request into the `--log` tape
(by the same capture core `mcptape record` uses), applies what the edits do before and instead of an answer, and
hands the rest to the transport the tape recorded: Streamable HTTP (streamable.py) or legacy HTTP+SSE
(legacy.py). A connection and how answers go out on it are connection.py's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING

from .. import edits
from ..guard import Guard
from ..tape import records
from ..wire import http
from .connection import Connection, Exchange, Pace, Request
from .serve import Replayer
from .streamable import Streamable

if TYPE_CHECKING:  # the capture core is loaded only for a --log (replay/__init__.serving): start-up time
    from ..capture.http import HttpCapture


class HttpReplay:
    def __init__(self, replayer: Replayer, log: HttpCapture | None = None, pace: Pace | None = None,
                 guard: Guard | None = None) -> None:
        self.replayer = replayer
        self.guard = guard or Guard()
        self.log = log
        self.editor = replayer.editor
        self.paths = replayer.recording.paths or {"/mcp"}
        if replayer.legacy:
            from .legacy import Legacy  # only a legacy HTTP+SSE tape needs it: start-up time

            self.server = Legacy(replayer, pace)
        else:
            self.server = Streamable(replayer, pace)
        self._keys = 0
        self.connections: set[Connection] = set()  # the clients' open connections: ended with the replay

    def protocol(self) -> asyncio.Protocol:
        conn = Connection(self.handle)
        self.connections.add(conn)
        conn.on_close.append(lambda: self.connections.discard(conn))
        return conn

    async def close_clients(self) -> None:
        """End what the clients left open, and the work each connection still had: a stream a client holds must not
        outlive the replay (nor its event loop: a task destroyed pending is a warning at exit)."""
        await asyncio.sleep(0)  # a connection accepted as the server closed is made now: it ends too
        left = list(self.connections)
        for conn in left:
            if conn.transport is not None:
                conn.transport.close()  # what was written still goes out; connection_lost then ends its worker
        workers = [conn.worker for conn in left if conn.worker is not None]
        if workers:
            _, pending = await asyncio.wait(workers, timeout=1)
            for worker in pending:  # a paced stream asleep, an answer waited for: nobody is there to get them
                worker.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    def handle(self, req: Request, conn: Connection) -> Coroutine | None:
        """Answer one request. Most answers are written at once; an answer that has to wait (a delay, a paced or
        held stream, a GET stream, a server-initiated request) comes back as a coroutine for the connection to
        await before its next request, so requests on a connection are still answered in order."""
        self._keys += 1
        ex = Exchange(conn, self._keys, self.log)
        if self.log is not None:
            self.log.request(ex.key, id(conn), time.time(), req.method, req.target, req.headers, req.body)
        if refusal := self.guard.check(req.headers):  # before anything of the tape is served
            return ex.send(refusal.status, refusal.headers, refusal.body)
        if req.path not in self.paths:
            return ex.send(404, [("content-type", "text/plain")], b"Not Found")
        if self.editor is None:
            return self.server.handle(req, ex, None)
        plan = self._plan(req)
        if hold := edits.hold(plan):
            ex.edited(plan, hold)
            return self._held(req, ex, plan, hold.seconds)
        return self._dispatch(req, ex, plan)

    async def _held(self, req: Request, ex: Exchange, plan: edits.Plan, seconds: float) -> None:
        """A delayed answer: it waits, unless the client leaves first (on 2026-07-28 that is its cancellation),
        which the log says as it would of any request the client walked away from."""
        conn, left = ex.conn, asyncio.Event()
        conn.on_close.append(left.set)
        try:
            if not conn.closed:
                await asyncio.wait_for(left.wait(), seconds)
        except TimeoutError:
            pass
        finally:
            conn.on_close.remove(left.set)
        if conn.closed:
            ex.failed(records.CLIENT_DISCONNECTED)
            return
        pending = self._dispatch(req, ex, plan)
        if pending is not None:
            await pending

    def _plan(self, req: Request) -> edits.Plan:
        session = http.request_session(req.headers, req.target, self.replayer.legacy)
        return self.editor.plan(time.time(), req.message, req.method, session)

    def _dispatch(self, req: Request, ex: Exchange, plan: edits.Plan) -> Coroutine | None:
        for killed in plan.killed:
            self.server.end_streams(killed)  # as a server ends the streams of a session it expired
        if ours := edits.instead(plan, channel=self.replayer.legacy):  # (a legacy error goes out on the channel)
            ex.edited(plan, ours)  # the recorded answer stays unused, for a retry
            if isinstance(ours, (edits.Reset, edits.Exit)):  # a server that dies drops its connections
                return ex.abort(edits.RESET_ENDED)
            return ex.send(ours.status, ours.headers, ours.body)
        return self.server.handle(req, ex, plan)
