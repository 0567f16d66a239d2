"""A verdict per requirement per tape (`check --requirements`): fail, warn, pass, not-observed, not-applicable.

Findings alone cannot tell a requirement kept from one never put to the test, so while check reads the tapes
`Exercise` notes the facts each requirement's precondition names (`Requirement.exercised`: a method was used, a
POST was made, a session died…) and which sessions, with their transport and revision, each tape holds. It runs only
when verdicts are asked for: plain `check` does not pay for it.

- fail: a finding at error severity broke it; warn: a finding at warning (a SHOULD, or a rule that warns);
- pass: the tape exercised it and nothing broke it (an observation's info findings are passes with notes);
- not-observed: it holds for the tape's transport and revision, but the tape never exercised it (never a pass);
- not-applicable: the tape's sessions are all of another revision or transport.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from ..facts import SessionTransition
from ..model import DELETED, EXPIRED, REFUSED, Call, Model, Observer, Seen, Session
from ..tape import records
from ..wire import jsonrpc
from .requirements import REGISTRY, Requirement
from .feature_requests import list_of
from .features import LISTS, content_items
from .finding import Finding
from .modern import REVISION as MODERN
from .modern import meta_of
from .streamable import foreign_origin, is_revision


class Verdict(str, Enum):
    FAIL = "fail"
    WARN = "warn"
    PASS = "pass"
    NOT_OBSERVED = "not-observed"
    NOT_APPLICABLE = "not-applicable"


_DEATHS = (REFUSED, EXPIRED, DELETED)
_FEATURES = LISTS | {"initialize", "tools/call", "prompts/get", "sampling/createMessage", "elicitation/create"}


class Exercise(Observer):
    """The facts of each tape that say which requirements it exercised, and its sessions."""

    def __init__(self) -> None:
        self.facts: dict[str, set[str]] = {}
        self.sessions: dict[str, dict[int, Session]] = {}
        self._tape: str | None = None
        self._facts: set[str] = set()
        self._sessions: dict[int, Session] = {}
        self._last: Session | None = None  # the session of the record before: filed already
        self._cursors: dict[int, set] = {}  # per session: the cursors the server issued
        self._outputs: dict[int, set] = {}  # per session: the tools listed with an outputSchema

    def _on(self, tape: str) -> None:
        self._tape = tape
        self._facts = self.facts.setdefault(tape, {"record"})
        self._sessions = self.sessions.setdefault(tape, {})
        self._last = None

    def record(self, seen: Seen, model: Model) -> None:
        # It runs for every record of the tape: a fact already known is not worked out again, and a single
        # message (the common case) is read without a call more.
        if seen.tape != self._tape:
            self._on(seen.tape)
        facts, r = self._facts, seen.record
        session = seen.session
        if session is not self._last and session is not None:
            self._last = session
            self._sessions.setdefault(id(session), session)
        kind = seen.kind
        ex = seen.exchange
        if kind == records.HTTP_REQUEST:
            facts.add(_fact("http:", str(r.get("method"))))
            if ex is not None:
                if isinstance(ex.version_header, str) and not is_revision(ex.version_header):
                    facts.add("bad-version-header")
                if "foreign-origin" not in facts and foreign_origin(ex.headers) is not None:
                    facts.add("foreign-origin")
            if r.get("session"):
                facts.add("session-id")
            if ex is not None and ex.method == "POST" and ex.msg is not None:
                body = ex.msg
                if type(body) is dict:
                    request = type(body.get("method")) is str and "id" in body
                else:
                    request = "request" in {jsonrpc.kind(m) for m in jsonrpc.messages(body)}
                facts.add("post-request" if request else "post-notification")
        elif kind == records.HTTP_RESPONSE:
            status = r.get("status") or 0
            if status >= 400:
                facts.add(_fact("status:", status))
            if r.get("session"):
                facts.add("session-id")
            if ex is not None and ex.get_stream:
                facts.add("get-stream")
        elif kind == records.SSE_EVENT:
            if r.get("id"):
                facts.add("sse-event-id")
            if r.get("event") == "endpoint":
                facts.add("legacy-channel")
        elif kind == records.STDIO_EOF:
            facts.add("stdio-eof")
        msg = seen.msg
        if msg is None:
            return None
        client = r.get("dir", records.C2S) == records.C2S
        facts.add("message")
        for item in (msg,) if type(msg) is dict else jsonrpc.messages(msg):
            k = jsonrpc.kind(item)
            facts.add(k)
            if k == "request" or k == "notification":
                method = item["method"]
                name = _METHODS.get(method)
                if name is None:
                    name = "m:" + method
                    if len(_METHODS) < 4096:  # bounded, as _FACTS
                        _METHODS[method] = name
                facts.add(name)
                if client:
                    if session is not None:
                        facts.add("first-message")
                elif k == "request":
                    facts.add("server-request")
                if k == "request" and "progress-token" not in facts and jsonrpc.progress_token(item) is not None:
                    facts.add("progress-token")
        return None

    def noted(self, seen: Seen, model: Model) -> None:
        for fact in seen.notes:
            if isinstance(fact, SessionTransition) and fact.step.kind in _DEATHS:
                facts = self.facts.setdefault(seen.tape, {"record"})
                facts.add("session-dead")
                if fact.step.status == 404:
                    facts.add("session-404")

    def call(self, call: Call, model: Model) -> None:
        method, response = call.method, call.response
        if call.session.version == MODERN:
            self._modern(call)
        if method not in _FEATURES or not isinstance(response, dict):
            return None
        facts = self._facts if call.tape == self._tape else self.facts.setdefault(call.tape, {"record"})
        result = response.get("result")
        params = (call.request or {}).get("params")
        params = params if isinstance(params, dict) else {}
        if method == "initialize":
            if isinstance(result, dict):
                facts.add("initialize-result")
            return None
        if method in LISTS:
            issued = self._cursors.setdefault(id(call.session), set())
            if params.get("cursor") is not None:
                facts.add("cursor")
                if not isinstance(params["cursor"], str) or params["cursor"] not in issued:
                    facts.add("unissued-cursor")
            if isinstance(result, dict) and isinstance(result.get("nextCursor"), str):
                issued.add(result["nextCursor"])
        if method == "tools/list" and isinstance(result, dict):
            self._outputs.setdefault(id(call.session), set()).update(
                t["name"] for t in list_of(result.get("tools")) if isinstance(t, dict) and "outputSchema" in t
                and isinstance(t.get("name"), str))
        elif method == "tools/call" and isinstance(result, dict):
            if "structuredContent" in result:
                facts.add("structured-content")
            name = params.get("name")
            if isinstance(name, str) and name in self._outputs.get(id(call.session), ()) and not result.get("isError"):
                facts.add("output-schema-call")
        elif method == "elicitation/create" and params.get("mode") == "url":
            facts.add("elicitation-url")
        elif method == "sampling/createMessage":
            for message in list_of(params.get("messages")):
                content = message.get("content") if isinstance(message, dict) else None
                for item in content if isinstance(content, list) else [content]:
                    if isinstance(item, dict) and item.get("type") in ("tool_use", "tool_result"):
                        facts.add(item["type"].replace("_", "-"))
        for item in content_items(method, response):
            kind = item.get("type")
            if kind in ("image", "audio"):
                facts.add(kind)
            elif kind == "resource":
                facts.add("embedded-resource")
            elif kind == "resource_link":
                facts.add("resource-link")
        return None

    def _modern(self, call: Call) -> None:
        """2026-07-28's facts: a multi round-trip request's interim result and its retry, a trace context."""
        facts = self._facts if call.tape == self._tape else self.facts.setdefault(call.tape, {"record"})
        params = (call.request or {}).get("params")
        if isinstance(params, dict):
            if "inputResponses" in params or "requestState" in params:
                facts.add("retry")
            if "traceparent" in meta_of(call.request):
                facts.add("traceparent")
        result = call.response.get("result") if isinstance(call.response, dict) else None
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            facts.add("input-required")


_FACTS: dict = {}
_METHODS: dict[str, str] = {}  # method -> its fact ("m:" + method), made once: one on every message


def _fact(prefix: str, value: object) -> str:
    """A fact's name, made once (the same few methods and statuses come back on every record)."""
    key = (prefix, value)
    name = _FACTS.get(key)
    if name is None:
        name = f"{prefix}{value}"
        if len(_FACTS) < 4096:  # bounded: a hostile tape may use a new method on every line
            _FACTS[key] = name
    return name


