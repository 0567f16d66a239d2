"""The rules `mcptape check` applies. Each is a model Observer keeping only the state it needs; each finding names
the spec clause it rests on (spec.py). Client-side rules judge what the client saw, injected answers included;
a finding about the server that rests on an injected answer carries `injected` so it is never blamed on it.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..facts import (DuplicateRequest, LateResponse, Malformed, OrphanResponse, Outcome, ProgressAfterResponse,
                     ResponseOnGetStream)
from ..model import (DELETED, EXPIRED, LEGACY_SSE, STATELESS, STDIO, STREAMABLE, Call, Exchange, Model, Observer, Seen,
                     Session, Transition, refusal_text)
from ..tape import records
from ..wire import jsonrpc
from . import spec
from .dead_ids import DeadIds
from .envelope import Envelope
from .features import Features
from .finding import SIDES, Finding, about_call, about_record, on_protocol_channel
from .headers import StandardHeaders
from .legacy import LegacySse
from .lifecycle import Lifecycle
from .modern import Modern
from .negotiation import Negotiation
from .streamable import StreamableHttp


class Calls(Observer):
    """What became of each request: answered, cancelled, left hanging, or cut off by the end of the recording."""

    def call(self, call: Call, model: Model) -> list[Finding] | None:
        if call.response is not None and call.cancel is None and len(call.progress) < 2:
            return None  # the common case: answered, nothing to say
        return list(self._call(call))

    def _call(self, call: Call) -> Iterator[Finding]:
        sender, receiver = SIDES[call.dir]
        ex = call.exchange
        if call.outcome.answered:
            if call.cancel is not None and call.cancel[0] < (call.response_seq or 0):
                yield about_call("response-after-cancel", "info", call,
                                 f"the {receiver} answered after the {sender} cancelled it; the {sender} should ignore "
                                 f"that answer", spec.CANCELLATION)
            yield from self._progress(call)
            return
        if call.outcome is Outcome.REJECTED:
            return  # refused at the HTTP level; the session rules speak about statuses
        closed_stream = call.session.transport == STATELESS and ex is not None and ex.end == records.CLIENT_DISCONNECTED
        if call.cancel is not None or closed_stream:
            how = "closed the request's stream" if call.cancel is None else "sent notifications/cancelled"
            yield about_call("cancelled-without-response", "info", call,
                             f"the {sender} {how} and the {receiver} never answered: this is what the spec recommends, "
                             f"not a hang", spec.CANCELLATION_2026 if closed_stream else spec.CANCELLATION)
            if call.session.transport == STREAMABLE and ex is not None and ex.end in (None, records.PROXY_STOPPED):
                yield about_call("dangling-stream", "warning", call,
                                 "after the cancellation the request's SSE stream stayed open: the POST never completed "
                                 "at the HTTP level", spec.CANCELLATION)
            return
        left = call.session.left.get(records.S2C if call.dir == records.C2S else records.C2S)
        if left is not None and left < call.seq:
            yield about_call("request-after-close", "info", call,
                             f"the {sender} sent this request after the {receiver} had left (record {left}: "
                             f"{_CLOSED[call.dir]}): nobody was there to answer it", spec.STDIO_SHUTDOWN)
            return
        if self._left_unresumed(call):
            yield about_call("no-resume-after-close", "warning", call,
                             f"the server closed this request's SSE stream after event {call.exchange.last_sse_id!r}, "
                             f"before its answer, as 2025-11-25 allows; the client never resumed it (a GET with "
                             f"Last-Event-ID), so the answer never came", spec.RESUME)
            return
        ended = self._ended(call)
        if ended:
            # A server's request is judged only when the client leaves (closes stdin or the channel): the spec lets a
            # client shut down at any time and says nothing of draining what the server asked, so a warning. A
            # client's request the server let die with its process, stream or session is the hang: an error.
            yield about_call("unanswered-request", "warning" if call.dir == records.S2C else "error", call,
                             f"the {receiver} never answered this request, although {ended}",
                             spec.STDIO_RESPONSE if call.session.transport == STDIO else spec.RESPONSE)
        else:
            yield about_call("capture-incomplete", "info", call,
                             "still waiting for an answer when the recording ended", spec.CAPTURE)

    @staticmethod
    def _left_unresumed(call: Call) -> bool:
        """A POST's stream the server closed cleanly after an event id, in a revision that lets it (2025-11-25), the
        session still alive, and no GET of the client resuming from that id: the answer waits on the client."""
        session, ex = call.session, call.exchange
        return (session.transport == STREAMABLE and call.dir == records.C2S and ex is not None
                and ex.method == "POST" and ex.end == records.COMPLETE and ex.last_sse_id is not None
                and session.version == "2025-11-25" and (session.dead is None or session.dead.kind == DELETED)
                and ex.last_sse_id not in session.resumed)

    @staticmethod
    def _ended(call: Call) -> str | None:
        session, ex = call.session, call.exchange
        if session.dead:
            return "its session ended"
        if session.transport == STDIO:
            if call.dir == records.S2C and records.C2S in session.left:
                return "the client closed the server's stdin without answering it"
            return "the server process exited" if session.ended else None
        if session.transport == LEGACY_SSE or call.dir == records.S2C:
            return "the SSE channel closed" if session.ended else None
        if ex is not None and ex.end not in (None, records.PROXY_STOPPED):
            return f"its HTTP exchange ended ({ex.end})"
        return None

    @staticmethod
    def _progress(call: Call) -> Iterator[Finding]:
        if len(call.progress) < 2:
            return
        values = [p[2] for p in call.progress if isinstance(p[2], (int, float))]
        if any(b <= a for a, b in zip(values, values[1:])):
            yield about_call("progress-not-increasing", "warning", call,
                             f"progress values did not increase: {values[:10]}", spec.PROGRESS)


_CLOSED = {records.C2S: "the server closed its stdout", records.S2C: "the client closed the server's stdin"}


class Messages(Observer):
    """Messages that are not well-formed, answers nobody asked for or on a stream where none belongs, ids used twice,
    progress after the end."""

    def noted(self, seen: Seen, model: Model) -> list[Finding]:
        return list(self._noted(seen))

    def _noted(self, seen: Seen) -> Iterator[Finding]:
        for fact in seen.notes:
            match fact:
                case OrphanResponse(msg):
                    yield about_record("orphan-response", "warning", seen,
                                       f"an answer with id {msg.get('id')!r} that matches no request in flight",
                                       spec.RESPONSE_ID, request_id=msg.get("id"))
                case LateResponse(call):
                    yield about_call("duplicate-response", "warning", call,
                                     f"answered again (record {seen.seq}) after its final response", spec.RESPONSE_ID)
                case DuplicateRequest(earlier):
                    yield about_call("duplicate-request-id", "error", earlier,
                                     f"the same id was sent again (record {seen.seq}) while this request was in flight",
                                     spec.REQUEST_ID)
                case ProgressAfterResponse(call):
                    yield about_call("progress-after-response", "warning", call,
                                     f"progress notification (record {seen.seq}) after the final response",
                                     spec.PROGRESS)
                case ResponseOnGetStream(msg):
                    yield about_record("response-on-get-stream", "warning", seen,
                                       f"a response (id {msg.get('id')!r}) on the GET stream, which is not a resumed "
                                       f"stream", spec.GET_STREAM, request_id=msg.get("id"))
                case Malformed(problem) if problem and on_protocol_channel(seen):
                    kind = seen.kind
                    clause = (spec.MALFORMED_STDIO if kind == records.STDIO_LINE else
                              spec.MALFORMED_HTTP if kind == records.HTTP_REQUEST else spec.MALFORMED_MESSAGE)
                    yield about_record("malformed-message", "error" if kind == records.STDIO_LINE else "warning",
                                       seen, f"{kind}: {problem}", clause)




class Sessions(Observer):
    """The session lifecycle on Streamable HTTP: dead sessions, re-initialization, statuses, headers."""

    kinds = frozenset({records.HTTP_REQUEST, records.HTTP_RESPONSE, records.STDIO_LINE})

    def __init__(self) -> None:
        self.reuse: dict[int, tuple[Session, list[tuple[int, float]]]] = {}
        self.reported: set[tuple[str, int]] = set()  # (rule, id(session)): said once per session

    def record(self, seen: Seen, model: Model) -> list[Finding] | None:
        kind = seen.kind
        ex = seen.exchange
        if ex is None:
            if kind == records.STDIO_LINE and seen.session is not None and not seen.session.initialized:
                return self._stdio_order(seen)
            return None
        if kind == records.HTTP_REQUEST:
            return self._request(seen, ex)
        if kind == records.HTTP_RESPONSE:
            return self._response(seen, ex)
        return None

    # These return a list of findings, usually empty (not a generator: they run for every request and response).
    # The exchange comes as a typed argument, not seen.exchange read again: docs/compiled.md.

    def _request(self, seen: Seen, ex: Exchange) -> list[Finding]:
        found: list[Finding] = []
        msg = seen.msg if isinstance(seen.msg, dict) else {}
        method = msg.get("method")
        session = seen.session
        if session is not None and session.transport == STREAMABLE and ex.sent_session == session.label:
            life = session.life  # (read once: each request asks it twice)
            if life.dead is not None and ex.method in ("POST", "GET"):
                self.reuse.setdefault(id(session), (session, []))[1].append((seen.seq, seen.t))
            if life.midway and self._once("capture-incomplete", session):
                found.append(about_record("capture-incomplete", "info", seen,
                                          f"the recording began after session {session.label} was opened: what "
                                          f"came before is not in the tape", spec.CAPTURE, method, msg.get("id"),
                                          records.C2S))
            sent = ex.version_header
            if (session.initialized and session.version and session.version >= "2025-06-18"
                    and sent != session.version):
                said = "no MCP-Protocol-Version header;" if sent is None else f"MCP-Protocol-Version {sent} but"
                found.append(about_record("protocol-version-mismatch", "warning", seen,
                                          f"{said} the session negotiated {session.version}", spec.VERSION_HEADER,
                                          method, msg.get("id"), records.C2S))
        return found

    def _response(self, seen: Seen, ex: Exchange) -> list[Finding]:
        r = seen.record
        status = r.get("status") or 0
        if (status < 400 and status != 202 and ex.method != "DELETE"
                and (seen.session is None or seen.session.life.dead is None)):
            return []  # a request answered: what follows is about refusals, 202s, the end of sessions, and a
            # session the tape shows gone (deleted, refused) that the server goes on serving
        found: list[Finding] = []
        session = seen.session
        request = ex.msg if isinstance(ex.msg, dict) else {}
        method, request_id = request.get("method"), request.get("id")
        dead = session.dead if ex.sent_session and session is not None and session.transport == STREAMABLE else None
        if (dead is not None and status != 404 and (dead.seq == seen.seq or dead.seq < ex.seq)
                and not (dead.seq == seen.seq and dead.kind == DELETED) and self._once("wrong-status", session)):
            # refused, or served, though the tape shows it gone: whatever the body says
            said = _said(r)
            found.append(about_record(
                "wrong-status-for-dead-session", "warning", seen,
                f"the server answered {_what_died(session, dead, seen.seq)} with {status}"
                f"{f' ({said!r})' if said else ' (no body)'} instead of 404; clients only re-initialize on 404",
                spec.SESSION_404, method, request_id, records.C2S, dead))
        if status in (401, 403) and dead is None:  # (about a session the tape shows gone, not about credentials)
            found.append(about_record("auth-rejected", "info", seen,
                                      f"the server refused the request's credentials ({status})", spec.AUTH, method,
                                      request_id, records.C2S))
        if (status == 202 and jsonrpc.kind(request) == "request" and session is not None
                and session.transport in (STREAMABLE, STATELESS)):
            found.append(about_record("status-202-for-request", "error", seen,
                                      f"202 Accepted answered the request {method} #{request_id}: it will never get a "
                                      f"response", spec.ACCEPTED_202, method, request_id, records.C2S))
        if (status == 400 and not ex.sent_session and method not in (None, "initialize")
                and (ex.version_header or "2025") in _HANDSHAKE and "session" in _said(r).lower()):
            found.append(about_record("missing-session-id", "error", seen,
                                      f"{method} was sent without MCP-Session-Id and refused ({_said(r)!r})",
                                      spec.SESSION_HEADER, method, request_id, records.C2S))
        return found

    def _once(self, rule: str, session: Session) -> bool:
        key = (rule, id(session))
        if key in self.reported:
            return False
        self.reported.add(key)
        return True

    def _stdio_order(self, seen: Seen) -> list[Finding]:
        msg = seen.msg
        session = seen.session
        if (isinstance(msg, dict) and seen.record.get("dir") == records.C2S and jsonrpc.kind(msg) == "request"
                and session is not None and not session.initialized
                and msg.get("method") not in ("initialize", "ping", "server/discover")
                and not (session.version or "").startswith("2026")):
            return [about_record("request-before-initialize", "warning", seen,
                                 f"{msg.get('method')} sent before the server answered initialize",
                                 spec.INITIALIZE_FIRST, msg.get("method"), msg.get("id"))]
        return []

    def finish(self, model: Model) -> Iterator[Finding]:
        # Both findings are about one event, the client going on with a dead session: both cite its first request
        # after the death (the death itself is in the message and the transition).
        for session, uses in self.reuse.values():
            first, last, dead = uses[0], uses[-1], session.dead
            how = (f"the client deleted it (record {dead.seq})" if dead.kind == DELETED else
                   f"{'an edit' if dead.kind == EXPIRED else 'the server'} declared it dead ({dead.status} at record "
                   f"{dead.seq})")
            span = last[1] - first[1]
            over = "" if len(uses) == 1 else f", within {span * 1000:.0f} ms" if span < 1 else f", over {span:.1f} s"
            yield Finding("dead-session-reuse", "error", session.tape, session.label, records.C2S, None, None,
                          f"{len(uses)} request(s) still carried session {session.label} after {how}{over}",
                          spec.REINITIALIZE if dead.status == 404 else spec.REUSED_AFTER_REFUSAL, first[0], first[1],
                          dead.injected, transition=dead.to_json())
            if dead.status == 404 and session.superseded is None:
                yield Finding("no-reinitialize", "error", session.tape, session.label, records.C2S, None, None,
                              f"after 404 for session {session.label} (record {dead.seq}) the client sent "
                              f"{len(uses)} more request(s) but never a new initialize without a session id",
                              spec.REINITIALIZE, first[0], first[1], dead.injected, transition=dead.to_json())


_HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2025")


def _said(response: dict) -> str:
    return refusal_text(response)[:80]


def _what_died(session: Session, dead: Transition, seq: int) -> str:
    if dead.seq == seq:  # this answer is the first to say it is gone
        return "an unknown session (the tape never saw it opened)" if session.unknown else "a session it refused"
    return {DELETED: f"a session the client had deleted (record {dead.seq})",
            EXPIRED: f"a session an edit had expired (record {dead.seq})"}.get(
        dead.kind, f"a session it had refused with {dead.status} (record {dead.seq})")


def all_rules() -> list[Observer]:
    return [Calls(), Messages(), Sessions(), DeadIds(), Envelope(), Lifecycle(), StreamableHttp(), Features(),
            StandardHeaders(), Negotiation(), Modern(), LegacySse()]
