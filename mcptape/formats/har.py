"""A tape's HTTP exchanges as HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/), the archive browser
devtools and mitmproxy open. One entry per exchange, in the order the requests were sent.

An SSE response is kept twice: as the stream's text in `response.content.text` (what a HAR viewer shows), and
event by event under `_eventSourceMessages` (the extension some HAR writers use for EventSource), each with its
own time, id, type and data, in the order they passed; `_resourceType` and `_error` are Chrome's own. What HAR has
no field for (how the exchange ended, whether an edit changed it, the MCP session) goes under `_mcptape`; HAR
readers ignore fields that begin with `_`.
Bodies are the JSON the tape holds, written out again (a tape keeps parsed JSON, not its bytes); a body that was not
JSON is kept as it came, base64 where it is not UTF-8.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from urllib.parse import urlencode, urlsplit

from .. import __version__
from ..model import STDIO, Model, Observer, Passed, Seen
from ..model import Exchange as Grouped
from ..tape import records
from ..tape import json_form
from ..tape.json_form import dumps
from ..wire import http, sse


class NotHttp(ValueError):
    """The tape holds no HTTP to put into a HAR (a stdio tape)."""


def _seconds(record: dict, otherwise: float = 0.0) -> float:
    return json_form.seconds(record.get("t"), otherwise)


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ms(start: float, end: float | None) -> float:
    return round(max(0.0, ((end if end is not None else start) - start) * 1000), 3)


def _pairs(pairs: Iterable) -> list[dict]:
    return [{"name": str(name), "value": str(value)} for name, value in pairs or []]


def body_bytes(record: dict) -> bytes:
    """A record's body as bytes: its JSON written out again, or the raw bytes it was kept as."""
    if "msg" in record:
        return dumps(record["msg"]).encode()
    raw = record.get("raw")
    return raw if isinstance(raw, bytes) else b""


def _body(record: dict) -> tuple[str, str | None]:
    """A record's body as HAR text, and "base64" when it had to be encoded."""
    data = body_bytes(record)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return base64.b64encode(data).decode(), "base64"


def _origin(start: dict | None) -> tuple[str, str | None]:
    """The scheme and host the recording was made against (a reverse proxy's upstream), where the tape says."""
    for mode in ((start or {}).get("source") or {}).get("modes") or []:
        if isinstance(mode, str) and mode.startswith("reverse:"):
            split = urlsplit(mode[len("reverse:"):])
            return split.scheme or "http", split.netloc or None
    return "http", None


