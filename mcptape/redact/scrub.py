"""The fields a peer can fill, and one walk over a record that finds every secret in them: by its name (names.py)
or its shape (shapes.py). The Redactor replaces what it finds with pseudonyms; `secrets_in` only lists it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ahocorasick_rs import AhoCorasick, BytesAhoCorasick

from ..wire import json_spans, pointer
from .argv import argv_secrets
from .names import (KEY_LITERALS, NEVER_KEYS, PROTOCOL_KEYS, REDACT_PATH, SENSITIVE_HEADER, SENSITIVE_KEY,
                    SENSITIVE_QUERY, header_is_secret, is_session, key_is_sensitive, query_is_secret)
from .pseudonym import SCHEMES, is_pseudonym
from .shapes import ANCHORS, SHORTEST, spans

# One table, read by the recorder, `redact`, `check --require-redacted` and `bundle` alike (through Scrub): every
# field of every record kind (tape/records.py) that holds text a client, a server or a capture file chose. Fields
# not here are mcptape's own (kinds, times, numbers, flags, edit texts). An SSE `retry` is a number; a `retry:`
# line that is not one is told in `problem`, which is scanned.
TEXT, JSON_VALUE, RAW, PAIRS, TEXTS, SOURCE = "text", "json", "raw", "pairs", "texts", "source"
FIELDS = {
    # free text, scanned for secret shapes; a session id or an SSE event id only ever changes when it is
    # token-shaped, and then to the same pseudonym wherever it stands (header, record field, Last-Event-ID), so
    # replay, resume, diff and verify still pair them up
    "path": TEXT, "method": TEXT, "reason": TEXT, "protocol_version": TEXT, "session": TEXT, "id": TEXT,
    "event": TEXT, "data": TEXT, "text": TEXT, "problem": TEXT, "detail": TEXT, "error": TEXT, "rewritten_to": TEXT,
    "msg": JSON_VALUE, "withheld": JSON_VALUE,  # JSON: keys and values, sensitive keys, JSON inside strings
    "raw": RAW,  # bytes that are not JSON
    "headers": PAIRS, "query": PAIRS,  # names and values; a value under a credential's name whole
    "comments": TEXTS,  # SSE comment lines
    "source": SOURCE,  # where a recording came from: a URL, or a server's command line
}
_SECRET, _SCAN = "secret", "scan"  # how a header's or query parameter's value is treated
_NESTED_JSON = 4  # how deep JSON inside a string inside JSON is opened
# What `Scrub.clean` looks for in a body's text before its message is walked. Any secret the walk replaces is a
# shape (which starts with an anchor) or sits under a credential key (which holds a key literal), so its text holds
# one of these, lowered, unless an escape spells it (`\u0074oken`, `:\/\/`; JSON inside strings is escaped once
# more, still with a backslash-u) or a letter stands in for an ASCII one when case is folded, as str.lower() and the
# shapes' case-insensitive parts do: İ ı ſ and the Kelvin sign (all of them, checked over every code point).
_SUSPECT = sorted({*ANCHORS, *KEY_LITERALS})
_DISGUISES = {  # by the type of the text: its automaton, the escapes, the folded letters
    str: (AhoCorasick(_SUSPECT), ("\\u", "\\/"), ("\u0130", "\u0131", "\u017f", "\u212a")),
    bytes: (BytesAhoCorasick([s.encode() for s in _SUSPECT]), (b"\\u", b"\\/"),
            tuple(f.encode() for f in "\u0130\u0131\u017f\u212a")),
}


def secrets_in(records: Iterable[dict]) -> Iterator[tuple[int, str, str]]:
    """(record number, JSON pointer, rule name) for each secret still in a tape's records (numbered from 0, the
    first record after the header, as `seq`): a value under a sensitive header, query parameter, key or command
    line flag that is not a pseudonym, and each secret-shaped string, in any field of FIELDS. The pointer names
    the record's field (`/msg/params/…`)."""
    found: dict[str, str] = {}  # pointer -> the first rule that found it (a flag's value is a shape too)
    scrub = Scrub(lambda path, value, rule: found.setdefault(pointer.encode(path), rule) and value)
    for number, record in enumerate(records):
        scrub.record(record)
        for where, rule in found.items():
            yield number, where, rule
        found.clear()


