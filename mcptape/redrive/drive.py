"""The re-drive: a script's steps sent to a live server, over HTTP (any era) or stdio, each once the server messages
it followed in the tape have arrived again; what happens is written as a tape by the recorder's own capture
(capture/http.py, the stdio record constructors), so `check` and `diff` read it as any recording.

Ids: the client's request ids and progress tokens go out as recorded (they were the client's to choose, and the
server must answer under them); the server's ids are its own, so an answer to a server request (sampling,
elicitation, roots) goes out under the id the live server used for the request it answers, found by (method,
ordinal). Session ids and a legacy channel's endpoint are the live server's: each recorded one is mapped to the
live one its answer handed out. A resumed stream's Last-Event-ID names the live event at the recorded position.

This module holds what both transports share (the tracker of what came back, the steps in order, the log);
over_http.py and over_stdio.py send and read.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..redact.pseudonym import PSEUDONYM
from ..tape import json_form, records
from ..tape.file import Writer
from ..wire import jsonrpc, pointer
from . import script as scripted


class Unstartable(Exception):
    """The server could not be reached or started at all: nothing to compare."""


class Tracker:
    """What the live server has sent so far, counted as the script counts the tape's (script.server_key), and the
    steps waiting on it."""

    def __init__(self) -> None:
        self.counts: dict[tuple, int] = {}
        self._waiting: dict[tuple, list[tuple[int, asyncio.Future]]] = {}
        self.given_up: set[tuple] = set()
        self.gone: str | None = None  # the server went away (why): nothing more can come, nothing is waited for
        self.skipped = 0  # needs let go because the server had gone
        self.why: str | None = None  # the first time it went
        self.asks: dict[tuple, Any] = {}  # (session, method, ordinal) -> the live server request's id

    def count(self, key: tuple, msg: Any = None) -> None:
        n = self.counts[key] = self.counts.get(key, 0) + 1
        if key[1] == "ask":
            self.asks[(key[0], key[2], n)] = msg.get("id")
        waiting = self._waiting.get(key)
        if waiting:
            for entry in [w for w in waiting if w[0] <= n]:
                waiting.remove(entry)
                if not entry[1].done():
                    entry[1].set_result(None)

    def saw(self, label: str | None, body: Any) -> None:
        for msg in jsonrpc.messages(body):
            what = scripted.server_key(msg)
            if what is not None:
                self.count((label, *what), msg)

    async def wait(self, needs: list[tuple[tuple, int]], timeout: float) -> list[tuple]:
        """Until every need is met, or `timeout` has passed; returns what never came (and is not waited for
        again)."""
        deadline = time.monotonic() + timeout
        missed = []
        for key, n in needs:
            if self.counts.get(key, 0) >= n or key in self.given_up:
                continue
            if self.gone:
                self.skipped += 1
                continue
            future = asyncio.get_running_loop().create_future()
            self._waiting.setdefault(key, []).append((n, future))
            try:
                await asyncio.wait_for(future, max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                self.given_up.add(key)
                missed.append(key)
            else:
                self.skipped += self.counts.get(key, 0) < n  # let go: the server left
        return missed

    def left(self, why: str) -> None:
        """The server has gone: the steps waiting on it are let go, and no step waits any more."""
        self.gone = why
        self.why = self.why or why
        for waiting in self._waiting.values():
            for _, future in waiting:
                if not future.done():
                    future.set_result(None)
        self._waiting.clear()


class _Sink:
    """The log's records go to the file, and the server's messages among them to the tracker."""

    def __init__(self, run: Run, seen) -> None:
        self.run, self.seen = run, seen

    def write(self, record: records.Record) -> None:
        self.run.log(record)
        self.seen(record)


class Run:
    """What both transports share: the steps in order, the waits, the notes on what never came."""

    def __init__(self, script: scripted.Script, writer: Writer, timeout: float, secrets: dict[str, str],
                 pseudonyms: dict[str, str] | None = None) -> None:
        self.script, self.writer, self.timeout, self.secrets = script, writer, timeout, secrets
        self.pseudonyms = pseudonyms or {}  # secret -> the pseudonym the tape has for it: the log gets that
        self.tracker = Tracker()
        self.missed: list[str] = []  # what the server never sent, in words
        self.sent_at: dict[Any, float] = {}  # as script.Builder.sent_at, live (monotonic)

    async def run(self) -> None:
        try:
            for step in self.script.steps:
                await self._wait(step.needs)
                if step.gave_up is not None:
                    what, after = step.gave_up
                    delay = self.sent_at.get(what, 0.0) + min(after, self.timeout) - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                self._sent(step)
                await self.send(step)
            await self._wait(self.script.final)
            await self.tracker.wait(self.script.ended, self.timeout)  # a stream still open: its call is reported
            if self.tracker.skipped:
                self.missed.append(f"the server went away ({self.tracker.why}): {self.tracker.skipped} awaited "
                                   f"message(s) never came; the rest was sent without waiting")
        finally:
            await self.stop()

    async def _wait(self, needs: list) -> None:
        for key in await self.tracker.wait(needs, self.timeout):
            self.missed.append(self.describe(key))

    def _sent(self, step: scripted.Step) -> None:
        now = time.monotonic()
        if step.exchange is not None and step.kind != scripted.CLOSE:
            self.sent_at[step.exchange] = now
        for msg in jsonrpc.messages(step.body.get("msg")):
            if jsonrpc.kind(msg) == "request":
                self.sent_at[(step.session, jsonrpc.id_key(msg.get("id")))] = now

    def describe(self, key: tuple) -> str:
        label, what, *rest = key
        within = f"within {self.timeout:g}s"
        if what == "answer":
            method = self.script.methods.get((label, rest[0])) or next(
                (m for (_, i), m in self.script.methods.items() if i == rest[0]), "request")
            return f"unanswered: {method} (request id {rest[0]!r}) got no answer {within}"
        if what == "http":
            return f"unanswered: the HTTP request of record exchange {rest[0]} got no response {within}"
        if what == "event":
            return f"missing: the SSE event of record exchange {rest[0]} that a resumption names {within}"
        if what == "end":
            return f"unended: the stream of record exchange {rest[0]} stayed open (the recorded client resumed it) {within}"
        if what == "endpoint":
            return f"no endpoint event on the legacy SSE channel {within}"
        if what == "progress":
            return f"missing: progress for token {rest[0]!r} (as many as the tape holds) {within}"
        if what == "ask":
            return f"missing: the server's {rest[0]} request {within}"
        return f"missing: {rest[0]} (as many as the tape holds) {within}"

    def log(self, record: records.Record) -> None:
        """Into the new tape, with every secret verify was given put back under its pseudonym (a server may echo
        one), so the log keeps them out as the recorder did."""
        self.writer.write(_scrub(record, self.pseudonyms) if self.pseudonyms else record)

    def message(self, step: scripted.Step) -> Any:
        """A step's message as it goes out: answers to the server under its live ids, redacted values filled from
        the secrets (a pointer into the message; in a batch, into each of its messages)."""
        msg = step.body.get("msg")
        batch = isinstance(msg, list)
        out = msg if batch else [msg]
        if step.answers:
            out = [self._answer(m, step) for m in out]
        for path, value in self.secrets.items():
            if not path.startswith(("/headers/", "/query/")):
                out = [_fill(m, pointer.parse(path), value) for m in out]
        return out if batch else out[0]

    def _answer(self, msg: Any, step: scripted.Step) -> Any:
        asked = step.answers.get(jsonrpc.id_key(msg.get("id"))) if isinstance(msg, dict) else None
        if asked is None:
            return msg
        live = self.tracker.asks.get((step.session, *asked), msg.get("id"))
        return {**msg, "id": live}

    def encode(self, step: scripted.Step, msg: Any) -> bytes:
        if msg is None:
            return step.body.get("raw", b"")
        return json_form.dumps(msg).encode()

    async def send(self, step: scripted.Step) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError


def _scrub(value: Any, pseudonyms: dict[str, str]) -> Any:
    if isinstance(value, str):
        for secret, pseudonym in pseudonyms.items():
            value = value.replace(secret, pseudonym)
        return value
    if isinstance(value, bytes):
        for secret, pseudonym in pseudonyms.items():
            value = value.replace(secret.encode(), pseudonym.encode())
        return value
    if isinstance(value, dict):
        return {k: _scrub(v, pseudonyms) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, pseudonyms) for v in value]
    return value


def _fill(value: Any, path: list[str], secret: str) -> Any:
    """`value` with the pseudonym at `path` replaced by the secret (copies on the way; the script is not
    changed). A path that names nothing redacted leaves the value as it is."""
    if not path:
        return PSEUDONYM.sub(lambda _: secret, value) if isinstance(value, str) else value
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and head in value:
        return {**value, head: _fill(value[head], rest, secret)}
    if isinstance(value, list) and head.isdigit() and int(head) < len(value):
        copy = list(value)
        copy[int(head)] = _fill(value[int(head)], rest, secret)
        return copy
    return value
