"""`mcptape show`: a tape as a timeline, one line per message (time, direction, session, exchange, what)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .model import OPENED, STATELESS, STDIO, Model, Observer, Seen, Session
from .tape import records
from .tape.file import Record
from .wire import http, jsonrpc

ARROW = {records.C2S: "→", records.S2C: "←"}


def timeline(name: str, items: Iterable[Record]) -> Iterator[str]:
    """Lines for a tape, read through the analysis model so sessions are named the way check names them."""
    yield f"{'time':>9}  {'':1}  {'session':<8}  {'ex':>4}  what"
    model = Model([_Timeline()])
    yield from model.feed_tape(name, items)


class _Timeline(Observer):
    def __init__(self) -> None:
        self.start: float | None = None

    def record(self, seen: Seen, model: Model) -> list[str]:
        record = seen.record
        t = record.get("t")
        if self.start is None and isinstance(t, (int, float)):
            self.start = t
        lines = describe(record)
        ex = seen.exchange
        if (record.get("kind") == records.HTTP_RESPONSE and ex is not None and isinstance(ex.msg, dict)
                and ex.msg.get("method") == "server/discover" and (ex.status or 0) >= 400):
            lines[-1] += "  (era probe refused: a 2026-07-28 client falls back to initialize)"
        for note, subject in seen.notes:
            if note == "transition":  # a step of a session's life (model.py): opened, refused, deleted, …
                changed, step = subject
                status = f" {step.status}" if step.status is not None and step.kind != OPENED else ""
                lines[-1] += f"  [session {_session_column(changed)[:8]} {step.kind}{status}" \
                             f"{' by an edit' if step.injected else ''}]"
        session = _session_column(seen.session)
        return [_line(t, self.start, record, session, record.get("exchange"), what) for what in lines]


def _session_column(session: Session | None) -> str:
    if session is None:
        return ""
    if session.transport == STDIO:
        return "stdio" + session.label[session.label.rfind("#"):]
    if session.transport == STATELESS:
        return "stateless"
    return session.label


def _line(t: object, start: float | None, record: Record, session: str, exchange: object, what: str) -> str:
    clock = f"{t - start:9.3f}" if isinstance(t, (int, float)) and start is not None else " " * 9
    arrow = ARROW.get(record.get("dir"), " ")
    ex = "" if exchange is None else str(exchange)
    return f"{clock}  {arrow}  {session[:8]:<8}  {ex:>4}  {what}"


def describe(record: Record) -> list[str]:
    kind = record.get("kind")
    problem = f"  ! {record['problem']}" if record.get("problem") else ""
    if kind == records.HTTP_REQUEST:
        head = f"{record.get('method')} {record.get('path')}"
        if record.get("protocol_version"):
            head += f" [{record['protocol_version']}]"
        if last := http.get(record.get("headers") or [], http.LAST_EVENT_ID):
            head += f" Last-Event-ID: {last}"
        return _with_messages(head, record, problem)
    if kind == records.HTTP_RESPONSE:
        content_type = http.media_type(http.get(record.get("headers") or [], "content-type"))
        if content_type != http.SSE and "msg" not in record and "raw" not in record:
            content_type = "(no body)"
        return _with_messages(f"{record.get('status')} {content_type}", record, problem)
    if kind == records.SSE_EVENT:
        parts = ["sse"]
        if "id" in record:
            parts.append(f"id={record['id']}")
        if record.get("event") not in (None, "message"):
            parts.append(f"event={record['event']}")
        if "retry" in record:
            parts.append(f"retry={record['retry']}")
        if "msg" not in record:
            if record.get("data") == "":
                parts.append("(priming)")
            elif "data" in record:
                parts.append(f"data={_short(record['data'])}")
            elif "raw" in record:
                parts.append(f"{len(record['raw'])} raw bytes")
            for comment in record.get("comments", []):
                parts.append(f": {_short(comment)}")
        return _with_messages(" ".join(parts), record, problem)
    if kind == records.END:
        detail = f" ({record['detail']})" if record.get("detail") else ""
        return [f"end {record.get('reason')}{detail}"]
    if kind == records.STDIO_LINE:
        return _with_messages("", record, problem)
    if kind == records.STDIO_STDERR:
        text = record["text"] if "text" in record else f"{len(record.get('raw', b''))} raw bytes"
        return [f"stderr: {_short(text, 100)}{problem}"]
    if kind == records.STDIO_EOF:
        return ["stdin closed (the client left)" if record.get("dir") == records.C2S else "stdout closed by the server"]
    if kind == records.STDIO_EXIT:
        if record.get("error"):
            return [f"server did not start: {record['error']}"]
        return [f"server killed by {record['signal']}" if record.get("signal") else f"server exited ({record.get('code')})"]
    if kind == records.CAPTURE_START:
        source = record.get("source") or {}
        if "stdio" in source:
            return [f"-- recording started: {' '.join(source['stdio'])}"]
        return [f"-- recording started ({', '.join(source.get('modes', [])) or source.get('proxy', '')})"]
    if kind == records.EDIT:
        return [f"edit {'; '.join(record.get('edits') or [])}: {record.get('detail')}"]
    if kind == records.CAPTURE_STOP:
        return [f"-- recording stopped ({record.get('reason')})"]
    return [f"{kind}{problem}"]


def _with_messages(head: str, record: Record, problem: str) -> list[str]:
    sep = "  " if head else ""
    if "msg" in record and (msgs := jsonrpc.messages(record["msg"])):
        lines = [f"{head}{sep}{jsonrpc.describe(msgs[0])}"] + [
            f"{' ' * len(head)}{sep}{jsonrpc.describe(m)}" for m in msgs[1:]]
    elif "msg" in record:
        lines = [f"{head}{sep}[] (an empty batch)"]
    elif "raw" in record and not head.startswith("sse"):
        lines = [f"{head}{sep}{len(record['raw'])} bytes"]
    else:
        lines = [head]
    lines[-1] += problem
    if record.get("injected"):
        lines[-1] += "  [injected]"
    return lines


def _short(text: str, width: int = 60) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"
