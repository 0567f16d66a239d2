"""Edits: faults injected on purpose (an expired session, a 401, a dropped response, a cut stream, a delay).

One language, parsed once here, decided here without I/O, applied by the replay (replay/http.py, replay/stdio.py)
and by the live proxy (capture/mitm.py). An edit is a shell-like line: an action, then key=value pairs:

    expire-session status=401 body="Unauthorized: Session not found" at=post:3

`at=` says where it fires, `times=N|all` (default 1) on how many matching client messages. Selectors count over
the whole run, across sessions, as the client sent its messages.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from .tape import json_form
from .wire import jsonrpc

# action -> the keys it takes besides at= and times=
ACTIONS: dict[str, tuple[str, ...]] = {
    "expire-session": ("status", "body"),
    "restart-server": ("status", "body"),
    "status": ("code", "body", "header"),
    "drop": (),
    "drop-event": ("n",),
    "close-stream": ("after",),
    "delay": ("seconds",),
    "reset": (),
    "error": ("code", "message"),
    "malformed": ("kind",),
    "duplicate": (),
}
REQUIRED = {"status": ("code",), "drop-event": ("n",), "close-stream": ("after",), "delay": ("seconds",)}
MALFORMED_KINDS = ("truncate", "not-json", "wrong-id")
SELECTORS = "post:N, METHOD#N, id:X, after:DURATION, session:N"

STDIO_ACTIONS = ("drop", "delay", "error", "malformed", "duplicate")
# Live traffic: what mitmproxy can do faithfully. A stream cut by the proxy would leave the real server's stream
# running behind the cut, so a resume would meet a server that never lost the client: refused, not approximated.
# Event-level edits work on live streams: the edited events are re-encoded as each one completes.
LIVE_REFUSED_WHY = {
    "close-stream": "live, the real server's stream would go on behind the cut and a resume would not be what a "
                    "server that closed the stream serves; record the tape, then replay it with this edit",
}

SESSION_NOT_FOUND = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}


class EditError(ValueError):
    """A wrong edit: the message names the bad part and the valid choices."""


@dataclass(frozen=True)
class Selector:
    kind: str  # post | method | id | after | session
    value: Any  # N, (METHOD, N), X, seconds, N

    def __str__(self) -> str:
        if self.kind == "method":
            return f"{self.value[0]}#{self.value[1]}"
        if self.kind == "after":
            return f"after:{self.value:g}s"
        return f"{self.kind}:{self.value}"


@dataclass
class Edit:
    text: str  # as the user wrote it
    action: str
    at: Selector
    times: int | None  # None: all
    options: dict[str, Any]
    fired: int = 0

    @property
    def http_only(self) -> bool:
        return self.action not in STDIO_ACTIONS or self.at.kind in ("post", "session")


def parse(text: str) -> Edit:
    try:
        words = shlex.split(text, comments=False)
    except ValueError as e:
        raise EditError(f"edit {text!r}: {e} (quote values as in a shell: body=\"Session not found\")") from None
    if not words:
        raise EditError("an empty edit: write an action and at=SELECTOR, e.g. 'drop at=tools/call#2'")
    action, pairs = words[0], words[1:]
    if action not in ACTIONS:
        raise EditError(f"edit {text!r}: unknown action {action!r} (choose from {', '.join(ACTIONS)})")
    allowed = ("at", "times", *ACTIONS[action])
    options: dict[str, Any] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq:
            raise EditError(f"edit {text!r}: {pair!r} is not key=value")
        if key not in allowed:
            raise EditError(f"edit {text!r}: {action} takes no {key!r} (it takes {', '.join(allowed)})")
        if key == "header":
            options.setdefault("headers", []).append(_header(text, value))
        else:
            options[key] = _value(text, action, key, value)
    if "at" not in options:
        raise EditError(f"edit {text!r}: at=SELECTOR is required ({SELECTORS})")
    for key in REQUIRED.get(action, ()):
        if key not in options:
            raise EditError(f"edit {text!r}: {action} needs {key}=")
    at, times = options.pop("at"), options.pop("times", 1)
    return Edit(text, action, at, times, options)


def parse_file(path: str) -> list[Edit]:
    """One edit per line; blank lines and `#` comments are skipped."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise EditError(f"{path}: cannot read the edits file: {e.strerror}") from None
    edits = []
    for number, line in enumerate(lines, 1):
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                edits.append(parse(line))
            except EditError as e:
                raise EditError(f"{path}:{number}: {e}") from None
    return edits


