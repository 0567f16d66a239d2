"""The replay as a stdio server: a client launches `mcptape replay TAPE --stdio` as its server command."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import BinaryIO

from .. import edits
from ..tape import records
from ..tape.file import Writer
from ..wire import jsonrpc
from .serve import DERIVED_HANDSHAKE, Replayer


EXIT_CODE = 1  # what the replay exits with when an edit makes the server exit (refuse-discover answer=exit)


def serve(replayer: Replayer, stdin: BinaryIO, stdout: BinaryIO, log: Writer | None = None,
          pace: Callable[[float], float] | None = None) -> int:
    """Answer each request line until stdin closes: the recorded notifications, then the answer, each message a
    line, whichever transport recorded them (an HTTP tape's SSE events, JSON bodies, legacy channel). Notifications
    and responses from the client get nothing back, as on the wire. `pace` spaces the lines as recorded. Returns
    the exit code: 0 when stdin closed, EXIT_CODE when an edit made the server exit."""
    # a 2026-07-28 tape: a client that falls back to initialize gets a handshake derived from server/discover
    session = replayer.open_derived_session() if replayer.discover is not None else replayer.open_session()
    editor = replayer.editor

    def note(direction: str, line: bytes, injected: bool = False) -> None:
        if log is not None:
            record = records.stdio_line(time.time(), direction, line)
            if injected:
                record["injected"] = True
            log.write(record)

    def read() -> dict | None:
        raw = stdin.readline()
        if not raw:
            raise EOFError
        line = raw.rstrip(b"\r\n")
        note(records.C2S, line)
        msg = jsonrpc.parse(line).msg
        return msg if isinstance(msg, dict) else None

    def write(data: bytes, injected: bool = False) -> None:
        stdout.write(data + b"\n")
        stdout.flush()
        note(records.S2C, data, injected)

    try:
        while True:
            msg = read()
            plan = editor.plan(time.time(), msg) if editor is not None and msg is not None else None
            if msg is None or jsonrpc.kind(msg) != "request":
                continue
            request_id = msg.get("id")
            if hold := edits.hold(plan):
                _edited(log, plan, request_id, hold)
                time.sleep(hold.seconds)
            if ours := edits.instead(plan):  # on stdio, an error or an exit (check_transport refuses the rest)
                _edited(log, plan, request_id, ours)  # the recorded answer stays unused for a retry
                if isinstance(ours, edits.Exit):  # as a server that dies on the probe: its stdout closes
                    if log is not None:
                        log.write(records.stdio_exit(time.time(), EXIT_CODE))
                    return EXIT_CODE
                write(ours.body, True)
                continue
            if session.derived and msg.get("method") == "initialize" and log is not None:
                log.write(records.edit(time.time(), [DERIVED_HANDSHAKE], "answered initialize with a handshake "
                                       "derived from the recorded server/discover answer", None, None, request_id))
            outcome = replayer.answer(msg, session, stdio=True, consume=edits.delivers(plan))
            lines = outcome.lines
            injected = bool(plan and plan.changes_events)
            if injected:
                change = edits.edit_events(lines, plan, request_id, "")
                _edited(log, plan, request_id, change)
                lines = change.events
            previous = outcome.answer.t if outcome.answer is not None else 0.0
            for line in lines:
                if pace is not None and line.get("t"):
                    time.sleep(pace(max(0.0, line["t"] - previous)))
                    previous = line["t"]
                out = line.get("msg")
                write(records.message_text(out).encode() if "msg" in line else line["data"].encode(), injected)
                if jsonrpc.kind(out) == "request":  # server-initiated: wait for the client's answer, as recorded
                    while (answer := read()) is None or answer.get("id") != out.get("id") or "method" in answer:
                        pass
    except EOFError:
        if log is not None:
            log.write(records.stdio_eof(time.time(), records.C2S))  # the client closed our stdin
    return 0


def _edited(log: Writer | None, plan: edits.Plan, request_id, effect: edits.Effect | edits.EditedEvents) -> None:
    if log is not None:
        log.write(records.edit(time.time(), plan.texts, effect.detail, None, effect.withheld or None, request_id))