@dataclass(frozen=True, slots=True)
class Judged:
    """One row of the table: a requirement as one tape showed it."""

    tape: str
    requirement: Requirement
    revision: str | None  # the tape's (the latest of its sessions'), None when unknown
    verdict: Verdict
    findings: int  # the findings that rest on it in this tape

    def to_json(self) -> dict:
        level = self.requirement.level(self.revision)
        return {"tape": self.tape, "requirement": self.requirement.id, "area": self.requirement.area,
                "level": level.value if level is not None and self.verdict != Verdict.NOT_APPLICABLE else None,
                "revision": self.revision, "verdict": self.verdict.value, "findings": self.findings}


def judge(findings: Iterable[Finding], exercise: Exercise, tapes: list[str]) -> list[Judged]:
    """Every requirement of the registry, per tape, in tape order then registry order."""
    worst: dict[tuple[str, str], str] = {}
    counts: Counter = Counter()
    for f in findings:
        key = (f.tape, f.rule)
        counts[key] += 1
        if f.severity == "error" or (f.severity == "warning" and worst.get(key) != "error"):
            worst[key] = f.severity
        else:
            worst.setdefault(key, f.severity)
    rows = []
    for tape in tapes:
        facts = exercise.facts.get(tape, set())
        shapes = {(s.transport, s.version) for s in exercise.sessions.get(tape, {}).values()}
        known = [v for _, v in shapes if v]
        revision = max(known) if known else None
        for requirement in REGISTRY.values():
            key = (tape, requirement.id)
            severity = worst.get(key)
            if severity == "error":
                verdict = Verdict.FAIL
            elif severity == "warning":
                verdict = Verdict.WARN
            elif severity is not None:
                verdict = Verdict.PASS
            elif not _applies(requirement, shapes):
                verdict = Verdict.NOT_APPLICABLE
            elif any(fact in facts for fact in requirement.exercised):
                verdict = Verdict.PASS
            else:
                verdict = Verdict.NOT_OBSERVED
            rows.append(Judged(tape, requirement, _revision(requirement, shapes, revision), verdict, counts[key]))
    return rows