def _value(text: str, action: str, key: str, value: str) -> Any:
    def bad(expected: str) -> EditError:
        return EditError(f"edit {text!r}: {key}={value!r}: expected {expected}")

    if key == "at":
        return _selector(text, value)
    if key == "times":
        if value == "all":
            return None
        if value.isdigit() and int(value) > 0:
            return int(value)
        raise bad("a positive number or 'all'")
    if key in ("status", "code") and action != "error":
        if value.isdigit() and 100 <= int(value) <= 599:
            return int(value)
        raise bad("an HTTP status from 100 to 599")
    if key == "code":  # a JSON-RPC error code
        if re.fullmatch(r"-?\d+", value):
            return int(value)
        raise bad("an integer JSON-RPC error code, e.g. -32603")
    if key in ("n", "after"):
        if value.isdigit() and (int(value) > 0 or key == "after"):
            return int(value)
        raise bad("a positive number" if key == "n" else "a number of events (0 or more)")
    if key == "seconds":
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if seconds >= 0:
            return seconds
        raise bad("a number of seconds, e.g. 2.5")
    if key == "kind":
        if value in MALFORMED_KINDS:
            return value
        raise bad(" or ".join(MALFORMED_KINDS))
    return value  # body, message: text as given


def _header(text: str, value: str) -> tuple[str, str]:
    name, colon, rest = value.partition(":")
    if not colon or not name.strip():
        raise EditError(f"edit {text!r}: header={value!r}: expected \"NAME: VALUE\"")
    return name.strip(), rest.strip()


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)?")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}


def _selector(text: str, value: str) -> Selector:
    def bad(why: str) -> EditError:
        return EditError(f"edit {text!r}: at={value!r}: {why} (selectors: {SELECTORS})")

    prefix, colon, rest = value.partition(":")
    if colon and prefix in ("post", "session"):
        if rest.isdigit() and int(rest) > 0:
            return Selector(prefix, int(rest))
        raise bad(f"{prefix}: takes a number from 1")
    if colon and prefix == "id":
        if rest:
            return Selector("id", rest)
        raise bad("id: needs the JSON-RPC id")
    if colon and prefix == "after":
        m = _DURATION.fullmatch(rest)
        if m:
            return Selector("after", float(m.group(1)) * _UNIT[m.group(2)])
        raise bad("after: takes a duration like 500ms, 30s, 10m or 1h")
    method, hash_, number = value.partition("#")
    if "/" not in method and method not in ("initialize", "ping"):
        raise bad("not a selector; a method is an MCP method such as tools/call, initialize or ping")
    if hash_ and not (number.isdigit() and int(number) > 0):
        raise bad(f"{method}#N takes a number from 1")
    return Selector("method", (method, int(number) if hash_ else 1))


def check_transport(edits: list[Edit], stdio: bool = False, live: bool = False) -> None:
    """Refuse what cannot be done where the edits are going: HTTP-only parts on stdio, unfaithful actions live."""
    for edit in edits:
        if stdio and edit.action not in STDIO_ACTIONS:
            raise EditError(f"edit {edit.text!r}: {edit.action} is HTTP-only; on stdio use {', '.join(STDIO_ACTIONS)}")
        if stdio and edit.at.kind in ("post", "session"):
            raise EditError(f"edit {edit.text!r}: at={edit.at} is HTTP-only; on stdio select with METHOD#N, id:X "
                            "or after:DURATION")
        if live and edit.action in LIVE_REFUSED_WHY:
            raise EditError(f"edit {edit.text!r}: {edit.action} is not applied to live traffic: "
                            f"{LIVE_REFUSED_WHY[edit.action]}")


