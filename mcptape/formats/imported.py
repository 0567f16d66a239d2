"""Captures made without mcptape (a mitmproxy flow file, a HAR saved from browser devtools) turned into records by
the same capture core the recorder uses (HttpCapture): each exchange is fed to it as the proxy would have fed it,
request, response head, body, end, with the times the capture holds. So an imported tape is decided, redacted and
numbered exactly as a recorded one, MCP or not.

What such a capture lacks is said in the tape (the capture.start record's `source`) and returned to the caller:
- a flow file has no per-event times: mitmproxy buffers a body (or streams it without keeping it), so every event
  of an SSE body gets the time its response ended;
- a body mitmproxy streamed is not in the file (`mitmdump --set stream_large_bodies`, or an addon that streams);
- a plain `mitmdump -w` buffers an SSE response until its stream ends: a GET stream cut when the client left has no
  body at all, and its events are missing;
- a HAR keeps per-event times only where its writer kept `_eventSourceMessages` (Chrome and mcptape do).
"""

from __future__ import annotations

import base64
import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

from mitmproxy import http as mhttp

from .. import TOOL
from ..redact.redactor import Redactor
from ..tape import records
from ..wire import http, sse
from ..capture.mitm.flows import content_of, end_reason, headers_of
from ..capture.http import HttpCapture, RecordSink, Scope

NO_EVENT_TIMES = "no per-event times: each SSE event has the time its response ended"


class Records(list):
    """A sink that keeps the records in memory (a capture is read whole before the tape is written)."""

    write = list.append


@dataclass
class Imported:
    exchanges: int = 0
    missing: list[str] = field(default_factory=list)  # what the capture lacks, one line each
    event_times: bool = True  # every SSE event has its own time


class _Clock:
    """The capture stamps SSE events and ends by its clock: here the time the source gives for each."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _capture(sink: RecordSink, redactor: Redactor, clock: _Clock) -> HttpCapture:
    # everything kept, non-MCP exchanges as request line, status and headers: what `record` keeps in reverse mode
    return HttpCapture(sink, redactor, Scope(), clock)


def _start(capture: HttpCapture, t: float, source: str, fmt: str, result: Imported) -> None:
    capture.start(t, TOOL, {"imported": source, "format": fmt, "event_times": result.event_times,
                            "missing": result.missing})


# -- mitmproxy flow files --------------------------------------------------------------------------------------------

def _flow_gaps(flows: list[mhttp.HTTPFlow], result: Imported) -> None:
    for n, flow in enumerate(flows):
        response = flow.response
        if response is None or http.media_type(response.headers.get("content-type")) != http.SSE:
            continue
        result.event_times = False
        if response.raw_content is None:
            why = (f"cut ({flow.error.msg})" if flow.error else "streamed and not kept")
            result.missing.append(f"flow {n} ({flow.request.method} {flow.request.path}): its SSE body was {why}; "
                                  f"its events are missing")
    if not result.event_times:
        result.missing.insert(0, NO_EVENT_TIMES)


def from_flows(flows: Iterable, sink: RecordSink, source: str, redactor: Redactor | None = None) -> Imported:
    """Records for the HTTP flows of a mitmproxy flow file (other flows, TCP or DNS, are not MCP and are skipped)."""
    http_flows = sorted((f for f in flows if isinstance(f, mhttp.HTTPFlow)), key=lambda f: f.request.timestamp_start)
    result = Imported()
    _flow_gaps(http_flows, result)
    clock = _Clock()
    capture = _capture(sink, redactor or Redactor(), clock)
    first = min((f.request.timestamp_start for f in http_flows), default=0.0)
    _start(capture, first, source, "mitmproxy flow file", result)
    _in_time_order([_flow(capture, clock, flow) for flow in http_flows])
    result.exchanges = capture.recorded
    capture.stop(max((_flow_end(f) for f in http_flows), default=first), "imported")
    return result


def _in_time_order(exchanges: list[Iterator[float]]) -> None:
    """Run the exchanges' steps interleaved by time, as a proxy would have seen them: each exchange is a generator
    that yields when its next step happened and takes that step when resumed. Ties go in request order."""
    heap = [(t, n, steps) for n, steps in enumerate(exchanges) if (t := next(steps, None)) is not None]
    heapq.heapify(heap)
    while heap:
        t, n, steps = heapq.heappop(heap)
        if (following := next(steps, None)) is not None:
            heapq.heappush(heap, (max(t, following), n, steps))


def _flow_end(flow: mhttp.HTTPFlow) -> float:
    times = [flow.request.timestamp_end or flow.request.timestamp_start]
    if flow.response is not None:
        times.append(flow.response.timestamp_end or flow.response.timestamp_start)
    if flow.error is not None:
        times.append(flow.error.timestamp)
    return max(times)


def _flow(capture: HttpCapture, clock: _Clock, flow: mhttp.HTTPFlow) -> Iterator[float]:
    """One flow's steps: the request, the response head, then its body (every SSE event at once) and end."""
    q, r = flow.request, flow.response
    yield q.timestamp_start
    body, problem = content_of(q)
    if not capture.request(flow.id, flow.client_conn.id, q.timestamp_start, q.method, q.path,
                           headers_of(q.headers), body, problem):
        return
    stream = None
    if r is not None:
        yield r.timestamp_start
        headers = headers_of(r.headers)
        stream = capture.response_head(flow.id, r.timestamp_start, r.status_code, r.reason, headers)
    yield _flow_end(flow)
    clock.now = _flow_end(flow)
    if r is not None:
        if stream is not None:
            stream.record(r.raw_content or b"")  # as it was on the wire: the stream undoes its encoding
            body, problem = b"", None
        else:
            body, problem = content_of(r)
        if flow.error is None or stream is None:  # an answer that came whole counts, whatever failed later
            capture.response(flow.id, r.timestamp_start, r.status_code, r.reason, headers, body, problem)
            return
    if flow.error is not None:
        capture.failed(flow.id, flow.error.timestamp, end_reason(flow), flow.error.msg)
    else:
        capture.failed(flow.id, clock.now, records.PROXY_ERROR, "the capture holds no response")