class Exchange:
    """One HTTP exchange of a tape, as the model grouped its records: its request, response head, SSE events (and
    the stream's bytes), and end."""

    def __init__(self, passed: Passed, origin: tuple[str, str | None]) -> None:
        self.request = passed.request
        self.response = passed.response
        self.events: list[dict] = []
        self.stream: list[bytes] = []
        self.end = passed.end
        self.last_t = _seconds(self.request)
        for record in passed.records[1:]:
            self.last_t = _seconds(record, self.last_t)
        for record in passed.events:
            _event(self, record)
        self.scheme, self.host = origin

    @property
    def authority(self) -> str:
        return http.get(self.request.get("headers") or [], "host") or self.host or "localhost"

    @property
    def target(self) -> str:
        """The request's path and query, as the client sent it."""
        query = self.request.get("query") or []
        return (self.request.get("path") or "/") + (f"?{urlencode([tuple(p) for p in query])}" if query else "")

    def to_har(self) -> dict:
        q = self.request
        headers = q.get("headers") or []
        query = q.get("query") or []
        url = f"{self.scheme}://{self.authority}{self.target}"
        started = _seconds(q)
        text, encoding = _body(q)
        request = {"method": q.get("method", ""), "url": url, "httpVersion": "HTTP/1.1", "cookies": [],
                   "headers": _pairs(headers), "queryString": _pairs(query), "headersSize": -1,
                   "bodySize": len(text.encode()) if text else 0}
        if text:
            request["postData"] = {"mimeType": http.get(headers, "content-type") or "application/json", "text": text}
            if encoding:
                request["postData"]["comment"] = "base64: the body was not UTF-8"
        r = self.response or {}
        response_headers = r.get("headers") or []
        mime = http.get(response_headers, "content-type") or ""
        if self.events or self.stream:
            text, encoding = b"".join(self.stream).decode("utf-8", "replace"), None
        else:
            text, encoding = _body(r)
        content = {"size": len(text.encode()), "mimeType": mime, "text": text}
        if encoding:
            content["encoding"] = encoding
        answered = _seconds(r) if self.response else None
        entry = {
            "startedDateTime": _when(started),
            "time": _ms(started, self.last_t),
            "request": request,
            "response": {"status": r.get("status", 0), "statusText": r.get("reason") or "",
                         "httpVersion": "HTTP/1.1", "cookies": [], "headers": _pairs(response_headers),
                         "content": content, "redirectURL": http.get(response_headers, "location") or "",
                         "headersSize": -1, "bodySize": content["size"] if self.response else -1},
            "cache": {},
            "_resourceType": "fetch",  # as Chrome's devtools label an MCP client's requests (fetch, even for SSE)
            "timings": {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0,
                        "wait": _ms(started, answered), "receive": _ms(answered or started, self.last_t)},
            "_mcptape": {"exchange": q.get("exchange"), "session": q.get("session") or r.get("session"),
                         "protocol_version": q.get("protocol_version"),
                         "end": (self.end or {}).get("reason", "not ended in the tape"),
                         "injected": any(x.get("injected") for x in (q, r, *self.events, self.end or {}))},
        }
        if self.response is None:
            entry["response"]["_error"] = (self.end or {}).get("detail") or entry["_mcptape"]["end"]
        if self.events:
            entry["_eventSourceMessages"] = self.events
        return entry


class _Exchanges(Observer):
    """The exchanges the model hands out as they end, each with the origin of the recording its request was part of
    (the capture.start before it)."""

    kinds = frozenset({records.CAPTURE_START, records.HTTP_REQUEST, records.STDIO_LINE, records.STDIO_STDERR,
                       records.STDIO_EXIT, records.STDIO_EOF})

    def __init__(self) -> None:
        self.start: dict | None = None
        self.origins: dict[int, tuple[str, str | None]] = {}  # id(model exchange) -> origin, while it is open
        self.done: list[Exchange] = []

    def record(self, seen: Seen, model: Model) -> None:
        if seen.session is not None and seen.session.transport == STDIO:
            raise NotHttp("a stdio tape has no HTTP exchanges")
        if seen.exchange is None:  # a capture.start: where the requests after it went
            self.start = seen.record
        else:
            self.origins[id(seen.exchange)] = _origin(self.start)

    def exchange(self, ex: Grouped, model: Model) -> None:
        self.done.append(Exchange(ex.passed, self.origins.pop(id(ex))))


def exchanges(items: Iterable[dict]) -> list[Exchange]:
    """A tape's HTTP exchanges, in request order. Raises NotHttp at the first stdio record."""
    watch = _Exchanges()
    for _ in Model([watch]).feed_tape("export", items):
        pass
    watch.done.sort(key=lambda e: (_seconds(e.request), e.request.get("exchange", 0)))
    return watch.done


def entries(items: Iterable[dict]) -> Iterator[dict]:
    """HAR entries for a tape's records, in request order. Raises NotHttp at the first stdio record."""
    for exchange in exchanges(items):
        yield exchange.to_har()


def _event(entry: Exchange, record: dict) -> None:
    if isinstance(record.get("raw"), bytes):  # bytes that could not be read as SSE, kept as they passed
        entry.stream.append(record["raw"])
        return
    event = records.wire_event(record)
    entry.stream.append(sse.encode(event))
    message = {"time": _seconds(record), "eventName": event.event or "message", "eventId": event.id or "",
               "data": event.data or ""}
    if event.retry is not None:
        message["_retry"] = event.retry
    if record.get("injected"):
        message["_injected"] = True
    entry.events.append(message)


def document(items: Iterable[dict]) -> dict:
    return {"log": {"version": "1.2", "creator": {"name": "mcptape", "version": __version__},
                    "pages": [], "entries": list(entries(items))}}