# -- deciding --------------------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """What the edits do to one client message. Empty when nothing fires."""

    fired: list[Edit] = field(default_factory=list)
    dead_session: bool = False  # the request carried a session an edit had killed earlier
    status: tuple[int, list[tuple[str, str]], bytes] | None = None  # answer with this HTTP status instead
    error: dict | None = None  # answer with this JSON-RPC error instead
    reset: bool = False
    drop: bool = False  # withhold the final response
    delay: float = 0.0
    drop_event: int | None = None
    close_after: int | None = None
    duplicate: bool = False
    malformed: str | None = None

    def __bool__(self) -> bool:
        return bool(self.fired)

    @property
    def replaces_answer(self) -> bool:
        """The client gets an answer of ours, and the recorded (or real) answer stays unused."""
        return self.status is not None or self.error is not None or self.reset

    @property
    def changes_events(self) -> bool:
        return bool(self.drop or self.drop_event or self.close_after is not None or self.duplicate or self.malformed)


class Editor:
    """Sees each client message in the order the client sent it and says which edits fire on it. It also keeps
    the sessions an edit killed: every later request carrying a dead id gets the same answer, until the client
    opens a new session."""

    def __init__(self, edits: list[Edit]) -> None:
        self.edits = edits
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
            if (edit.times is None or edit.fired < edit.times) and self._selects(edit.at, t, msg, http_method,
                                                                                    session):
                edit.fired += 1
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
            answer = _answer(status, o.get("body"), [], SESSION_NOT_FOUND if status == 404 else None)
            victims = {session} if edit.action == "expire-session" else {*self.alive, session}
            for victim in victims - {None}:
                self.dead[victim] = (edit, answer)
                self.alive.discard(victim)
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

    def not_applied(self, plan: Plan, actions: tuple[str, ...], why: str) -> None:
        """Those of the plan's edits that could not be done on this answer do not count as fired."""
        for edit in plan.fired:
            if edit.action in actions:
                edit.fired -= 1
                self.why_not.setdefault(edit.text, why)

    def unfired(self) -> list[str]:
        """Warnings for the edits that never fired, for the end of a run."""
        return [f"edit {e.text!r} never fired" + (f": {self.why_not[e.text]}" if e.text in self.why_not else "")
                for e in self.edits if e.fired == 0]


def _http_error(code: int) -> dict:
    from http import HTTPStatus

    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = f"HTTP {code}"
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600 if code < 500 else -32603, "message": phrase}}


def _answer(status: int, body: str | None, headers: list, default: dict | None) -> tuple[int, list, bytes]:
    """An HTTP answer of ours: the body as given (JSON when it reads as JSON, else text), or the default."""
    if body is None:
        return status, [*headers, ("content-type", "application/json")], _dumps(default) if default else b""
    try:
        jsonrpc.loads(body)
        kind = "application/json"
    except ValueError:
        kind = "text/plain; charset=utf-8"
    return status, [*headers, ("content-type", kind)], body.encode()


def _dumps(value: Any) -> bytes:
    return json_form.dumps(value).encode()


def dry_run(editor: Editor, items) -> Any:
    """Where each edit would fire on a recorded tape: (seq, record, plan) for each client message an edit
    selects, the tape's messages fed to the editor as the client sent them."""
    from .tape import records

    for seq, r in enumerate(items):
        kind = r.get("kind")
        if kind == records.HTTP_REQUEST and r.get("mcp"):
            session = r.get("session")
            plan = editor.plan(r.get("t", 0.0), r.get("msg"), r.get("method"), session)
        elif kind == records.STDIO_LINE and r.get("dir") == records.C2S and isinstance(r.get("msg"), dict):
            plan = editor.plan(r.get("t", 0.0), r["msg"])
        else:
            if kind == records.HTTP_RESPONSE and r.get("session") and (r.get("status") or 500) < 400:
                editor.opened(r["session"])
            continue
        if plan:
            yield seq, r, plan