# -- HAR -------------------------------------------------------------------------------------------------------------

class HarError(ValueError):
    """A HAR this reader cannot take; the message is one line for a person."""


def _epoch(text: object) -> float:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise HarError(f"startedDateTime {text!r} is not an ISO 8601 time") from None


def _pairs(items: object) -> list[tuple[str, str]]:
    return [(str(p.get("name", "")), str(p.get("value", ""))) for p in items or [] if isinstance(p, dict)]


def _text(content: dict) -> bytes:
    text = content.get("text")
    if not isinstance(text, str):
        return b""
    if content.get("encoding") == "base64":
        try:
            return base64.b64decode(text)
        except ValueError:
            return text.encode()
    return text.encode()


def _ms(timings: dict, *names: str) -> float:
    return sum(max(0.0, float(timings.get(n) or 0)) for n in names if isinstance(timings.get(n), (int, float))) / 1000


def from_har(doc: object, sink: RecordSink, source: str, redactor: Redactor | None = None) -> Imported:
    """Records for a HAR's entries. SSE events come from `_eventSourceMessages` (with their own times) where the
    writer kept them, else from the response text, each at the time the entry ended."""
    entries = doc.get("log", {}).get("entries") if isinstance(doc, dict) and isinstance(doc.get("log"), dict) else None
    if not isinstance(entries, list):
        raise HarError("not a HAR: no log.entries")
    entries = [e for e in entries if isinstance(e, dict) and isinstance(e.get("request"), dict)]
    result = Imported()
    starts = [_epoch(e.get("startedDateTime")) for e in entries]
    for n, entry in enumerate(entries):
        response = entry.get("response") if isinstance(entry.get("response"), dict) else {}
        if http.media_type(http.get(_pairs(response.get("headers")), "content-type")
                           or (response.get("content") or {}).get("mimeType")) == http.SSE:
            if not isinstance(entry.get("_eventSourceMessages"), list):
                if (response.get("content") or {}).get("text"):
                    result.event_times = False
                else:
                    result.missing.append(f"entry {n} ({entry['request'].get('method')} "
                                          f"{entry['request'].get('url')}): no SSE events in the HAR (none were "
                                          f"sent, or its writer did not keep them)")
    if not result.event_times:
        result.missing.insert(0, "no per-event times for SSE bodies without _eventSourceMessages: "
                                 "their events have the time their entry ended")
    clock = _Clock()
    capture = _capture(sink, redactor or Redactor(), clock)
    _start(capture, min(starts, default=0.0), source, "HAR", result)
    order = sorted(range(len(entries)), key=lambda i: starts[i])
    _in_time_order([_entry(capture, clock, n, entries[n], starts[n]) for n in order])
    result.exchanges = capture.recorded
    capture.stop(max((s + _duration(e) for s, e in zip(starts, entries)), default=0.0), "imported")
    return result