Replace = Callable[[list, Any, str], Any]  # (path, value, rule) -> what goes in its place


class Scrub:
    """One pass over a record's fields (FIELDS): each secret found goes to `replace` with its path and rule; what
    it returns takes its place (the Redactor's pseudonym, or the value itself for secrets_in, which only lists
    them). Containers are copied only where something changed. `keep`/`extra` are JSON pointers (as lists, `*`
    for any one step) relative to each message: exempted, or redacted whole. `cached`: short texts seen before
    (header values, method names, keys: a session repeats them) are not scanned again. `extra_headers`: more
    header names whose value is a secret."""

    __slots__ = ("replace", "keep", "extra", "cache", "extra_headers", "names", "seen", "depth", "edits")

    def __init__(self, replace: Replace, keep: list[list[str]] = (), extra: list[list[str]] = (),
                 cached: bool = False, extra_headers: Iterable[str] = ()) -> None:
        self.replace, self.keep, self.extra = replace, keep, extra
        self.cache: dict[str, str] | None = {} if cached else None
        self.extra_headers = frozenset(extra_headers)
        self.names: dict[str, dict[str, str]] = {"headers": {}, "query": {}}  # name -> how its value is treated
        self.seen: dict[str, dict] = {"headers": {}, "query": {}}  # cached: (name, value) -> as redacted
        self.depth = 0  # JSON opened inside strings, now
        self.edits: list[tuple[int, int, str]] = []  # the tokens to replace in the JSON text opened last (_nested)

    # -- records ---------------------------------------------------------------------------------------------------

    def record(self, record: dict, done: frozenset[str] = frozenset()) -> dict:
        """`done`: fields the caller already redacted (the result is the same: redaction is idempotent)."""
        out = None
        for name, value in record.items():
            how = FIELDS.get(name)
            if how is None or value is None or name in done:
                continue
            if how is TEXT:
                new = self.text(value, [name]) if isinstance(value, str) and len(value) >= SHORTEST else value
            elif how is JSON_VALUE:
                new = self.json(value, [name])
            elif how is PAIRS:
                new = self.pairs(value, name) if isinstance(value, list) else value
            elif how is RAW:
                new = self.raw(value, [name]) if isinstance(value, bytes) else value
            elif how is TEXTS:
                new = self.texts(value, [name]) if isinstance(value, list) else value
            else:
                new = self.source(value, [name])
            if new is not value:
                out = out or dict(record)
                out[name] = new
        return record if out is None else out

    def texts(self, values: list, path: list) -> list:
        out = None
        for i, item in enumerate(values):
            if isinstance(item, str) and len(item) >= SHORTEST:
                path.append(i)
                new = self.text(item, path)
                path.pop()
                if new is not item:
                    out = out or list(values)
                    out[i] = new
        return values if out is None else out

    def raw(self, data: bytes, path: list) -> bytes:
        if len(data) < SHORTEST:
            return data
        text = data.decode("latin-1")  # a byte a character: any bytes, and the patterns are ASCII
        redacted = self.text(text, path)
        return data if redacted is text else redacted.encode("latin-1")

    def pairs(self, pairs: list, field: str) -> list:
        """Headers or query parameters, [name, value] each: a value under a credential's name whole (an auth
        scheme kept in front), any other name and value scanned. Cached, a pair seen before (most headers repeat
        on every request of a client) is not read again."""
        seen = self.seen[field] if self.cache is not None else None
        out = None
        for i, pair in enumerate(pairs):
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
                continue
            name, value = pair
            if not isinstance(name, str) or not isinstance(value, str):
                continue
            new = seen.get((name, value)) if seen is not None else None
            if new is None:
                new = self._pair(name, value, field, i)
                if seen is not None and len(name) + len(value) <= 512:  # short pairs repeat; memory stays small
                    if len(seen) >= 4096:  # a stream of new values (a date, a counter) must not grow it
                        seen.clear()
                    seen[name, value] = new
            if new[1] != value or new[0] != name:
                out = out or [list(p) for p in pairs]
                out[i] = list(new)
        return pairs if out is None else out

    def _pair(self, name: str, value: str, field: str, i: int) -> tuple[str, str]:
        names = self.names[field]
        how = names.get(name)
        if how is None:
            secret = self._header_is_secret(name) if field == "headers" else query_is_secret(name)
            how = _SECRET if secret and not is_session(field, name) else _SCAN
            if len(names) < 1024:
                names[name] = how
        path = [field, i, 1]
        if how is _SECRET:
            new_value = value if not value or is_pseudonym(value) else self._secret_value(path, value, field)
        else:
            new_value = self.text(value, path) if len(value) >= SHORTEST else value
        new_name = name
        if len(name) >= SHORTEST:
            new_name = self.cache.get(name) if self.cache is not None else None
            if new_name is None:
                path[2] = 0
                new_name = self.text(name, path)
        return new_name, new_value

    def _header_is_secret(self, name: str) -> bool:
        return header_is_secret(name) or name.lower() in self.extra_headers

    def _secret_value(self, path: list, value: str, field: str) -> str:
        rule = SENSITIVE_HEADER if field == "headers" else SENSITIVE_QUERY
        if field == "headers":
            lowered = value.lower()
            for scheme in SCHEMES:
                if lowered.startswith(scheme):
                    rest = value[len(scheme):]
                    return value if is_pseudonym(rest) else value[: len(scheme)] + self.replace(path, rest, rule)
        return self.replace(path, value, rule)

    def source(self, source: Any, path: list) -> Any:
        """Where a recording came from: an upstream URL, or a server's command line, whose options carry secrets
        in any of their forms: `--api-key VALUE`, `--auth=VALUE`, `-k VALUE`, `-pVALUE`."""
        if isinstance(source, dict) and isinstance(source.get("stdio"), list):
            argv = source["stdio"]
            changed = list(argv)
            for i, part in argv_secrets(argv):
                changed[i] = part[0] + self.replace([*path, "stdio", i], part[1], SENSITIVE_KEY)
            if changed != argv:
                source = {**source, "stdio": changed}
        return self.json(source, path)

    # -- JSON --------------------------------------------------------------------------------------------------------

    def json(self, value: Any, path: list) -> Any:
        """A body: one message, a batch, or any JSON."""
        if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
            out = None
            for i, message in enumerate(value):
                path.append(i)
                new = self.message(message, path)
                path.pop()
                if new is not message:
                    out = out or list(value)
                    out[i] = new
            return value if out is None else out
        return self.message(value, path)

    def message(self, value: Any, path: list) -> Any:
        if not isinstance(value, dict):
            return self.value(value, path, len(path), False)
        return self._object(value, path, len(path), False, top=True)

    def _object(self, value: dict, path: list, base: int, sensitive: bool, top: bool = False,
                spans: list | None = None) -> dict:
        out = None
        renamed = None
        for n, (key, item) in enumerate(value.items()):
            if top and key in PROTOCOL_KEYS or key in NEVER_KEYS:
                continue
            if isinstance(key, str) and len(key) >= SHORTEST:  # a key is text a peer chose, too
                new_key = self.cache.get(key) if self.cache is not None else None  # keys repeat: most are here
                if new_key is None:
                    path.append(key)
                    new_key = self.text(key, path)
                    path.pop()
                if new_key != key:
                    renamed = renamed or {}
                    renamed[key] = new_key
                    if spans is not None:
                        self.edits.append((*spans[n][0], new_key))
            if not top and (item is None or item is True or item is False):
                continue
            path.append(key)
            new = self.value(item, path, base, sensitive or isinstance(key, str) and key_is_sensitive(key),
                             None if spans is None else spans[n][1])
            path.pop()
            if new is not item:
                out = out or dict(value)
                out[key] = new
        out = value if out is None else out
        return out if renamed is None else {renamed.get(k, k): v for k, v in out.items()}

    def value(self, value: Any, path: list, base: int, sensitive: bool, spans: Any = None) -> Any:
        """`spans`: where each of value's tokens stands in the JSON text it was read from (json_spans), when it
        was read from a string (_nested): each token that changes is then also noted in `edits`."""
        if self.keep or self.extra:
            here = path[base:]
            if any(_hits(p, here) for p in self.keep):
                return value
            sensitive = sensitive or any(_hits(p, here) for p in self.extra)
        if isinstance(value, str):
            if sensitive:
                new = value if not value or is_pseudonym(value) else self.replace(path, value, self._why(path, base))
            elif len(value) < SHORTEST:
                return value
            else:
                new = self.text(value, path)
        elif isinstance(value, dict):
            return self._object(value, path, base, sensitive, spans=spans)
        elif isinstance(value, list):
            out = None
            for i, item in enumerate(value):
                path.append(i)
                new = self.value(item, path, base, sensitive, None if spans is None else spans[i])
                path.pop()
                if new is not item:
                    out = out or list(value)
                    out[i] = new
            return value if out is None else out
        elif sensitive and isinstance(value, (int, float)) and not isinstance(value, bool):
            new = self.replace(path, str(value), self._why(path, base))  # a PIN is a secret too
        else:
            return value
        if spans is not None and new is not value:
            self.edits.append((*spans, new))
        return new

    def _why(self, path: list, base: int) -> str:
        if self.extra and any(_hits(p, path[base:base + len(p)]) for p in self.extra):
            return REDACT_PATH
        return SENSITIVE_KEY

    # -- text --------------------------------------------------------------------------------------------------------

    def clean(self, text: bytes | str) -> bool:
        """Whether what was read from `text` (a message, raw bytes, SSE data) holds nothing this walk would replace:
        no anchor of a shape nor credential word in it (_SUSPECT), and no --redact-path. Then it need not be walked:
        most messages hold none, and one search of their text costs a fraction of the walk. A hit proves nothing:
        the walk decides."""
        if self.extra:
            return False
        suspect, escapes, folded = _DISGUISES[type(text)]
        if any(e in text for e in escapes) or not text.isascii() and any(f in text for f in folded):
            return False
        try:
            return not suspect.find_matches_as_indexes(text.lower())
        except UnicodeEncodeError:  # a lone surrogate: walked, as spans() reads it
            return False

    def text(self, value: str, path: list) -> str:
        """`value` with each secret in it replaced where it stands; `value` itself when it holds none (callers tell
        a change by identity: an equal text from the cache is not one)."""
        cache = self.cache
        if cache is not None and (seen := cache.get(value)) is not None:
            return value if seen == value else seen
        redacted = self._nested(value, path) if value[0] in "{[" or value[-1:] in "}]" else None
        if redacted is None:
            found = spans(value)
            if found:
                parts, last = [], 0
                for start, end, rule in found:
                    parts += [value[last:start], self.replace(path, value[start:end], rule)]
                    last = end
                parts.append(value[last:])
                redacted = "".join(parts)
            else:
                redacted = value
        if cache is not None and len(value) <= 512 and len(cache) < 4096:
            cache[value] = redacted
        return redacted

    def _nested(self, value: str, path: list) -> str | None:
        """JSON inside a string (a tool's text content, an argument, a header): opened and walked as JSON, and each
        token that held a secret replaced where it stands, every other character kept (never written again from
        the values: a server's spacing, escapes, key order and number spelling are its own). None when it is not
        a JSON object or array."""
        if self.depth >= _NESTED_JSON:
            return None
        parsed = json_spans.parse(value, located=False)
        if parsed is None:
            return None
        decoded, spans = parsed
        self.depth += 1
        outer, self.edits = self.edits, []
        try:
            if spans is None:  # read without places: walked once to see whether anything in it is secret
                if self.value(decoded, path, len(path), False) is decoded:
                    return value
                decoded, spans = json_spans.parse(value)
            self.value(decoded, path, len(path), False, spans)
            edits = self.edits
        finally:
            self.depth -= 1
            self.edits = outer
        return json_spans.splice(value, edits) if edits else value


def _hits(steps: list[str], path: list) -> bool:
    return len(steps) == len(path) and all(p == "*" or p == str(q) for p, q in zip(steps, path))