def _applies(requirement: Requirement, shapes: set) -> bool:
    return any(requirement.holds(version, transport) for transport, version in shapes)


def _revision(requirement: Requirement, shapes: set, latest: str | None) -> str | None:
    """The revision a requirement is judged at in a tape: the latest of its sessions' where it holds."""
    versions = [v for t, v in shapes if v and v in requirement.levels and t in requirement.transports]
    return max(versions) if versions else latest


def summary(rows: list[Judged]) -> dict:
    counts = Counter(row.verdict.value for row in rows)
    return {v.value: counts.get(v.value, 0) for v in Verdict}


def text(rows: list[Judged]) -> Iterable[str]:
    tape = None
    for row in rows:
        if row.tape != tape:
            tape = row.tape
            yield f"{tape}  ({row.revision or 'revision unknown'})"
        level = row.requirement.level(row.revision)
        shown = level.value if level is not None and row.verdict != Verdict.NOT_APPLICABLE else "-"
        count = f"  {row.findings} finding(s)" if row.findings else ""
        yield f"  {row.verdict.value:14} {shown:10} {row.requirement.id}{count}".rstrip()
    s = summary(rows)
    yield ", ".join(f"{n} {v}" for v, n in s.items()) + f" ({len(REGISTRY)} requirements)"


def as_json(rows: list[Judged]) -> dict:
    return {"requirements": [row.to_json() for row in rows], "verdicts": summary(rows)}
