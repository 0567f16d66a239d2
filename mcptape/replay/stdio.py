"""The replay as a stdio server: a client launches `mcptape replay TAPE --stdio` as its server command."""

from __future__ import annotations

import time
from typing import BinaryIO

from ..tape import json_form, records
from ..tape.file import Writer
from ..wire import jsonrpc
from .serve import Replayer


def serve(replayer: Replayer, stdin: BinaryIO, stdout: BinaryIO, log: Writer | None = None) -> None:
    """Answer each request line until stdin closes: the recorded notifications, then the answer. Notifications and
    responses from the client get nothing back, as on the wire."""
    session = replayer.open_session()

    def note(direction: str, line: bytes) -> None:
        if log is not None:
            log.write(records.stdio_line(time.time(), direction, line))

    def read() -> dict | None:
        raw = stdin.readline()
        if not raw:
            raise EOFError
        line = raw.rstrip(b"\r\n")
        note(records.C2S, line)
        msg = jsonrpc.parse(line).msg
        return msg if isinstance(msg, dict) else None

    try:
        while True:
            msg = read()
            if msg is None or jsonrpc.kind(msg) != "request":
                continue
            for out in replayer.answer(msg, session).lines:
                data = json_form.dumps(out).encode()
                stdout.write(data + b"\n")
                stdout.flush()
                note(records.S2C, data)
                if jsonrpc.kind(out) == "request":  # server-initiated: wait for the client's answer, as recorded
                    while (answer := read()) is None or answer.get("id") != out.get("id") or "method" in answer:
                        pass
    except EOFError:
        return
