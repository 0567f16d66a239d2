"""The mitmproxy addon that records MCP traffic and applies live edits: it adapts flows to
capture.http.HttpCapture (recording) and edits.Editor (the decisions), and nothing more.

Loaded by `mcptape record` in-process, or by mitmdump: `mitmdump -s "$(mcptape addons record)" --set
mcptape_tape=run.mcptape [--set mcptape_edit=EDIT]`. SSE responses are streamed through (never buffered), each
chunk handed to the capture before it goes on to the client. Recording and editing live in one addon because
their order matters on every hook: a request is recorded before an edit answers it, a withheld response is held
before its end is recorded, and an edited stream is recorded as the client gets it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Optional

from mitmproxy import ctx, exceptions
from mitmproxy import http as mhttp
from mitmproxy.net.http import url
from mitmproxy.proxy import mode_specs
from mitmproxy.utils import human

from ... import TOOL, edits
from ...guard import Guard, HostList, parse_origin
from ...redact.redactor import Redactor
from ...tape import records
from ...tape.file import TapeError, Writer
from ...wire import http, jsonrpc
from . import mcp_view
from .flows import content_of, end_reason, headers_of, mitm_headers, relocation, request_id
from ..http import Clock, HttpCapture, Scope
from .sink import Discard, TapeSink
from .taps import BodyTap, Tap, body_of, stream_if_large

PLAN = "mcptape.plan"  # flow.metadata key: the edits that fired on this flow
REFUSED = "mcptape.refused"  # flow.metadata key: answered by the Host/Origin or destination checks
UNREACHABLE = "mcptape.unreachable"  # flow.metadata key: why the upstream could not be reached, if it could not
UPSTREAM_TIMEOUT = 10.0  # seconds a connect to the upstream may take

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


class Recorder:
    def __init__(self, clock: Clock = time.time, watch: Callable[[records.Record], None] | None = None,
                 editor: edits.Editor | None = None, redactor: Redactor | None = None) -> None:
        # in process (`mcptape record`), the parsed edits and redaction come in here, as mitmproxy's own addons
        # take objects (Dumper(outfile=…)); the mcptape_edit and redaction options are for `mitmdump -s`
        self._given = (editor, redactor)
        # what the recorder stamps itself (requests and responses carry mitmproxy's own timestamps); injected so a
        # test can run the addon in memory and know every record's t
        self.clock = clock
        self.watch = watch
        self.capture: HttpCapture | None = None
        self.writer: Writer | None = None
        self.editor: edits.Editor | None = None
        self.keep: int | None = None  # mcptape_store_streamed_bodies, in bytes
        self._channels: dict[str, edits.ChannelEditor] = {}  # legacy session -> the edits on its SSE channel
        self.stopping = False
        self.exchanges = 0  # on disk from the last capture, for the closing summary
        self._sink: TapeSink | None = None
        self.failure: str | None = None  # why the last capture stopped writing early, if it did
        self.guard: Guard | None = None  # reverse mode: who may come in (Host, Origin); guard.py
        self.destinations: HostList | None = None  # regular mode: where requests may go (None: anywhere)
        self._host_header = False  # reverse mode: we, not mitmproxy, present the upstream's Host (after the guard)
        self.refused = 0  # requests the guard answered (said on stderr once)
        self.upstream_down = False  # said so on stderr, until the upstream answers again
        self._lazy = False  # mitmproxy connects upstream only once a request is read
        self._upstream: set[str] = set()  # client connections with a connection open upstream

    def load(self, loader) -> None:
        mcp_view.register()  # bodies in mitmweb read as MCP wherever the recorder runs
        loader.add_option("mcptape_tape", Optional[str], None, "Record MCP traffic into this tape (.mcptape).")
        loader.add_option("mcptape_append", bool, False, "Add to an existing tape instead of refusing it.")
        loader.add_option("mcptape_force", bool, False, "Replace an existing tape.")
        loader.add_option(
            "mcptape_endpoint", Sequence[str], [],
            "Path of the MCP endpoint (repeatable). Default: any request that looks like MCP is recorded.",
        )
        loader.add_option("mcptape_redact_header", Sequence[str], [], "Also redact this header (repeatable).")
        loader.add_option("mcptape_no_redact", bool, False, "Record credentials as they are (unsafe).")
        loader.add_option("mcptape_redact_path", Sequence[str], [],
                          "Also redact this part of every message (JSON pointer, e.g. /params/arguments/query).")
        loader.add_option("mcptape_keep_path", Sequence[str], [],
                          "Never redact this part of every message (JSON pointer, e.g. /result/content/0/text).")
        loader.add_option("mcptape_record_all", bool, False, "Record bodies of non-MCP exchanges too.")
        loader.add_option("mcptape_store_streamed_bodies", Optional[str], None,
                          "Keep each recorded SSE body on its flow when its stream ends, up to this size (e.g. 1m), "
                          "so mitmweb and -w files show it. Off by default: mitmproxy keeps no streamed body.")
        loader.add_option("mcptape_allow_host", Sequence[str], [],
                          "Reverse mode: also accept requests with this Host (NAME or NAME:PORT; loopback names and "
                          "the listen address always are; repeatable).")
        loader.add_option("mcptape_allow_origin", Sequence[str], [],
                          "Reverse mode: also accept requests from this Origin (loopback origins always are; "
                          "repeatable).")
        loader.add_option("mcptape_allow_dest", Sequence[str], [],
                          "Regular mode: forward only to this HOST or HOST:PORT (repeatable). Default: anywhere.")
        loader.add_option("mcptape_edit", Sequence[str], [],
                          "Inject a fault into live traffic, e.g. 'expire-session at=tools/call#2' (repeatable).")

    def configure(self, updated: set[str]) -> None:
        if not any(name.startswith("mcptape_") for name in updated):
            return
        self._close("reconfigured")
        self._sink = None
        try:
            parsed = [edits.parse(e) for e in ctx.options.mcptape_edit]
            edits.check_transport(parsed, live=True)
        except edits.EditError as e:
            raise exceptions.OptionsError(str(e)) from None
        self.editor = self._given[0] or (edits.Editor(parsed) if parsed else None)
        self._configure_modes()
        try:
            self.keep = human.parse_size(ctx.options.mcptape_store_streamed_bodies)
        except ValueError as e:
            raise exceptions.OptionsError(f"mcptape_store_streamed_bodies: {e}") from None
        path = ctx.options.mcptape_tape
        if not path:
            if self.editor is not None:
                self.capture = HttpCapture(Discard(), Redactor(), Scope(), self.clock)
            return
        if ctx.options.mcptape_no_redact:
            logger.warning("mcptape: redaction is off; credentials will be written into the tape as they are")
        reverse = all(mode_specs.ProxyMode.parse(m).type_name == "reverse" for m in ctx.options.mode)
        scope = Scope(set(ctx.options.mcptape_endpoint), mcp_only=not reverse,
                      record_all=ctx.options.mcptape_record_all)
        mode = "append" if ctx.options.mcptape_append else "force" if ctx.options.mcptape_force else "new"
        now = self.clock()
        try:
            redactor = self._given[1] or Redactor(ctx.options.mcptape_redact_header, not ctx.options.mcptape_no_redact,
                                                  ctx.options.mcptape_keep_path, ctx.options.mcptape_redact_path)
            self.writer = Writer(path, records.header(now, TOOL, redactor.describe()), mode)
        except (TapeError, ValueError) as e:
            raise exceptions.OptionsError(str(e)) from None
        if self.writer.repaired:
            logger.warning(f"mcptape: {path} ended in a {self.writer.repaired}; cut it off before appending")
        self._sink = TapeSink(self.writer, self.watch)
        self.capture = HttpCapture(self._sink, redactor, scope, self.clock)
        first = records.next_exchange(self.writer.existing.records) if self.writer.existing else 0
        self.capture.start(now, TOOL, {"proxy": "mitmproxy", "modes": list(ctx.options.mode),
                                       "endpoints": sorted(scope.endpoints)}, first)

    def _configure_modes(self) -> None:
        """What each proxy mode lets in and out. In reverse mode the client talks to us as to a server, so we check
        Host and Origin as a server must (a regular proxy's Host names the destination); mitmproxy would rewrite
        Host to the upstream's before any hook sees it, so we keep the client's Host, check it, and rewrite it
        ourselves. In regular mode, --allow-dest limits where requests go."""
        reverse = any(mode_specs.ProxyMode.parse(m).type_name == "reverse" for m in ctx.options.mode)
        self.destinations = HostList(ctx.options.mcptape_allow_dest) if ctx.options.mcptape_allow_dest else None
        self._lazy = getattr(ctx.options, "connection_strategy", None) == "lazy"
        # (an addon test's options may hold only ours: then mitmproxy rewrites nothing either)
        self.guard = Guard(getattr(ctx.options, "listen_host", None), ctx.options.mcptape_allow_host,
                           ctx.options.mcptape_allow_origin) if reverse else None
        if reverse and getattr(ctx.options, "keep_host_header", True) is False:
            self._host_header = True
            ctx.options.keep_host_header = True

    def http_connect(self, flow: mhttp.HTTPFlow) -> None:
        self._refused_destination(flow)

    def _refused_destination(self, flow: mhttp.HTTPFlow) -> bool:
        """Regular mode with --allow-dest: a request (or a CONNECT) for anywhere else gets 403 here."""
        if self.destinations is None or not isinstance(flow.client_conn.proxy_mode, mode_specs.RegularMode):
            return False
        if (flow.request.host, flow.request.port) in self.destinations:
            return False
        where = human.format_address((flow.request.host, flow.request.port))
        text = f"mcptape: {where} is not an allowed destination (--allow-dest)"
        body = {"jsonrpc": "2.0", "error": {"code": -32000, "message": f"Forbidden: {text}"}}
        flow.response = mhttp.Response.make(403, json.dumps(body), {"content-type": http.JSON})
        return True

    def _refused(self, flow: mhttp.HTTPFlow) -> bool:
        if self._refused_destination(flow):
            return True
        mode = flow.client_conn.proxy_mode
        if self.guard is None or not isinstance(mode, mode_specs.ReverseMode):
            return False
        if refusal := self.guard.check(headers_of(flow.request.headers)):
            flow.response = mhttp.Response.make(refusal.status, refusal.body, mitm_headers(refusal.headers))
            if not self.refused:  # a page probing us can send many: say it once
                logger.warning(f"{refusal.reason}; refused (421/403), not forwarded nor recorded")
            self.refused += 1
            return True
        origin = flow.request.headers.get("origin")
        written, name = parse_origin(origin) if origin else ("", None)
        if name is not None and written != origin:
            # the Origin we let in, as a browser writes it: an SDK server behind us compares it as a string, and
            # would refuse `HTTP://LOCALHOST:3000` that we judged loopback
            flow.request.headers["origin"] = written
        if self._host_header:  # as mitmproxy would have
            scheme = "https" if mode.scheme in ("https", "http3", "tls", "quic") else "http"
            flow.request.host_header = url.hostport(scheme, *mode.address)
        return False

    def requestheaders(self, flow: mhttp.HTTPFlow) -> None:
        if self._refused(flow):  # before a large body could stream upstream
            flow.metadata[REFUSED] = True
            return
        if self.capture is not None:
            stream_if_large(flow.request, self.capture.limit)

    async def request(self, flow: mhttp.HTTPFlow) -> None:
        if REFUSED in flow.metadata:
            return
        self._record_request(flow)
        if self.editor is not None:
            try:
                delay = self._edit_request(flow)
            except Exception as e:
                logger.error(f"mcptape: applying an edit failed: {type(e).__name__}: {e}")
                delay = 0.0
            if delay:
                await asyncio.sleep(delay)  # the server gets the request late, so its answer comes late
        if flow.response is None and flow.live and (cause := await self._unreachable(flow)):
            self._answer_unreachable(flow, cause)

    def server_connected(self, data) -> None:
        self._upstream.add(data.client.id)

    def server_disconnected(self, data) -> None:
        self._upstream.discard(data.client.id)

    def client_disconnected(self, client) -> None:
        self._upstream.discard(client.id)

    async def _unreachable(self, flow: mhttp.HTTPFlow) -> str | None:
        """Reverse mode, before the first request of a client connection goes upstream: why the upstream cannot be
        reached, else None. mitmproxy would answer an HTML 502 the client cannot read and say nothing; a TCP
        connect (closed at once) finds out first, so the client gets a JSON-RPC error that names the cause. A
        connection already open upstream is not tried again."""
        mode = flow.client_conn.proxy_mode
        if not self._lazy or not isinstance(mode, mode_specs.ReverseMode) or flow.client_conn.id in self._upstream:
            return None  # (eager: mitmproxy connected when the client did)
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(*mode.address), UPSTREAM_TIMEOUT)
        except TimeoutError:
            return f"no answer in {UPSTREAM_TIMEOUT:g} s"
        except OSError as e:
            return os.strerror(e.errno) if e.errno else str(e)  # "Connection refused", not asyncio's wording
        writer.close()
        return None

    def _answer_unreachable(self, flow: mhttp.HTTPFlow, cause: str) -> None:
        where = human.format_address(flow.client_conn.proxy_mode.address)
        msg = jsonrpc.parse(content_of(flow.request)[0]).msg if flow.request.method == "POST" else None
        error = {"jsonrpc": "2.0", "id": msg.get("id") if isinstance(msg, dict) else None,
                 "error": {"code": -32603, "message": f"mcptape: the upstream {where} is unreachable ({cause})"}}
        flow.response = mhttp.Response.make(502, json.dumps(error), {"content-type": http.JSON})
        flow.metadata[UNREACHABLE] = cause
        if not self.upstream_down:  # once an outage; each request is recorded
            logger.warning(f"mcptape: the upstream {where} is unreachable ({cause}); clients get 502 and each "
                           f"request is recorded as upstream-unreachable; the next request tries again")
            self.upstream_down = True

    @_guarded
    def _record_request(self, flow: mhttp.HTTPFlow) -> None:
        body, problem = body_of(flow.request)
        self.capture.request(
            flow.id, flow.client_conn.id, flow.request.timestamp_start, flow.request.method,
            flow.request.path, headers_of(flow.request.headers), body, problem,
        )

    def _edit_request(self, flow: mhttp.HTTPFlow) -> float:
        """Decide the edits for a request; answer it ourselves when an edit says so (the server never sees it).
        Returns how long to hold the request before it goes on (a delay on a legacy channel's answer)."""
        msg = jsonrpc.parse(content_of(flow.request)[0]).msg if flow.request.method == "POST" else None
        session = self.capture.session_of(flow.request.path, headers_of(flow.request.headers))
        plan = self.editor.plan(self.clock(), msg, flow.request.method, session)
        if not plan:
            return 0.0
        flow.metadata[PLAN] = plan
        legacy = self.capture.is_legacy(flow.request.path)
        ours = edits.instead(plan, channel=legacy)
        if isinstance(ours, edits.Reset):
            self._edited(flow, ours)
            flow.kill()
        elif ours is not None:
            flow.response = mhttp.Response.make(ours.status, ours.body, mitm_headers(ours.headers))
            self._edited(flow, ours)
        elif legacy:
            return self._edit_on_channel(flow, plan, msg, session)
        elif note := edits.announce(plan):
            self._edited(flow, note)
        return 0.0

    def _edit_on_channel(self, flow: mhttp.HTTPFlow, plan: edits.Plan, msg, session: str | None) -> float:
        """Legacy HTTP+SSE: the POST is only accepted (202), its answer comes back on the session's channel. The
        POST goes on to the server (which sees the request), the answer is changed as it passes on the channel,
        and a delay holds the POST, so the server answers late. mitmproxy cannot put a message into a stream on
        its own, so an answer is only ever changed, never made up."""
        channel = self._channels.get(session)
        note = edits.on_channel(self.editor, plan, channel is not None, jsonrpc.kind(msg) == "request")
        if plan.edits_messages:  # what is left of them, the channel can take
            channel.expect(msg, plan, self.capture.exchange_number(flow.id))
        if note is not None:
            self._edited(flow, note)
        del flow.metadata[PLAN]  # nothing to do on the POST's own 202
        return plan.delay

    def _edited(self, flow: mhttp.HTTPFlow, effect: edits.Effect) -> None:
        if self.capture is not None:
            plan = flow.metadata[PLAN]
            self.capture.edited(flow.id, self.clock(), plan.texts, effect.detail, effect.withheld or None)

    async def responseheaders(self, flow: mhttp.HTTPFlow) -> None:
        plan: edits.Plan | None = flow.metadata.get(PLAN)
        if plan is not None and plan.delay:
            await asyncio.sleep(plan.delay)  # the whole response waits: nothing else on the proxy does
        if http.media_type(flow.response.headers.get("content-type")) != http.SSE:
            if self.capture is not None:
                stream_if_large(flow.response, self.capture.limit)
            return
        flow.response.stream = True  # never buffer an event stream, recorded or not
        if self.capture is None:
            return
        try:
            stream = self.capture.response_head(
                flow.id, flow.response.timestamp_start, flow.response.status_code, flow.response.reason,
                headers_of(flow.response.headers), relocation(flow),
            )
        except Exception as e:
            logger.error(f"mcptape: recording a response head failed: {type(e).__name__}: {e}")
            return
        if stream is None:
            return
        if plan is not None and plan.changes_events and not plan.replaces_answer:
            if not stream.edit(edits.StreamEditor(plan, request_id(flow))):
                edits.not_on_compressed_stream(self.editor, plan)
        elif (self.editor is not None and flow.request.method == "GET"
              and http.SESSION_ID not in flow.request.headers):
            # a GET stream outside any Streamable HTTP session: a legacy channel, once its endpoint event says so
            stream.edit(edits.ChannelEditor(self._channel_opened))
        flow.response.stream = Tap(stream, flow, self.keep)

    def _channel_opened(self, session: str, channel: edits.ChannelEditor) -> None:
        self._channels[session] = channel

    async def response(self, flow: mhttp.HTTPFlow) -> None:
        if flow.client_conn.id in self._upstream:
            self.upstream_down = False  # it is back: a later outage is said again
        plan: edits.Plan | None = flow.metadata.get(PLAN)
        if plan is not None and plan.drop and not plan.replaces_answer:
            await self._withhold(flow)
            return
        self._record_response(flow)

    async def _withhold(self, flow: mhttp.HTTPFlow) -> None:
        """drop: the final response never reaches the client; the request (or its stream) stays open until the
        client gives up or the proxy stops."""
        if not flow.response.stream:
            self._edited(flow, edits.withhold(jsonrpc.parse(content_of(flow.response)[0]).msg))
        while not self.stopping and flow.client_conn.timestamp_end is None:
            await asyncio.sleep(0.05)  # mitmproxy has no event for a client leaving while a hook is pending
        if self.capture is not None:
            reason = records.PROXY_STOPPED if self.stopping else records.CLIENT_DISCONNECTED
            self.capture.failed(flow.id, self.clock(), reason, edits.WITHHELD_ENDED)
        flow.kill()

    @_guarded
    def _record_response(self, flow: mhttp.HTTPFlow) -> None:
        streamed = flow.response.stream and not isinstance(flow.response.stream, BodyTap)  # SSE: recorded as it went
        body, problem = (b"", None) if streamed else body_of(flow.response)
        head_recorded = self.capture.stream_of(flow.id) is not None  # (then its headers are not read again)
        self.capture.response(
            flow.id, flow.response.timestamp_start, flow.response.status_code, flow.response.reason,
            [] if head_recorded else headers_of(flow.response.headers), body, problem,
            records.UPSTREAM_UNREACHABLE if UNREACHABLE in flow.metadata else records.COMPLETE,
            flow.metadata.get(UNREACHABLE),
        )

    @_guarded
    def error(self, flow: mhttp.HTTPFlow) -> None:
        tap = flow.response.stream if flow.response is not None else None
        if isinstance(tap, Tap) and tap.kept is not None:  # a cut stream: what passed before the cut
            flow.response.raw_content = bytes(tap.kept)
        self.capture.failed(flow.id, self.clock(), self._reason(flow), flow.error.msg if flow.error else None)

    def _reason(self, flow: mhttp.HTTPFlow) -> str:
        if self.stopping:
            return records.PROXY_STOPPED
        if (plan := flow.metadata.get(PLAN)) is not None and plan.reset:
            return records.UPSTREAM_RESET  # what the client saw: the connection went away
        return end_reason(flow)

    def done(self) -> None:
        self._close("stopped")

    def _close(self, reason: str) -> None:
        if self.capture is not None:
            try:
                self.exchanges = self._sink.exchanges if self._sink is not None else 0
                self.capture.stop(self.clock(), reason)
                self.failure = self._sink.failure if self._sink is not None else None
            except Exception as e:
                logger.error(f"mcptape: closing the tape failed: {e}")
            self.capture = None
        if self.writer is not None:
            self.writer.close()
            self.writer = None


