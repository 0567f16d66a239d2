"""The edit language: an action, then key=value pairs, split like a shell line; parsed once, checked against
where the edits will run (stdio, live traffic).

    expire-session status=401 body="Unauthorized: Session not found" at=post:3
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any


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
    # an older server's answer to a 2026-07-28 client's probe (docs/negotiation.md: the variants met in the field)
    "refuse-discover": ("status", "code", "message", "body", "answer"),
    # the reverse: a server of 2026-07-28 only meeting an older client (its answer to initialize is given here)
    "modern-only": ("status", "code", "message", "body"),
}
REQUIRED = {"status": ("code",), "drop-event": ("n",), "close-stream": ("after",), "delay": ("seconds",)}
# Actions that play a server of another era: the request of the handshake they refuse (at= defaults to every one)
# and the keys one of which gives their answer. Their code= is a JSON-RPC error code, as error's is.
ERA_ACTIONS = {"refuse-discover": ("server/discover", ("status", "code", "answer")),
               "modern-only": ("initialize", ("status", "code"))}
_RPC_CODE = ("error", *ERA_ACTIONS)
REFUSE_ANSWERS = ("none", "exit")  # refuse-discover answer=: no answer at all; (stdio) the server exits
MALFORMED_KINDS = ("truncate", "not-json", "wrong-id")
SELECTORS = "post:N, METHOD#N, id:X, after:DURATION, session:N"

# Every method some MCP revision defines: the union of the `method` constants in the schema.json of 2024-11-05,
# 2025-03-26, 2025-06-18, 2025-11-25 and 2026-07-28. A selector naming another method that the tape never
# carried either cannot fire: a typo (`tools/cal`), refused before the run with the closest of these.
MCP_METHODS = frozenset({
    "completion/complete", "elicitation/create", "initialize", "logging/setLevel", "notifications/cancelled",
    "notifications/elicitation/complete", "notifications/initialized", "notifications/message",
    "notifications/progress", "notifications/prompts/list_changed", "notifications/resources/list_changed",
    "notifications/resources/updated", "notifications/roots/list_changed", "notifications/subscriptions/acknowledged",
    "notifications/tasks/status", "notifications/tools/list_changed", "ping", "prompts/get", "prompts/list",
    "resources/list", "resources/read", "resources/subscribe", "resources/templates/list", "resources/unsubscribe",
    "roots/list", "sampling/createMessage", "server/discover", "subscriptions/listen", "tasks/cancel", "tasks/get",
    "tasks/list", "tasks/result", "tools/call", "tools/list",
})
# A client may send these though the tape holds none: a replay opens a session for any initialize, and an "auto"
# client probes with server/discover before it falls back. Never warned about.
ALWAYS_SELECTABLE = ("initialize", "server/discover")

STDIO_ACTIONS = ("drop", "delay", "error", "malformed", "duplicate", "refuse-discover", "modern-only")
# Live traffic: what mitmproxy can do faithfully. A stream cut by the proxy would leave the real server's stream
# running behind the cut, so a resume would meet a server that never lost the client: refused, not approximated.
# Event-level edits work on live streams: the edited events are re-encoded as each one completes.
LIVE_REFUSED_WHY = {
    "close-stream": "live, the real server's stream would go on behind the cut and a resume would not be what a "
                    "server that closed the stream serves; record the tape, then replay it with this edit",
}

class EditError(ValueError):
    """A wrong edit: the message names the bad part and the valid choices."""


# a selector's kind and what its value is, as JSON holds it (to_json, from_json)
_SELECTOR_KINDS = {"post": int, "method": list, "id": str, "after": (int, float), "session": int}


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


# Parsed once, never changed: how often an edit fired is the Editor's to count, so edits parsed once can drive
# several Editors. eq=False: an edit is equal only to itself and hashed by identity (an Editor keys its counts by it).
@dataclass(frozen=True, eq=False)
class Edit:
    text: str  # as the user wrote it
    action: str
    at: Selector
    times: int | None  # None: all
    options: dict[str, Any]

    def to_json(self) -> dict:
        """The parsed edit as JSON data, for another process (`--edits-json`): it is rebuilt by from_json, never
        parsed again."""
        return {"text": self.text, "action": self.action, "at": [self.at.kind, self.at.value], "times": self.times,
                "options": self.options}

    @classmethod
    def from_json(cls, data: Any) -> Edit:
        """An edit from to_json's data. The data comes from another process of mcptape's, but is checked as any
        input is: a shape to_json cannot write is an EditError."""
        try:
            text, action, (kind, value), times, options = (data["text"], data["action"], data["at"],
                                                           data["times"], dict(data["options"]))
            if not isinstance(text, str) or action not in ACTIONS or not isinstance(value, _SELECTOR_KINDS[kind]):
                raise ValueError
            if kind == "method":
                value = (str(value[0]), int(value[1]))
            if "headers" in options:
                options["headers"] = [(str(name), str(header)) for name, header in options["headers"]]
            if not (times is None or isinstance(times, int)) or not set(options) <= {*ACTIONS[action], "headers"}:
                raise ValueError
            if not all(isinstance(v, (str, int, float)) for k, v in options.items() if k != "headers"):
                raise ValueError
        except (KeyError, TypeError, ValueError):
            raise EditError(f"--edits-json: {str(data)[:80]!r} is not an edit as mcptape writes one") from None
        return cls(text, action, Selector(kind, value), times, options)


def _words(text: str) -> tuple[str, list[str]]:
    """An edit's words, and its text without a trailing comment: as in a shell, a `#` that begins a word begins a
    comment (the one in `tools/call#2` does not)."""
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split, lexer.commenters = True, ""
    words: list[str] = []
    while True:
        start = lexer.instream.tell()
        word = lexer.get_token()
        if word is None:
            return text, words
        if word.startswith("#"):
            return text[:start].rstrip(), words
        words.append(word)


def parse(text: str) -> Edit:
    try:
        text, words = _words(text)
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
    if action in ERA_ACTIONS:
        method, needs = ERA_ACTIONS[action]
        if not set(needs) & options.keys():
            raise EditError(f"edit {text!r}: {action} needs {'= or '.join(needs)}= (its answer, e.g. "
                            f"'{action} status=400')")
        options.setdefault("at", Selector("method", (method, 1)))  # every such request, unless told
        options.setdefault("times", None)  # a server of another era refuses each one
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


def dumps(edits: list[Edit]) -> str:
    """Parsed edits as one JSON text, for a process of mcptape's that takes `--edits-json`."""
    return json.dumps([edit.to_json() for edit in edits])


