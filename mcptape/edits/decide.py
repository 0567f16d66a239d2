"""Which edits fire on a client message, and what they make the client get instead (no I/O: effects.py turns the
Plan into what the replay and the live proxy do). Selectors count over the whole run, across sessions, as the
client sent its messages; the sessions an edit killed stay dead until the client opens a new one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from ..tape import json_form, records
from ..wire import jsonrpc
from .language import ALWAYS_SELECTABLE, MCP_METHODS, Edit, EditError, Selector

SESSION_NOT_FOUND = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}


@dataclass
class Plan:
    """What the edits do to one client message. Empty when nothing fires."""

    fired: list[Edit] = field(default_factory=list)
    dead_session: bool = False  # the request carried a session an edit had killed earlier
    killed: list[str] = field(default_factory=list)  # sessions this plan kills (their streams end too)
    status: tuple[int, list[tuple[str, str]], bytes] | None = None  # answer with this HTTP status instead
    error: dict | None = None  # answer with this JSON-RPC error instead
    reset: bool = False
    drop: bool = False  # withhold the final response
    delay: float = 0.0
    drop_event: int | None = None
    close_after: int | None = None
    duplicate: bool = False
    malformed: str | None = None
    exit: bool = False  # stdio: the server exits instead of answering (refuse-discover answer=exit)

    def __bool__(self) -> bool:
        return bool(self.fired)

    @property
    def texts(self) -> list[str]:
        """The edits that fired, as the user wrote them: what an `edit` record names."""
        return [e.text for e in self.fired]

    @property
    def replaces_answer(self) -> bool:
        """The client gets an answer of ours, and the recorded (or real) answer stays unused."""
        return self.status is not None or self.error is not None or self.reset or self.exit

    @property
    def changes_events(self) -> bool:
        return bool(self.drop or self.drop_event or self.close_after is not None or self.duplicate or self.malformed)

    @property
    def edits_messages(self) -> bool:
        """It changes the call's own messages where they go out among others' (a legacy session's SSE channel):
        an error stands in for the final response there, the event edits change them."""
        return self.error is not None or self.changes_events


class Editor:
    """Sees each client message in the order the client sent it and says which edits fire on it. It also keeps
    the sessions an edit killed: every later request carrying a dead id gets the same answer, until the client
    opens a new session. How often each edit fired is counted here, not on the edits, so one parsed list can
    drive several Editors (two replays of one tape) independently."""

    def __init__(self, edits: list[Edit]) -> None:
        self.edits = edits
        # Two counts that only grow: how often an edit fired, and how often the answer it fired on could not take
        # it (not_applied). An edit is done while the difference is short of its `times`.
        self._fired: dict[Edit, int] = {}
        self._missed: dict[Edit, int] = {}
        self.posts = 0
        self.methods: dict[str, int] = {}
        self.sessions: dict[str, int] = {}  # session id -> its number, in the order the client first used it
        self.alive: set[str] = set()  # sessions opened and not ended, as far as the traffic shows
        self.dead: dict[str, tuple[Edit, tuple[int, list, bytes]]] = {}
        self.first_t: float | None = None
        self.why_not: dict[str, str] = {}  # edit text -> why it could not be applied where it was selected

    def opened(self, session: str) -> None:
        """A response named a session (the answer to initialize)."""
        self.alive.add(session)

    def ended(self, session: str) -> None:
        """The client ended a session (DELETE answered)."""
        self.alive.discard(session)

    def plan(self, t: float, msg: Any, http_method: str | None = None, session: str | None = None) -> Plan:
        """One client message: an HTTP request (`http_method`, the session id it carries) or a stdio line."""
        if self.first_t is None:
            self.first_t = t
        if http_method == "POST":
            self.posts += 1
        method = msg.get("method") if isinstance(msg, dict) else None
        if isinstance(method, str):
            self.methods[method] = self.methods.get(method, 0) + 1
        if session is not None:
            self.alive.add(session)
            self.sessions.setdefault(session, len(self.sessions) + 1)
        plan = Plan()
        if session is not None and session in self.dead:
            edit, answer = self.dead[session]
            plan.fired.append(edit)
            plan.status, plan.dead_session = answer, True
            return plan
        for edit in self.edits:
            if edit.action == "expire-session" and session is None:
                continue  # nothing to expire yet: it fires on the first selected request that carries a session
            if (edit.times is None or self.applied(edit) < edit.times) and (
                    self._selects(edit.at, t, msg, http_method, session)
                    or (edit.action == "modern-only" and http_method in ("GET", "DELETE"))):
                self._fired[edit] = self._fired.get(edit, 0) + 1
                plan.fired.append(edit)
                self._apply(edit, plan, msg, session)
        return plan

    def _selects(self, at: Selector, t: float, msg: Any, http_method: str | None, session: str | None) -> bool:
        if at.kind == "post":
            return http_method == "POST" and self.posts >= at.value
        if at.kind == "method":
            method, number = at.value
            return isinstance(msg, dict) and msg.get("method") == method and self.methods[method] >= number
        if at.kind == "id":
            return jsonrpc.kind(msg) == "request" and str(msg.get("id")) == at.value
        if at.kind == "after":
            return t - self.first_t >= at.value
        return session is not None and self.sessions[session] == at.value  # session:N

    def _apply(self, edit: Edit, plan: Plan, msg: Any, session: str | None) -> None:
        o = edit.options
        if edit.action in ("expire-session", "restart-server"):
            status = o.get("status", 404)
            # the SDK's body, whatever the status: a client (and `check`) can tell a dead session by it
            answer = _answer(status, o.get("body"), [], SESSION_NOT_FOUND)
            victims = {session} if edit.action == "expire-session" else {*self.alive, session}
            for victim in victims - {None}:
                self.dead[victim] = (edit, answer)
                self.alive.discard(victim)
                plan.killed.append(victim)
            if session is not None:
                plan.status = answer
        elif edit.action == "status":
            code = o["code"]
            headers = list(o.get("headers", []))
            names = {name.lower() for name, _ in headers}
            if code == 401 and "www-authenticate" not in names:
                headers.append(("WWW-Authenticate", 'Bearer error="invalid_token"'))
            if code in (429, 503) and "retry-after" not in names:
                headers.append(("Retry-After", "1"))
            plan.status = _answer(code, o.get("body"), headers, _http_error(code))
        elif edit.action == "error":
            plan.error = {"jsonrpc": "2.0", "id": msg.get("id") if isinstance(msg, dict) else None,
                          "error": {"code": o.get("code", -32603),
                                    "message": o.get("message", "mcptape: injected error")}}
        elif edit.action == "reset":
            plan.reset = True
        elif edit.action == "drop":
            plan.drop = True
        elif edit.action == "delay":
            plan.delay += o["seconds"]
        elif edit.action == "drop-event":
            plan.drop_event = o["n"]
        elif edit.action == "close-stream":
            plan.close_after = o["after"]
        elif edit.action == "duplicate":
            plan.duplicate = True
        elif edit.action == "malformed":
            plan.malformed = o.get("kind", "not-json")
        elif edit.action == "refuse-discover":
            _refuse_discover(o, plan, msg)
        elif edit.action == "modern-only":
            _modern_only(o, plan, msg)

    def applied(self, edit: Edit) -> int:
        """How many messages the edit was done on: it fired, and the answer could take it."""
        return self._fired.get(edit, 0) - self._missed.get(edit, 0)

    def not_applied(self, plan: Plan, actions: tuple[str, ...], why: str) -> None:
        """Those of the plan's edits that could not be done on this answer do not count as done: they may fire
        again on a later message."""
        for edit in plan.fired:
            if edit.action in actions:
                self._missed[edit] = self._missed.get(edit, 0) + 1
                self.why_not.setdefault(edit.text, why)

    def unfired(self) -> list[str]:
        """Warnings for the edits that never fired, for the end of a run."""
        return [f"edit {e.text!r} never fired" + (f": {self.why_not[e.text]}" if e.text in self.why_not else "")
                for e in self.edits if self.applied(e) == 0]


# what servers say with each JSON-RPC code when a request of another era reaches them
ERA_MESSAGES = {-32600: "Bad Request: Unsupported protocol version", -32601: "Method not found",
                -32602: "Invalid params", -32001: "Session not found",
                -32020: "Header mismatch: required header Mcp-Method is missing"}


def _refuse_discover(o: dict, plan: Plan, msg: Any) -> None:
    """An older server's answer to the probe: an HTTP status with no body, with a body as given, or with a JSON-RPC
    error (`code`); a JSON-RPC error alone (over JSON, or a stdio line); no answer; or the server exits."""
    if o.get("answer") == "none":
        plan.drop = True
    elif o.get("answer") == "exit":
        plan.exit = True
    else:  # a 405 from a legacy HTTP+SSE endpoint: GET opens its channel
        _era_answer(o, plan, msg, o.get("code"), [("allow", "GET")] if o.get("status") == 405 else [])


def _modern_only(o: dict, plan: Plan, msg: Any) -> None:
    """A server of 2026-07-28 only, met by an older client. The spec's Backward Compatibility: "HTTP GET or DELETE
    to the MCP endpoint: respond with 405 Method Not Allowed"; it mints no session. What it answers initialize is
    not fixed (an unknown method without the era's headers and _meta), so the edit gives it: a status with a
    JSON-RPC error (-32020 HeaderMismatch unless code= says, as for the missing Mcp-Method) or a body, or the
    error alone (over JSON, or a stdio line)."""
    if not isinstance(msg, dict):  # a GET or a DELETE
        plan.status = 405, [("allow", "POST")], b""
    else:
        _era_answer(o, plan, msg, o.get("code", -32020), [])


def _era_answer(o: dict, plan: Plan, msg: Any, code: int | None, headers: list) -> None:
    """No status= given: the JSON-RPC error alone. Else that status with body= as given, or with the error as
    JSON, or with no body."""
    error = None
    if code is not None:
        message = o.get("message", ERA_MESSAGES.get(code, "Error"))
        error = {"jsonrpc": "2.0", "id": msg.get("id") if isinstance(msg, dict) else None,
                 "error": {"code": code, "message": message}}
    if "status" not in o:
        plan.error = error
    elif "body" in o:
        plan.status = _answer(o["status"], o["body"], headers, {})
    elif error is not None:
        plan.status = o["status"], [*headers, ("content-type", "application/json")], _dumps(error)
    else:
        plan.status = o["status"], headers, b""


def reach(edits: list[Edit], sent: Iterable[tuple[float, Any, str | None, str | None]]) -> list[str]:
    """The edits checked against what a tape's client sent, (t, message, HTTP method, session) in order, before
    anything runs. A selector naming a method no MCP revision has, and the tape never carried, is refused (EditError,
    naming the closest method). A position past what the tape recorded is a warning, returned: a replay serves the
    last answer again to a client that sends more, so the edit can still fire."""
    counted, ids = Editor([]), set()
    for t, msg, http_method, session in sent:
        counted.plan(t, msg, http_method, session)  # counted as the selectors count
        if jsonrpc.kind(msg) == "request":
            ids.add(str(msg.get("id")))
    warnings = []
    for edit in edits:
        at, recorded = edit.at, None
        if at.kind == "method" and at.value[0] not in ALWAYS_SELECTABLE:
            method, wanted = at.value
            if method not in MCP_METHODS and method not in counted.methods:
                closest = difflib.get_close_matches(method, sorted(MCP_METHODS | set(counted.methods)), 1, 0.6)
                raise EditError(f"edit {edit.text!r}: no MCP revision has the method {method!r}, in at={at}: "
                                + (f"did you mean {closest[0]}?" if closest else "name an MCP method or one the "
                                   f"tape carries ({', '.join(sorted(counted.methods)) or 'none'})"))
            if counted.methods.get(method, 0) < wanted:
                recorded = f"{counted.methods.get(method, 0)} {method} message(s)"
        elif at.kind == "post" and counted.posts < at.value:
            recorded = f"{counted.posts} POST(s)"
        elif at.kind == "session" and len(counted.sessions) < at.value:
            recorded = f"{len(counted.sessions)} session(s)"
        elif at.kind == "id" and at.value not in ids:
            recorded = f"no request with id {at.value}"
        if recorded is not None:
            warnings.append(f"edit {edit.text!r}: at={at} is past what the tape recorded ({recorded}); it fires "
                            "only if the client sends more than the tape holds")
    return warnings


def _http_error(code: int) -> dict:
    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = f"HTTP {code}"
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600 if code < 500 else -32603, "message": phrase}}


def _answer(status: int, body: str | None, headers: list, default: dict) -> tuple[int, list, bytes]:
    """An HTTP answer of ours: the body as given (JSON when it reads as JSON, else text), or the default."""
    if body is None:
        return status, [*headers, ("content-type", "application/json")], _dumps(default)
    try:
        jsonrpc.loads(body)
        kind = "application/json"
    except ValueError:
        kind = "text/plain; charset=utf-8"
    return status, [*headers, ("content-type", kind)], body.encode()


def _dumps(value: Any) -> bytes:
    return json_form.dumps(value).encode()


def dry_run(editor: Editor, items: Iterable[dict]) -> Iterator[tuple[int, dict, Plan]]:
    """Where each edit would fire on a recorded tape: (seq, record, plan) for each client message an edit
    selects, the tape's messages fed to the editor as the client sent them."""
    for seq, r in enumerate(items):
        if records.is_http_request(r) and r.get("mcp"):
            session = r.get("session")
            plan = editor.plan(r.get("t", 0.0), r.get("msg"), r.get("method"), session)
        elif records.is_stdio_line(r) and r.get("dir") == records.C2S and isinstance(r.get("msg"), dict):
            plan = editor.plan(r.get("t", 0.0), r["msg"])
        else:
            if records.is_http_response(r) and r.get("session") and (r.get("status") or 500) < 400:
                editor.opened(r["session"])
            continue
        if plan:
            yield seq, r, plan


def describe(plan: Plan) -> str:
    """What a plan does, in a few words."""
    parts = []
    if plan.delay:
        parts.append(f"delay {plan.delay:g} s")
    if plan.exit:
        parts.append("exit the server")
    if plan.reset:
        parts.append("reset the connection")
    elif plan.status is not None:
        parts.append(f"answer HTTP {plan.status[0]}" + (" (the session is dead)" if plan.dead_session else ""))
    elif plan.error is not None:
        parts.append(f"answer JSON-RPC error {plan.error['error']['code']}")
    if plan.replaces_answer:
        return ", ".join(parts)  # the answer is ours: nothing of the recorded one goes out to change
    if plan.drop:
        parts.append("withhold the final response")
    if plan.drop_event:
        parts.append(f"drop SSE event {plan.drop_event}")
    if plan.close_after is not None:
        parts.append(f"close the stream after {plan.close_after} events")
    if plan.duplicate:
        parts.append("send the final response twice")
    if plan.malformed:
        parts.append(f"send the final response malformed ({plan.malformed})")
    return ", ".join(parts)
