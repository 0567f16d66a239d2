"""What a record says, as the timeline's lines, each with the tone it is painted in (the report quotes them too)."""

from __future__ import annotations

from ..tape import records
from ..tape.records import Record
from ..wire import http, jsonrpc
from .paint import ERROR, INJECTED, WARNING

_SSE_ID = 12  # an SSE id longer than this is shortened in the timeline (resumable servers use long ones)
_INJECTED = "  [injected]"
_FAILED_ENDS = (records.UPSTREAM_RESET, records.UPSTREAM_UNREACHABLE, records.PROXY_ERROR)


def describe(record: Record) -> list[str]:
    """What a record says, as the timeline's lines (the report quotes them)."""
    return [what for what, _ in described(record)]


def append(described: list[tuple[str, str | None]], text: str) -> None:
    what, tone = described[-1]
    described[-1] = (what + text, tone)


def described(record: Record) -> list[tuple[str, str | None]]:
    """What a record says, as lines of the timeline, each with the tone it is painted in."""
    kind = records.kind_of(record)
    problem = f"  ! {record['problem']}" if record.get("problem") else ""
    if kind == records.HTTP_REQUEST:
        head = f"{record.get('method')} {record.get('path')}"
        if record.get("protocol_version"):
            head += f" [{record['protocol_version']}]"
        if last := http.get(record.get("headers") or [], http.LAST_EVENT_ID):
            head += f" Last-Event-ID: {_short(last, _SSE_ID)}"
        return _with_messages(head, record, problem)
    if kind == records.HTTP_RESPONSE:
        status = record.get("status")
        content_type = http.media_type(http.get(record.get("headers") or [], "content-type"))
        if content_type != http.SSE and "msg" not in record and "raw" not in record:
            content_type = "(no body)"
        head = f"{status} {content_type}"
        if "raw" in record and (status == 202 or not isinstance(status, int) or not 200 <= status < 300):
            # a body that need not be JSON-RPC (the legacy "Accepted", an error page): what it says, not a problem
            lines = [(f"{head}  {_short(_text(record['raw']))!r}{_INJECTED if record.get('injected') else ''}", None)]
        else:
            lines = _with_messages(head, record, problem)
        if isinstance(status, int) and status >= 400:
            lines = [(text, ERROR) for text, _ in lines]
        return lines
    if kind == records.SSE_EVENT:
        parts = ["sse"]
        if "id" in record:
            parts.append(f"id={_short(str(record['id']), _SSE_ID)}")
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
        reason = record.get("reason")
        return [(f"end {reason}{detail}", ERROR if reason in _FAILED_ENDS else
                 None if reason == records.COMPLETE else WARNING)]
    if kind == records.STDIO_LINE:
        return _with_messages("", record, problem)
    if kind == records.STDIO_STDERR:
        text = record["text"] if "text" in record else f"{len(record.get('raw', b''))} raw bytes"
        return [(f"stderr: {_short(text, 100)}{problem}", None)]
    if kind == records.STDIO_EOF:
        return [("stdin closed (the client left)" if record.get("dir") == records.C2S else
                 "stdout closed by the server", None)]
    if kind == records.STDIO_EXIT:
        if record.get("error"):
            return [(f"server did not start: {record['error']}", ERROR)]
        if record.get("signal"):
            return [(f"server killed by {record['signal']}", ERROR)]
        return [(f"server exited ({record.get('code')})", ERROR if record.get("code") else None)]
    if kind == records.CAPTURE_START:
        source = record.get("source") or {}
        if "stdio" in source:
            return [(f"-- recording started: {' '.join(source['stdio'])}", None)]
        if "imported" in source:
            return [(f"-- imported from {source['imported']} ({source.get('format')})", None)]
        if "replay" in source or "verify" in source:  # what a client did against a replay, what verify sent
            return [(f"-- replay of {source['replay']} started" if "replay" in source else
                     f"-- verify of {source['verify']} against {source.get('upstream')} started", None)]
        return [(f"-- recording started ({', '.join(source.get('modes', [])) or source.get('proxy', '')})", None)]
    if kind == records.EDIT:
        return [(f"edit {'; '.join(record.get('edits') or [])}: {record.get('detail')}", INJECTED)]
    if kind == records.CAPTURE_STOP:
        return [(f"-- recording stopped ({record.get('reason')})", None)]
    return [(f"{kind}{problem}", WARNING if problem else None)]


def _with_messages(head: str, record: Record, problem: str) -> list[tuple[str, str | None]]:
    sep = "  " if head else ""
    lines: list[tuple[str, str | None]]
    if "msg" in record and (msgs := jsonrpc.messages(record["msg"])):
        lines = [(f"{head if i == 0 else ' ' * len(head)}{sep}{jsonrpc.describe(m)}",
                  ERROR if jsonrpc.kind(m) == "error" else None) for i, m in enumerate(msgs)]
    elif "msg" in record:
        lines = [(f"{head}{sep}[] (an empty batch)", None)]
    elif "raw" in record and not head.startswith("sse"):
        lines = [(f"{head}{sep}{len(record['raw'])} bytes", None)]
    else:
        lines = [(head, None)]
    text, tone = lines[-1]
    if problem:
        text += problem
        tone = tone or (WARNING if problem.startswith("  !") else None)
    if record.get("injected"):
        text += _INJECTED
    lines[-1] = (text, tone)
    return lines


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").strip()


def _short(text: str, width: int = 60) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"
