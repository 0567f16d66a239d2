"""Server-Sent Events, parsed incrementally per the WHATWG rules (html.spec.whatwg.org, "Parsing an event stream").

Where WHATWG would silently skip something, this parser keeps it, because a recorder must show what was sent:
a block with only `id:` or `retry:` (no `data:`) is still an event here, comments are kept, and an unterminated
block at the end of the stream comes back marked `incomplete`.
"""

from __future__ import annotations

import codecs

import msgspec


class Event(msgspec.Struct):
    id: str | None = None
    event: str | None = None
    data: str | None = None  # None when the block had no data line; "" for a priming event's empty data
    retry: int | None = None
    comments: list[str] = []
    problems: list[str] = []
    incomplete: bool = False

    def _empty(self) -> bool:
        return (
            self.id is None and self.event is None and self.data is None and self.retry is None
            and not self.comments and not self.problems
        )


class Parser:
    """Feed bytes as they arrive; get back the events each chunk completed."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._buffer = ""
        self._started = False
        self._event = Event()
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[Event]:
        text = self._decoder.decode(chunk)
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        self._buffer += text
        return self._drain(final=False)

    def close(self) -> list[Event]:
        """End of stream: whatever was not terminated by a blank line comes back as one `incomplete` event."""
        self._buffer += self._decoder.decode(b"", final=True)
        events = self._drain(final=True)
        if self._buffer:
            self._line(self._buffer)
            self._buffer = ""
        if self._data or not self._event._empty():
            events.append(self._finish(incomplete=True))
        return events

    def _drain(self, final: bool) -> list[Event]:
        events: list[Event] = []
        buf = self._buffer
        start = 0
        while True:
            cr = buf.find("\r", start)
            lf = buf.find("\n", start)
            if cr == -1 and lf == -1:
                break
            if cr != -1 and (lf == -1 or cr < lf):
                if cr + 1 == len(buf) and not final:
                    break  # a CR at the end of a chunk may be the first half of CRLF
                end, nxt = cr, cr + 2 if buf.startswith("\n", cr + 1) else cr + 1
            else:
                end, nxt = lf, lf + 1
            line = buf[start:end]
            start = nxt
            if line:
                self._line(line)
            elif self._data or not self._event._empty():
                events.append(self._finish(incomplete=False))
        self._buffer = buf[start:]
        return events

    def _line(self, line: str) -> None:
        if line.startswith(":"):
            self._event.comments.append(line[1:].removeprefix(" "))
            return
        name, sep, value = line.partition(":")
        value = value.removeprefix(" ") if sep else ""
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event.event = value
        elif name == "id":
            if "\0" in value:
                self._event.problems.append("id with a NUL character ignored")
            else:
                self._event.id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self._event.retry = int(value)
            else:
                self._event.problems.append(f"retry value {value!r} is not a number")
        else:
            self._event.problems.append(f"unknown field {line!r}")

    def _finish(self, incomplete: bool) -> Event:
        event = self._event
        if self._data:
            event.data = "\n".join(self._data)
        event.incomplete = incomplete
        self._event = Event()
        self._data = []
        return event


def encode(event: Event) -> bytes:
    """Serialise an event back to the wire (LF line endings)."""
    lines = [f": {c}" if c else ":" for c in event.comments]
    if event.event is not None:
        lines.append(f"event: {event.event}")
    if event.id is not None:
        lines.append(f"id: {event.id}")
    if event.retry is not None:
        lines.append(f"retry: {event.retry}")
    if event.data is not None:
        lines.extend(f"data: {part}" for part in event.data.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()
