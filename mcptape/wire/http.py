"""HTTP facts MCP cares about: its headers, media types, and incremental content decoding for streamed bodies."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from typing import Final
from urllib.parse import parse_qsl

# Final: compiled modules read these as the strings they are, not as attributes of this module (docs/compiled.md)
SESSION_ID: Final = "mcp-session-id"
PROTOCOL_VERSION: Final = "mcp-protocol-version"
LAST_EVENT_ID: Final = "last-event-id"
SSE: Final = "text/event-stream"
JSON: Final = "application/json"

Headers = list[tuple[str, str]]


def get(headers: Iterable[Sequence[str]], name: str) -> str | None:
    """First value of a header, by case-insensitive name."""
    name = name.lower()
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def legacy_session(query: Iterable[Sequence[str]]) -> str | None:
    """The session of a legacy (2024-11-05) HTTP+SSE POST, which that transport puts in the endpoint's query
    string: the Python SDK names it session_id, the TypeScript SDK sessionId; any parameter about a session will
    do. Recording and replay both decide it here."""
    for name, value in query:
        if "session" in name.lower():
            return value
    return None


def request_session(headers: Iterable[tuple[str, str]], target: str, legacy: bool) -> str | None:
    """The session a request carries: its Mcp-Session-Id, or, sent to a legacy message endpoint, the one in the
    endpoint's query."""
    session = get(headers, SESSION_ID)
    if session is None and legacy:
        session = legacy_session(query_pairs(target))
    return session


def query_pairs(target: str) -> list[tuple[str, str]]:
    """A request target's (or URL's) query string as (name, value) pairs, blanks kept."""
    return parse_qsl(target.partition("?")[2].partition("#")[0], keep_blank_values=True)


def media_type(content_type: str | None) -> str:
    """`text/event-stream; charset=utf-8` -> `text/event-stream`."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def accepts(headers: Iterable[tuple[str, str]], wanted: str) -> bool:
    accept = get(headers, "accept") or ""
    return any(media_type(part) == wanted for part in accept.split(","))


class Decoder:
    """Undo a Content-Encoding chunk by chunk, for bodies that are streamed rather than buffered."""

    def __init__(self, encoding: str | None) -> None:
        self.encoding = (encoding or "identity").strip().lower()
        self._impl = None
        if self.encoding in ("gzip", "x-gzip"):
            self._impl = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self.encoding == "deflate":
            self._impl = zlib.decompressobj()
        elif self.encoding == "br":
            import brotli

            self._impl = brotli.Decompressor()
        elif self.encoding == "zstd":
            import zstandard

            self._impl = zstandard.ZstdDecompressor().decompressobj()
        elif self.encoding != "identity":
            raise ValueError(f"unsupported content-encoding {self.encoding!r}")

    def decode(self, chunk: bytes) -> bytes:
        if self._impl is None or not chunk:
            return chunk
        if self.encoding == "br":
            return self._impl.process(chunk)
        return self._impl.decompress(chunk)