def loads(text: str) -> list[Edit]:
    """dumps' edits, rebuilt (never parsed as edit-language text again)."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, list):
        raise EditError(f"--edits-json: {text[:80]!r} is not a JSON list of edits")
    return [Edit.from_json(item) for item in data]


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
    if key == "answer":
        if value in REFUSE_ANSWERS:
            return value
        raise bad(" or ".join(REFUSE_ANSWERS))
    if key in ("status", "code") and not (key == "code" and action in _RPC_CODE):
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


LEGACY_REFUSED_WHY = {
    "close-stream": "a legacy HTTP+SSE session's channel is its only stream: closing it ends the session "
                    "(2024-11-05 has no Last-Event-ID resume)",
}


def check_transport(edits: list[Edit], stdio: bool = False, live: bool = False, legacy: bool = False) -> None:
    """Refuse what cannot be done where the edits are going: HTTP-only parts on stdio, unfaithful actions live,
    what a legacy HTTP+SSE session has no room for."""
    for edit in edits:
        if legacy and edit.action in LEGACY_REFUSED_WHY:
            raise EditError(f"edit {edit.text!r}: {edit.action} cannot apply to this tape: "
                            f"{LEGACY_REFUSED_WHY[edit.action]}")
        if edit.action in ERA_ACTIONS and stdio and {"status", "body"} & edit.options.keys():
            more = ", answer=none or answer=exit" if edit.action == "refuse-discover" else ""
            raise EditError(f"edit {edit.text!r}: status= and body= are HTTP-only; on stdio refuse with code= (an "
                            f"error line){more}")
        if edit.action == "refuse-discover" and live and not stdio and edit.options.get("answer") == "exit":
            raise EditError(f"edit {edit.text!r}: answer=exit needs a server mcptape runs (stdio, or a replay); "
                            "live over HTTP use answer=none (no answer) or status=")
        if stdio and edit.action not in STDIO_ACTIONS:
            raise EditError(f"edit {edit.text!r}: {edit.action} is HTTP-only; on stdio use {', '.join(STDIO_ACTIONS)}")
        if stdio and edit.at.kind in ("post", "session"):
            raise EditError(f"edit {edit.text!r}: at={edit.at} is HTTP-only; on stdio select with METHOD#N, id:X "
                            "or after:DURATION")
        if live and edit.action in LIVE_REFUSED_WHY:
            raise EditError(f"edit {edit.text!r}: {edit.action} is not applied to live traffic: "
                            f"{LIVE_REFUSED_WHY[edit.action]}")
