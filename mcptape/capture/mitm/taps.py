"""The stream callables the recorder puts on mitmproxy's flows: an SSE response recorded chunk by chunk on its way
to the client (Tap), and a body too large for a tape's reader streamed through with only its first bytes, size and
SHA-256 kept (BodyTap)."""

from __future__ import annotations

import logging

from mitmproxy import http as mhttp
from mitmproxy.utils import human

from ..bounded import Bounded
from .flows import content_of
from ..http import SSEStream

logger = logging.getLogger("mcptape")


class Tap:
    """mitmproxy's stream callable: records each chunk on its way to the client, then lets it go on.

    With `keep` (mcptape_store_streamed_bodies), it also keeps what it sent on, up to that many bytes, and puts it
    on the flow as the response body when the stream ends, before the response hook: mitmweb, `-w` and any addon
    then see the SSE body. mitmproxy's own store_streamed_bodies does the same for every stream, with no cap."""

    def __init__(self, stream: SSEStream, flow: mhttp.HTTPFlow | None = None, keep: int | None = None) -> None:
        self.stream = stream
        self.flow, self.keep = flow, keep
        self.kept: bytearray | None = bytearray() if keep is not None else None

    def __call__(self, chunk: bytes) -> bytes | list[bytes]:
        try:
            self.stream.record(chunk)
        except Exception as e:
            logger.error(f"mcptape: recording an SSE chunk failed: {type(e).__name__}: {e}")
        out = self.stream.forward(chunk)
        if self.kept is not None:
            self._keep(out, end=not chunk)
        return out

    def _keep(self, out: bytes | list[bytes], end: bool) -> None:
        for part in [out] if isinstance(out, bytes) else out:
            self.kept += part
        if len(self.kept) > self.keep:
            self.kept = None
            self.flow.comment = f"mcptape: the SSE body passed {human.pretty_size(self.keep)} and was not kept"
        elif end:
            self.flow.response.raw_content = bytes(self.kept)


class BodyTap:
    """A body longer than a tape's reader takes whole streams through instead of being buffered: each chunk goes on
    at once, and only what the tape keeps of it (its first bytes, size and SHA-256: capture/bounded.py) stays."""

    def __init__(self, limit: int) -> None:
        self.kept = Bounded(limit)

    def __call__(self, chunk: bytes) -> bytes:
        self.kept.add(chunk)
        return chunk


def stream_if_large(message: mhttp.Message, limit: int) -> None:
    try:
        length = int(message.headers.get("content-length", ""))
    except ValueError:
        return
    if length > limit:
        message.stream = BodyTap(limit)


def body_of(message: mhttp.Message) -> tuple[Bounded | bytes, str | None]:
    return (message.stream.kept, None) if isinstance(message.stream, BodyTap) else content_of(message)
