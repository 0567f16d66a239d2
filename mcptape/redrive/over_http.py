"""The re-drive over HTTP (Streamable HTTP of any era, legacy HTTP+SSE): each step an exchange on the live server,
its session ids and legacy endpoint mapped to the live ones, what comes back logged by the recorder's capture."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlencode, urljoin, urlsplit

from .. import TOOL
from ..capture.http import HttpCapture, Scope
from ..redact.pseudonym import PSEUDONYM
from ..redact.redactor import Redactor
from ..tape import records
from ..wire import http
from . import script as scripted
from .client import Client, Unreachable
from .drive import Run, Unstartable, _Sink


class HttpRun(Run):
    def __init__(self, script, writer, timeout, secrets, pseudonyms, upstream: str, verify_tls: bool = True) -> None:
        super().__init__(script, writer, timeout, secrets, pseudonyms)
        self.upstream = upstream
        split = urlsplit(upstream)
        self.origin = f"{split.scheme}://{split.netloc}"
        self.entry = split.path or "/"
        recorded = next((s.path for s in script.steps if s.kind in (scripted.POST, scripted.GET)), self.entry)
        self.paths = {recorded: self.entry}  # the tape's endpoint -> the live one
        extra = [p[len("/headers/"):] for p in secrets if p.startswith("/headers/")]
        self.capture = HttpCapture(_Sink(self, self._seen), Redactor(extra),
                                   Scope({self.entry, *(s.path for s in script.steps if s.path)}))
        self.client = Client(verify_tls)
        self.sessions: dict[str, str] = {}  # recorded Mcp-Session-Id -> live
        self.endpoints: dict[str | None, str] = {}  # legacy: session -> the live channel's POST URL
        self.steps_by_live: dict[int, scripted.Step] = {}  # live exchange number -> its step
        self.events: dict[int, int] = {}  # live exchange number -> SSE events so far
        self.event_ids: dict[tuple[int, int], str] = {}  # (recorded exchange, index) -> live event id
        self.tasks: dict[int, asyncio.Task] = {}  # recorded exchange -> the task reading it
        self.capture.start(time.time(), TOOL, {"verify": script.tape, "upstream": upstream}, 0)

    def _seen(self, record: records.Record) -> None:
        step = self.steps_by_live.get(record.get("exchange"))
        if step is None:
            return
        label = step.session
        if records.is_end(record):
            if record["reason"] != records.CLIENT_DISCONNECTED:
                self.tracker.count((None, "end", step.exchange))
            return
        if records.is_http_response(record):
            self.tracker.count((None, "http", step.exchange))
        elif records.is_sse_event(record):
            number = record["exchange"]
            index = self.events[number] = self.events.get(number, 0) + 1
            self.tracker.count((None, "event", step.exchange))
            if "id" in record:
                self.event_ids[(step.exchange, index)] = record["id"]
            if record.get("event") == "endpoint" and record.get("data"):
                self.endpoints[label] = urljoin(self.upstream, record["data"])
                self.tracker.count((label, "endpoint"))
        if "msg" in record:
            self.tracker.saw(label, record["msg"])

    async def run(self) -> None:
        try:  # is there a server at all? (a call's answer may take long to come; the connection does not)
            await asyncio.wait_for(self.client.probe(self.upstream), self.timeout)
        except (Unreachable, TimeoutError) as e:
            self.capture.stop(time.time(), "server unreachable")
            raise Unstartable(str(e) or f"cannot connect to {urlsplit(self.upstream).netloc}: timed out") from None
        await super().run()

    async def send(self, step: scripted.Step) -> None:
        if step.kind == scripted.CLOSE:
            task = self.tasks.get(step.exchange)
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            return
        self.tasks[step.exchange] = asyncio.create_task(self._exchange(step))
        await asyncio.sleep(0)  # let the request go out before the next step

    def _url(self, step: scripted.Step) -> str:
        legacy = self.endpoints.get(step.session)
        if legacy is not None and step.kind == scripted.POST and http.legacy_session(step.query) is not None:
            return legacy
        path = self.paths.get(step.path, step.path)
        query = [(k, self._secret(f"/query/{k}", v)) for k, v in step.query]
        return f"{self.origin}{path}" + (f"?{urlencode(query)}" if query else "")

    def _secret(self, path: str, value: str) -> str:
        secret = self.secrets.get(path)
        return value if secret is None else PSEUDONYM.sub(lambda _: secret, value)

    def _headers(self, step: scripted.Step) -> list[tuple[str, str]]:
        out = [(k, self._secret(f"/headers/{k.lower()}", v)) for k, v in step.headers]
        if step.sent_session is not None:
            out.append((http.SESSION_ID, self.sessions.get(step.sent_session, step.sent_session)))
        if step.last_event_id is not None:
            out.append((http.LAST_EVENT_ID, self.event_ids.get(step.resume, step.last_event_id)))
        return out

    async def _exchange(self, step: scripted.Step) -> None:
        url, headers = self._url(step), self._headers(step)
        body = self.encode(step, self.message(step))
        key = object()
        split = urlsplit(url)
        target = split.path + (f"?{split.query}" if split.query else "")
        self.capture.request(key, step.conn, time.time(), step.kind, target, headers, body)
        number = self.capture.exchange_number(key)
        self.steps_by_live[number] = step
        response = None
        try:
            try:
                response = await self.client.request(step.kind, url, headers, body)
            except Unreachable as e:
                self.capture.failed(key, time.time(), records.UPSTREAM_UNREACHABLE, str(e))
                if not self.tracker.gone:
                    self.tracker.left(str(e))
                return
            head = response.head
            live = http.get(head.headers, http.SESSION_ID)
            if live and step.answer_session:
                self.sessions[step.answer_session] = live
            stream = self.capture.response_head(key, time.time(), head.status, head.reason, head.headers)
            chunks = []
            try:
                async for chunk in response.chunks():
                    if stream is not None:
                        stream.record(chunk)
                    else:
                        chunks.append(chunk)
            except OSError as e:
                self.capture.failed(key, time.time(), records.UPSTREAM_RESET, str(e))
                return
            self.capture.response(key, time.time(), head.status, head.reason, head.headers, b"".join(chunks))
        except asyncio.CancelledError:
            # the tape's client hung up here (a CLOSE step), or verify is stopping (then the capture has ended it)
            self.capture.failed(key, time.time(), records.CLIENT_DISCONNECTED, "verify hung up, as the recorded "
                                                                               "client did")
        finally:
            if response is not None:
                response.close()

    async def stop(self) -> None:
        self.capture.stop(time.time(), "verify finished")  # exchanges still open are ended as the recorder's doing
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        self.client.close()
