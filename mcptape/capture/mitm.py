"""The mitmproxy addon that records MCP traffic: it adapts flows to capture.http.HttpCapture and nothing more.

Loaded by `mcptape record` in-process, or by mitmdump: `mitmdump -s "$(mcptape addons record)" --set
mcptape_tape=run.mcptape`. SSE responses are streamed through (never buffered), each chunk handed to the capture
before it goes on to the client.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Optional

from mitmproxy import ctx, exceptions
from mitmproxy import http as mhttp
from mitmproxy.proxy import mode_specs

from .. import TOOL
from ..redact import Redactor
from ..tape import records
from ..tape.file import TapeError, Writer
from ..wire import http
from .http import HttpCapture, Relocation, Scope, SSEStream

logger = logging.getLogger("mcptape")


def _guarded(hook: Callable) -> Callable:
    """A recorder fault must never break the traffic it watches: log it and let the flow go on."""

    @functools.wraps(hook)
    def wrapper(self: Recorder, *args: object) -> None:
        if self.capture is None:
            return
        try:
            hook(self, *args)
        except Exception as e:
            logger.error(f"mcptape: recording failed in {hook.__name__}: {type(e).__name__}: {e}")

    return wrapper


def _headers(headers: mhttp.Headers) -> list[tuple[str, str]]:
    return [(_text(k), _text(v)) for k, v in headers.fields]


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _content(message: mhttp.Message) -> tuple[bytes, str | None]:
    """The body with its Content-Encoding undone, or the raw bytes and why they could not be decoded."""
    try:
        return message.get_content(strict=True) or b"", None
    except ValueError as e:
        encoding = message.headers.get("content-encoding", "")
        return message.raw_content or b"", f"content-encoding {encoding} could not be decoded: {e}"


class _Tap:
    """mitmproxy's stream callable: records each chunk on its way to the client, then lets it go on."""

    def __init__(self, stream: SSEStream) -> None:
        self.stream = stream

    def __call__(self, chunk: bytes) -> bytes | list[bytes]:
        try:
            self.stream.record(chunk)
        except Exception as e:
            logger.error(f"mcptape: recording an SSE chunk failed: {type(e).__name__}: {e}")
        return self.stream.forward(chunk)