def describe(plan: Plan) -> str:
    """What a plan does, in a few words."""
    parts = []
    if plan.delay:
        parts.append(f"delay {plan.delay:g} s")
    if plan.reset:
        parts.append("reset the connection")
    elif plan.status is not None:
        parts.append(f"answer HTTP {plan.status[0]}" + (" (the session is dead)" if plan.dead_session else ""))
    elif plan.error is not None:
        parts.append(f"answer JSON-RPC error {plan.error['error']['code']}")
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


# -- changing a response's messages ---------------------------------------------------------------------------------


def final_response(msg: Any, request_id: Any) -> bool:
    return (isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg)
            and jsonrpc.id_key(msg.get("id")) == jsonrpc.id_key(request_id))


def malform(msg: dict, kind: str) -> str:
    """The final response as text, broken the way asked."""
    text = json_form.dumps(msg)
    if kind == "truncate":
        return text[: max(1, len(text) // 2)]
    if kind == "not-json":
        return "mcptape: this is not JSON"
    wrong = {**msg, "id": f"mcptape-wrong-id-{msg.get('id')}"}
    return _dumps(wrong).decode()


class StreamEditor:
    """The event-level edits of one response, applied event by event as the events pass (live, or replayed):
    `feed` takes one SSE event record (or a stdio message as {"msg": …}) and returns what the client gets instead."""

    def __init__(self, plan: Plan, request_id: Any) -> None:
        self.plan = plan
        self.request_id = request_id
        self.count = 0
        self.withheld: list[Any] = []
        self.notes: list[str] = []

    def feed(self, event: dict) -> list[dict]:
        plan = self.plan
        self.count += 1
        msg = event.get("msg")
        is_final = final_response(msg, self.request_id)
        if plan.drop_event == self.count:
            self.withheld.append(msg if "msg" in event else event.get("data"))
            self.notes.append(f"dropped SSE event {self.count}")
            return []
        if is_final and plan.drop:
            self.withheld.append(msg)
            self.notes.append("withheld the final response")
            return []
        if is_final and plan.malformed:
            event = {k: v for k, v in event.items() if k != "msg"}
            event["data"] = malform(msg, plan.malformed)
            self.notes.append(f"sent the final response malformed ({plan.malformed})")
        if is_final and plan.duplicate:
            self.notes.append("sent the final response twice")
            return [event, {**event, "id": f"{event['id']}-again"} if "id" in event else event]
        return [event]


@dataclass
class EditedEvents:
    """A response's SSE events after the edits: what to send, and what the edits held back."""

    events: list[dict]
    rest: list[dict] | None = None  # close-stream: the events a resume gets (None: the stream was not cut)
    withheld: list[Any] = field(default_factory=list)  # messages the client never gets
    notes: list[str] = field(default_factory=list)  # what was done, for the log


def edit_events(events: list[dict], plan: Plan, request_id: Any, stream: str) -> EditedEvents:
    """Apply the event-level edits to a whole response's SSE events (or stdio messages as {"msg": …}). `stream`
    names the stream when event ids have to be made up for a resume."""
    editor = StreamEditor(plan, request_id)
    out = [sent for event in events for sent in editor.feed(event)]
    edited = EditedEvents(out, None, editor.withheld, editor.notes)
    if plan.close_after is not None:
        kept = [e for e in out[: plan.close_after] if not final_response(e.get("msg"), request_id)]
        edited.rest = [e for e in out if all(e is not k for k in kept)]
        if not any("id" in e for e in out):
            kept = [{**e, "id": f"{stream}-{i}"} for i, e in enumerate(kept, 1)]
            kept.insert(0, {"id": f"{stream}-0", "data": ""})
            edited.notes.append("the tape has no SSE event ids: added them and a priming event for the resume")
        edited.events = kept
        edited.notes.append(f"closed the stream after {plan.close_after} events, without the final response; "
                            "a Last-Event-ID resume gets the rest")
    return edited