def _duration(entry: dict) -> float:
    time = entry.get("time")
    return max(0.0, float(time) / 1000) if isinstance(time, (int, float)) and not isinstance(time, bool) else 0.0


def _entry(capture: HttpCapture, clock: _Clock, key: int, entry: dict, started: float) -> Iterator[float]:
    """One entry's steps: the request, the response head, each SSE event at its own time where the HAR kept it,
    then the body and end."""
    q = entry["request"]
    url = str(q.get("url", ""))
    try:
        split = urlsplit(url)
    except ValueError as e:  # an IPv6 host without its closing bracket, say
        raise HarError(f"entry {key}: url {url[:60]!r} is not a URL ({e})") from None
    target = (split.path or "/") + (f"?{split.query}" if split.query else "")
    body = _text(q.get("postData")) if isinstance(q.get("postData"), dict) else b""
    ended = started + _duration(entry)
    yield started
    if not capture.request(key, entry.get("connection", 0), started, str(q.get("method", "")), target,
                           _pairs(q.get("headers")), body):
        return
    r = entry.get("response") if isinstance(entry.get("response"), dict) else {}
    status = r.get("status")
    if not isinstance(status, int) or status <= 0:  # devtools write 0 for a request that got no answer
        yield ended
        capture.failed(key, ended, records.PROXY_ERROR, str(r.get("_error") or "the HAR holds no response"))
        return
    timings = entry.get("timings") if isinstance(entry.get("timings"), dict) else {}
    answered = started + _ms(timings, "blocked", "dns", "connect", "send", "wait")
    # a HAR holds bodies decoded: the headers must not send them through a decoder again
    headers = [(k, v) for k, v in _pairs(r.get("headers")) if k.lower() != "content-encoding"]
    content = r.get("content") if isinstance(r.get("content"), dict) else {}
    if not http.get(headers, "content-type") and content.get("mimeType"):
        headers.append(("content-type", str(content["mimeType"])))
    yield answered
    stream = capture.response_head(key, answered, status, str(r.get("statusText") or ""), headers)
    messages = entry.get("_eventSourceMessages")
    last = answered
    if stream is not None and isinstance(messages, list):
        for m in messages:
            if not isinstance(m, dict):
                continue
            if isinstance(m.get("time"), (int, float)):
                last = float(m["time"])
            yield last
            clock.now = last  # set once resumed: other exchanges' steps ran in between
            retry = m.get("_retry")
            stream.record(sse.encode(sse.Event(id=m.get("eventId") or None, event=m.get("eventName") or None,
                                               data=str(m.get("data", "")),
                                               retry=retry if isinstance(retry, int) else None)))
    ended = max(ended, last)  # a HAR's times are rounded to the millisecond: never end before an event
    yield ended
    clock.now = ended
    if stream is not None and not isinstance(messages, list):
        stream.record(_text(content))
    error = r.get("_error")
    ours = (entry.get("_mcptape") or {}).get("end") if isinstance(entry.get("_mcptape"), dict) else None
    if stream is not None and (error or ours in records.END_REASONS and ours != records.COMPLETE):
        # how a stream ended: mcptape's own HAR says it; another writer's `_error` says it failed
        capture.failed(key, ended, ours if ours in records.END_REASONS else records.PROXY_ERROR, error or None)
    else:
        capture.response(key, answered, status, str(r.get("statusText") or ""), headers,
                         b"" if stream is not None else _text(content))