class Recorder:
    def __init__(self) -> None:
        self.capture: HttpCapture | None = None
        self.writer: Writer | None = None
        self.stopping = False
        self.exchanges = 0  # recorded by the last capture, for the closing summary

    def load(self, loader) -> None:
        loader.add_option("mcptape_tape", Optional[str], None, "Record MCP traffic into this tape (.mcptape).")
        loader.add_option("mcptape_append", bool, False, "Add to an existing tape instead of refusing it.")
        loader.add_option("mcptape_force", bool, False, "Replace an existing tape.")
        loader.add_option(
            "mcptape_endpoint", Sequence[str], [],
            "Path of the MCP endpoint (repeatable). Default: any request that looks like MCP is recorded.",
        )
        loader.add_option("mcptape_redact_header", Sequence[str], [], "Also redact this header (repeatable).")
        loader.add_option("mcptape_no_redact", bool, False, "Record credentials as they are (unsafe).")
        loader.add_option("mcptape_record_all", bool, False, "Record bodies of non-MCP exchanges too.")

    def configure(self, updated: set[str]) -> None:
        if not any(name.startswith("mcptape_") for name in updated):
            return
        self._close("reconfigured")
        path = ctx.options.mcptape_tape
        if not path:
            return
        if ctx.options.mcptape_no_redact:
            logger.warning("mcptape: redaction is off; credentials will be written into the tape as they are")
        reverse = all(mode_specs.ProxyMode.parse(m).type_name == "reverse" for m in ctx.options.mode)
        scope = Scope(set(ctx.options.mcptape_endpoint), mcp_only=not reverse,
                      record_all=ctx.options.mcptape_record_all)
        mode = "append" if ctx.options.mcptape_append else "force" if ctx.options.mcptape_force else "new"
        now = time.time()
        try:
            self.writer = Writer(path, records.header(now, TOOL), mode)
        except TapeError as e:
            raise exceptions.OptionsError(str(e)) from None
        if self.writer.repaired:
            logger.warning(f"mcptape: {path} ended in a {self.writer.repaired}; cut it off before appending")
        redactor = Redactor(ctx.options.mcptape_redact_header, enabled=not ctx.options.mcptape_no_redact)
        self.capture = HttpCapture(self.writer, redactor, scope)
        first = _next_exchange(self.writer)
        self.capture.start(now, TOOL, {"proxy": "mitmproxy", "modes": list(ctx.options.mode),
                                       "endpoints": sorted(scope.endpoints)}, first)

    @_guarded
    def request(self, flow: mhttp.HTTPFlow) -> None:
        body, problem = _content(flow.request)
        self.capture.request(
            flow.id, flow.client_conn.id, flow.request.timestamp_start, flow.request.method,
            flow.request.path, _headers(flow.request.headers), body, problem,
        )

    def responseheaders(self, flow: mhttp.HTTPFlow) -> None:
        if http.media_type(flow.response.headers.get("content-type")) != http.SSE:
            return
        flow.response.stream = True  # never buffer an event stream, recorded or not
        if self.capture is None:
            return
        try:
            stream = self.capture.response_head(
                flow.id, flow.response.timestamp_start, flow.response.status_code, flow.response.reason,
                _headers(flow.response.headers), _relocation(flow),
            )
        except Exception as e:
            logger.error(f"mcptape: recording a response head failed: {type(e).__name__}: {e}")
            return
        if stream is not None:
            flow.response.stream = _Tap(stream)

    @_guarded
    def response(self, flow: mhttp.HTTPFlow) -> None:
        body, problem = (b"", None) if flow.response.stream else _content(flow.response)
        self.capture.response(
            flow.id, flow.response.timestamp_start, flow.response.status_code, flow.response.reason,
            _headers(flow.response.headers), body, problem,
        )

    @_guarded
    def error(self, flow: mhttp.HTTPFlow) -> None:
        self.capture.failed(flow.id, time.time(), self._reason(flow), flow.error.msg if flow.error else None)

    def _reason(self, flow: mhttp.HTTPFlow) -> str:
        message = (flow.error.msg if flow.error else "").lower()
        if self.stopping:
            return records.PROXY_STOPPED
        if "client disconnected" in message:
            return records.CLIENT_DISCONNECTED
        upstream = flow.server_conn
        if upstream.timestamp_tcp_setup is None or (upstream.tls and upstream.timestamp_tls_setup is None):
            return records.UPSTREAM_UNREACHABLE  # never connected, or the TLS handshake failed
        if flow.server_conn.timestamp_end is not None or "server" in message or "peer" in message:
            return records.UPSTREAM_RESET
        return records.PROXY_ERROR

    def done(self) -> None:
        self._close("stopped")

    def _close(self, reason: str) -> None:
        if self.capture is not None:
            try:
                self.exchanges = self.capture.recorded
                self.capture.stop(time.time(), reason)
            except Exception as e:
                logger.error(f"mcptape: closing the tape failed: {e}")
            self.capture = None
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _relocation(flow: mhttp.HTTPFlow) -> Relocation | None:
    """In reverse mode the client talks to us, so an endpoint URL naming the upstream must name us instead."""
    if not isinstance(flow.client_conn.proxy_mode, mode_specs.ReverseMode):
        return None
    host, port = flow.client_conn.sockname[:2]
    host = f"[{host}]" if ":" in host else host
    scheme = "https" if flow.client_conn.tls else "http"
    return Relocation((flow.request.scheme, flow.request.host, flow.request.port), f"{scheme}://{host}:{port}")


def _next_exchange(writer: Writer) -> int:
    """Exchange numbers go on where an appended-to tape left off, so two runs never share one."""
    if writer.existing is None:
        return 0
    numbers = [r["exchange"] for r in writer.existing.records if isinstance(r.get("exchange"), int)]
    return max(numbers, default=-1) + 1
