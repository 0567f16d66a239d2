"""Keep secrets out of tapes. Before anything is written, credentials are replaced by pseudonyms that are stable
within one recording run (same secret -> same pseudonym), so a reader still sees that two requests used the same
token without learning it: in every field a peer can fill (FIELDS: headers and query strings, names and values;
JSON-RPC messages of every record kind, keys and values, JSON inside strings; bodies that are not JSON; SSE ids,
event names and comments; status reasons, problem texts, stderr lines, URLs, a server's command line) by two kinds
of rule (docs/redaction.md):

- a value under a sensitive key (`token`, `api_key`, `clientSecret`, …; case- and separator-insensitive) is
  replaced whole;
- a secret-shaped string anywhere (bearer tokens, `sk-…` keys, JWTs, cloud, GitHub, GitLab and Slack tokens, PEM
  private keys, credentials in URLs, `password=…` assignments) is replaced where it stands.

Never touched: JSON-RPC ids, schema positions (`inputSchema`, `outputSchema`), progress tokens and pagination
cursors: they carry no credential, and replay, diff and check rely on them. Session ids and SSE event ids change
only when token-shaped, to the one pseudonym that secret gets everywhere in the run.

The pseudonym is an HMAC under a random key that lives only in memory: a tape holds no material to brute-force
a short secret with. A pseudonym stands for "some value was here": `blend` makes a recorded pseudonym match any
live value at its position (replay matching, diff). `secrets_in` finds what is still secret-shaped in a tape.

The patterns are few, precompiled, anchored on a literal where they can be and capped in length: they run on the
recorder's hot path, where general secret scanners (hundreds of rules) would cost milliseconds per message.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ahocorasick_rs import AhoCorasick

DEFAULT_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "apikey",
    "x-auth-token", "x-access-token", "x-refresh-token", "x-csrf-token", "x-xsrf-token", "x-amz-security-token",
    "x-goog-api-key", "x-functions-key", "ocp-apim-subscription-key", "private-token", "x-session-token",
})
# Any other header or query parameter whose name reads like a credential.
_SECRET_NAME = re.compile(
    r"(^|[-_])(token|secret|password|passwd|pwd|pass|passphrase|pin|auth|authentication|authorization|"
    r"(api|access|session|private|secret|auth)[-_]?key|apikey|credentials?|signature|sig)($|[-_])",
    re.IGNORECASE,
)
DEFAULT_QUERY = frozenset({
    "key", "token", "access_token", "refresh_token", "id_token", "api_key", "apikey", "auth", "code",
    "client_secret", "password", "secret", "sig", "signature",
})
# A pseudonym (Redactor.pseudonym) wherever it stands in a string: what verify cannot send, and compares as anything.
PSEUDONYM = re.compile(r"<redacted:[0-9a-f]{12}>")
# Schemes kept in front of the pseudonym: "Bearer <redacted:…>" still says how the client authenticated.
_SCHEMES = ("bearer ", "basic ", "digest ", "token ", "negotiate ", "dpop ")

# -- sensitive keys in JSON ------------------------------------------------------------------------------------
# A key is split into words (camelCase, snake_case, kebab-case, dots): it is sensitive when one word, or two
# neighbours run together, is a credential word. `maxTokens` is not (its word is "tokens"): token counts are data.
_WORDS_ALONE = ("token", "secret", "password", "passwd", "pwd", "passphrase", "authorization", "cookie", "credential",
                "credentials")
_WORD_PAIRS = (("api", "key"), ("private", "key"), ("secret", "key"), ("access", "key"))
# short words that are credentials as JSON keys and option names (`{"pin": …}`, `--auth X`), too common inside
# prose to anchor the text shapes on ("spin: fast", "author:")
_KEY_WORDS = ("auth", "authentication", "pass", "pin")
_KEY_PAIRS = (("session", "key"), ("auth", "key"))
SENSITIVE_WORDS = frozenset({*_WORDS_ALONE, *_KEY_WORDS, *(a + b for a, b in (*_WORD_PAIRS, *_KEY_PAIRS))})
# a key ending in one of these names a quantity or a setting about a credential, not the credential:
# `token_count`, `tokenType`, `authUrl`, `passwordMinLength`
_NOT_SECRET_TAILS = frozenset({"count", "counts", "limit", "limits", "length", "len", "size", "type", "types", "kind",
                               "usage", "used", "total", "budget", "url", "uri", "endpoint", "required", "enabled",
                               "expires", "expiry", "ttl", "policy", "min", "max", "format", "schema", "scheme"})
# one-letter options whose value is a credential (`-p SECRET`, `-pSECRET`, `-k KEY`)
_SHORT_SECRET_FLAGS = frozenset("kp")
# Keys whose value is never touched, however they read: protocol state that replay, diff and check rely on.
NEVER_KEYS = frozenset({"progressToken", "cursor", "nextCursor", "inputSchema", "outputSchema"})
_PROTOCOL_KEYS = frozenset({"jsonrpc", "id", "method"})  # a message's own: never content
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_key_cache: dict[str, bool] = {}


def key_is_sensitive(key: str) -> bool:
    hit = _key_cache.get(key)
    if hit is None:
        words = [w.lower() for w in _WORDS.findall(key)]
        if len(words) > 1 and words[-1] in _NOT_SECRET_TAILS:
            words = []  # about a credential, not one: `maxTokenCount`, `passwordMinLength`
        hit = any(w in SENSITIVE_WORDS for w in words) or any(
            a + b in SENSITIVE_WORDS for a, b in zip(words, words[1:]))
        if len(_key_cache) < 4096:  # keys repeat (a protocol has few); a stream of unique keys must not grow it
            _key_cache[key] = hit
    return hit


# -- secret-shaped strings -------------------------------------------------------------------------------------
# Each shape: its rule name, the literals (lower case) one of which starts every match, and the pattern, tried only
# where a literal stands; the secret is its group `s`, and what is around it (a scheme, a key, a URL) stays. One
# Aho-Corasick pass over the lowered text finds every literal (a regex alternation of fifty literals costs ten
# times as much per character), most texts stop there, and a pattern tried at a few places is cheap.
def _shape(name: str, anchors: Iterable[str], pattern: str) -> tuple[str, tuple[str, ...], re.Pattern]:
    return name, tuple(anchors), re.compile(pattern)


_NOT_AFTER = r"(?<![A-Za-z0-9])"  # a token starts at a word's start
# the credential words as they are written in text: `OPENAI_API_KEY=`, `aws_secret_access_key =`, `password:`
_TEXT_KEYS = sorted({*_WORDS_ALONE, *(a + sep + b for a, b in _WORD_PAIRS for sep in ("", "_", "-"))})
_QUERY_KEYS = sorted(DEFAULT_QUERY)
SHAPES = (
    _shape("private-key", ["-----begin"], r"-----BEGIN[A-Z0-9 ]{0,32} PRIVATE KEY-----"
           r"(?P<s>[\s\S]{1,16384}?)-----END[A-Z0-9 ]{0,32} PRIVATE KEY-----"),
    _shape("bearer", ["bearer"], _NOT_AFTER + r"(?i:bearer)\s{1,8}(?P<s>[A-Za-z0-9._~+/-]{12,4096}=*)"),
    _shape("jwt", ["eyj"],
           r"(?<![A-Za-z0-9_-])(?P<s>eyJ[A-Za-z0-9_-]{5,2048}\.eyJ[A-Za-z0-9_-]{5,8192}\.[A-Za-z0-9_-]{0,2048})"),
    _shape("sk-key", ["sk-"], r"(?<![A-Za-z0-9_-])(?P<s>sk-[A-Za-z0-9_-]{20,256})"),
    _shape("stripe-key", ["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
           _NOT_AFTER + r"(?P<s>[rs]k_(?:live|test)_[A-Za-z0-9]{16,247})"),
    _shape("aws-access-key", ["akia", "asia", "abia", "acca"],
           _NOT_AFTER + r"(?P<s>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?![A-Za-z0-9])"),
    _shape("google-api-key", ["aiza"], _NOT_AFTER + r"(?P<s>AIza[0-9A-Za-z_-]{35})"),
    _shape("github-token", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
           _NOT_AFTER + r"(?P<s>gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})"),
    _shape("gitlab-token", ["glpat-", "gldt-", "glptt-", "glrt-"],
           _NOT_AFTER + r"(?P<s>gl(?:pat|dt|ptt|rt)-[A-Za-z0-9_-]{20,64})"),
    _shape("slack-token", ["xox"], _NOT_AFTER + r"(?P<s>xox[abposre]-[A-Za-z0-9-]{10,255})"),
    _shape("url-password", ["://"], r"://[^/\s:@]{1,256}:(?P<s>[^/\s@<>]{1,256})@"),
    _shape("url-query", [k + "=" for k in _QUERY_KEYS],
           r"(?<=[?&#;])(?i:" + "|".join(_QUERY_KEYS) + r")=(?P<s>[^&#\s\"'<>]{1,2048})"),
    _shape("assignment", _TEXT_KEYS,
           r"(?i:" + "|".join(re.escape(k) for k in _TEXT_KEYS) + r")[\"']?\s{0,4}[:=]\s{0,4}[\"']?"
           r"(?:(?i:bearer|basic|token)\s{1,4})?(?P<s>[^\s\"'&,;<>]{4,1024})"),
)
_BY_ANCHOR: dict[str, list[tuple[str, re.Pattern]]] = {}  # anchor -> the shapes it starts
for _name, _anchors, _pattern in SHAPES:
    for _anchor in _anchors:
        _BY_ANCHOR.setdefault(_anchor, []).append((_name, _pattern))
_ANCHOR_LIST = list(_BY_ANCHOR)
_ANCHORS = AhoCorasick(_ANCHOR_LIST)
_SHORTEST = 8  # no secret shape fits in fewer characters: shorter strings are not scanned
SENSITIVE_KEY, SENSITIVE_HEADER, SENSITIVE_QUERY = "sensitive-key", "sensitive-header", "sensitive-query"
REDACT_PATH = "redact-path"
# what a tape's header lists (names, never values): the rules by name, documented in docs/redaction.md
RULE_NAMES = [SENSITIVE_HEADER, SENSITIVE_QUERY, SENSITIVE_KEY, REDACT_PATH, *(name for name, _, _ in SHAPES)]


def _spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, rule) of each secret-shaped part of a text, in order, not overlapping."""
    if len(text) < _SHORTEST:
        return []
    low = text.lower()
    try:
        anchors = _ANCHORS.find_matches_as_indexes(low, overlapping=True) if len(low) == len(text) else None
    except UnicodeEncodeError:  # a lone surrogate (JSON allows "\udcff")
        anchors = None
    if anchors is None:  # the slow way, where the fast one cannot go (lowering moved characters: a dotted capital I)
        found = [(*m.span("s"), name) for name, _, pattern in SHAPES for m in pattern.finditer(text)]
    else:
        found = []
        for anchor, at, _ in anchors:
            for name, pattern in _BY_ANCHOR[_ANCHOR_LIST[anchor]]:
                if m := pattern.match(text, at):
                    found.append((*m.span("s"), name))
    found.sort()
    out, end = [], 0
    for span in found:
        if span[0] >= end:
            out.append(span)
            end = span[1]
    return out


def is_pseudonym(value: Any) -> bool:
    """A redaction pseudonym: `<redacted:…>`, or one behind an auth scheme (`Bearer <redacted:…>`)."""
    if not isinstance(value, str):
        return False
    if PSEUDONYM.fullmatch(value):
        return True
    scheme, _, rest = value.partition(" ")
    return bool(rest) and (scheme.lower() + " ") in _SCHEMES and PSEUDONYM.fullmatch(rest) is not None


def holds_pseudonym(value: Any) -> bool:
    """A string with a pseudonym anywhere in it (a redacted token inside a text)."""
    return isinstance(value, str) and "<redacted:" in value and PSEUDONYM.search(value) is not None


def shapes_in(text: str | bytes) -> Iterator[str]:
    """The names of the secret-shaped strings in a text, in order."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    for _, _, rule in _spans(text):
        yield rule


# -- the fields a peer can fill ------------------------------------------------------------------------------------
# One table, read by the recorder, `redact`, `check --require-redacted` and `bundle` alike (through _Scrub): every
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


def secrets_in(records: Iterable[dict]) -> Iterator[tuple[int, str, str]]:
    """(record number, JSON pointer, rule name) for each secret still in a tape's records (numbered from 0, the
    first record after the header, as `seq`): a value under a sensitive header, query parameter, key or command
    line flag that is not a pseudonym, and each secret-shaped string, in any field of FIELDS. The pointer names
    the record's field (`/msg/params/…`)."""
    found: dict[str, str] = {}  # pointer -> the first rule that found it (a flag's value is a shape too)
    scrub = _Scrub(lambda path, value, rule: found.setdefault(_pointer(path), rule) and value)
    for number, record in enumerate(records):
        scrub.record(record)
        for pointer, rule in found.items():
            yield number, pointer, rule
        found.clear()


def _pointer(path: list) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _header_is_secret(name: str) -> bool:
    name = name.lower()
    return name in DEFAULT_HEADERS or bool(_SECRET_NAME.search(name))


def _query_is_secret(name: str) -> bool:
    return name.lower() in DEFAULT_QUERY or bool(_SECRET_NAME.search(name))


def _is_session(field: str, name: str) -> bool:
    """Session ids are redacted only when token-shaped (Mcp-Session-Id, a legacy endpoint's session query),
    whatever their name reads like."""
    name = name.lower()
    return name == "mcp-session-id" if field == "headers" else name in ("session_id", "sessionid")


# -- walking a record once ---------------------------------------------------------------------------------------
Replace = Callable[[list, Any, str], Any]  # (path, value, rule) -> what goes in its place


class _Scrub:
    """One pass over a record's fields (FIELDS): each secret found goes to `replace` with its path and rule; what
    it returns takes its place (the Redactor's pseudonym, or the value itself for secrets_in, which only lists
    them). Containers are copied only where something changed. `keep`/`extra` are JSON pointers (as lists, `*`
    for any one step) relative to each message: exempted, or redacted whole. `cached`: short texts seen before
    (header values, method names, keys: a session repeats them) are not scanned again. `extra_headers`: more
    header names whose value is a secret."""

    __slots__ = ("replace", "keep", "extra", "cache", "extra_headers", "names", "depth")

    def __init__(self, replace: Replace, keep: list[list[str]] = (), extra: list[list[str]] = (),
                 cached: bool = False, extra_headers: Iterable[str] = ()) -> None:
        self.replace, self.keep, self.extra = replace, keep, extra
        self.cache: dict[str, str] | None = {} if cached else None
        self.extra_headers = frozenset(extra_headers)
        self.names: dict[str, dict[str, str]] = {"headers": {}, "query": {}}  # name -> how its value is treated
        self.depth = 0  # JSON opened inside strings, now

    # -- records ---------------------------------------------------------------------------------------------------

    def record(self, record: dict) -> dict:
        out = None
        for name, value in record.items():
            how = FIELDS.get(name)
            if how is None or value is None:
                continue
            if how is TEXT:
                new = self.text(value, [name]) if isinstance(value, str) and len(value) >= _SHORTEST else value
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
            if isinstance(item, str) and len(item) >= _SHORTEST:
                path.append(i)
                new = self.text(item, path)
                path.pop()
                if new is not item:
                    out = out or list(values)
                    out[i] = new
        return values if out is None else out

    def raw(self, data: bytes, path: list) -> bytes:
        if len(data) < _SHORTEST:
            return data
        text = data.decode("latin-1")  # a byte a character: any bytes, and the patterns are ASCII
        redacted = self.text(text, path)
        return data if redacted is text else redacted.encode("latin-1")

    def pairs(self, pairs: list, field: str) -> list:
        """Headers or query parameters, [name, value] each: a value under a credential's name whole (an auth
        scheme kept in front), any other name and value scanned."""
        names = self.names[field]
        out = None
        for i, pair in enumerate(pairs):
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
                continue
            name, value = pair
            if not isinstance(name, str) or not isinstance(value, str):
                continue
            how = names.get(name)
            if how is None:
                secret = self._header_is_secret(name) if field == "headers" else _query_is_secret(name)
                how = _SECRET if secret and not _is_session(field, name) else _SCAN
                if len(names) < 1024:
                    names[name] = how
            path = [field, i, 1]
            if how is _SECRET:
                new_value = value if not value or is_pseudonym(value) else self._secret_value(path, value, field)
            else:
                new_value = self.text(value, path) if len(value) >= _SHORTEST else value
            new_name = name
            if len(name) >= _SHORTEST:
                new_name = self.cache.get(name) if self.cache is not None else None
                if new_name is None:
                    path[2] = 0
                    new_name = self.text(name, path)
            if new_value is not value or new_name != name:
                out = out or [list(p) for p in pairs]
                out[i] = [new_name, new_value]
        return pairs if out is None else out

    def _header_is_secret(self, name: str) -> bool:
        return _header_is_secret(name) or name.lower() in self.extra_headers

    def _secret_value(self, path: list, value: str, field: str) -> str:
        rule = SENSITIVE_HEADER if field == "headers" else SENSITIVE_QUERY
        if field == "headers":
            lowered = value.lower()
            for scheme in _SCHEMES:
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
            for i, part in _argv_secrets(argv):
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

    def _object(self, value: dict, path: list, base: int, sensitive: bool, top: bool = False) -> dict:
        out = None
        renamed = None
        for key, item in value.items():
            if top and key in _PROTOCOL_KEYS or key in NEVER_KEYS:
                continue
            if isinstance(key, str) and len(key) >= _SHORTEST:  # a key is text a peer chose, too
                new_key = self.cache.get(key) if self.cache is not None else None  # keys repeat: most are here
                if new_key is None:
                    path.append(key)
                    new_key = self.text(key, path)
                    path.pop()
                if new_key != key:
                    renamed = renamed or {}
                    renamed[key] = new_key
            if not top and (item is None or item is True or item is False):
                continue
            path.append(key)
            new = self.value(item, path, base, sensitive or isinstance(key, str) and key_is_sensitive(key))
            path.pop()
            if new is not item:
                out = out or dict(value)
                out[key] = new
        out = value if out is None else out
        return out if renamed is None else {renamed.get(k, k): v for k, v in out.items()}

    def value(self, value: Any, path: list, base: int, sensitive: bool) -> Any:
        if self.keep or self.extra:
            here = path[base:]
            if any(_hits(p, here) for p in self.keep):
                return value
            sensitive = sensitive or any(_hits(p, here) for p in self.extra)
        if isinstance(value, str):
            if sensitive:
                return value if not value or is_pseudonym(value) else self.replace(path, value, self._why(path, base))
            if len(value) < _SHORTEST:
                return value
            return self.text(value, path)
        if isinstance(value, dict):
            return self._object(value, path, base, sensitive)
        if isinstance(value, list):
            out = None
            for i, item in enumerate(value):
                path.append(i)
                new = self.value(item, path, base, sensitive)
                path.pop()
                if new is not item:
                    out = out or list(value)
                    out[i] = new
            return value if out is None else out
        if sensitive and isinstance(value, (int, float)) and not isinstance(value, bool):
            return self.replace(path, str(value), self._why(path, base))  # a PIN is a secret too
        return value

    def _why(self, path: list, base: int) -> str:
        if self.extra and any(_hits(p, path[base:base + len(p)]) for p in self.extra):
            return REDACT_PATH
        return SENSITIVE_KEY

    # -- text --------------------------------------------------------------------------------------------------------

    def text(self, value: str, path: list) -> str:
        cache = self.cache
        if cache is not None and (seen := cache.get(value)) is not None:
            return seen
        redacted = self._nested(value, path) if value[0] in "{[" or value[-1:] in "}]" else None
        if redacted is None:
            spans = _spans(value)
            if spans:
                parts, last = [], 0
                for start, end, rule in spans:
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
        """JSON inside a string (a tool's text content, an argument, a header): opened, walked as JSON, written
        back when something in it changed; None when it is not a JSON object or array."""
        if self.depth >= _NESTED_JSON:
            return None
        stripped = value.strip()
        if not (stripped[:1] == "{" and stripped[-1:] == "}" or stripped[:1] == "[" and stripped[-1:] == "]"):
            return None
        from .wire import jsonrpc

        try:
            decoded = jsonrpc.loads(stripped)
        except (ValueError, RecursionError):
            return None
        self.depth += 1
        try:
            new = self.value(decoded, path, len(path), False)
        finally:
            self.depth -= 1
        if new is decoded:
            return value
        import json

        return json.dumps(new, ensure_ascii=False, separators=(", " if ", " in stripped else ",",
                                                               ": " if '": ' in stripped else ":"))


def _argv_secrets(argv: list) -> Iterator[tuple[int, tuple[str, str]]]:
    """(index, (what stays, the secret)) for each secret a command line holds in an option: the word after
    `--api-key`/`-k`, the part after `--auth=`, `-pVALUE`. Values already pseudonyms are left alone."""
    for i, word in enumerate(argv):
        if not isinstance(word, str) or not word.startswith("-") or word == "--":
            continue
        name, eq, value = word.partition("=")
        if eq:  # --name=VALUE
            if key_is_sensitive(name.lstrip("-")) and value and not is_pseudonym(value):
                yield i, (name + "=", value)
            continue
        if len(word) > 2 and word[1] in _SHORT_SECRET_FLAGS and word[1] != "-" and word[2] != "-":
            if not is_pseudonym(word[2:]):  # -pVALUE
                yield i, (word[:2], word[2:])
            continue
        secret_flag = word[1:] in _SHORT_SECRET_FLAGS if len(word) == 2 else key_is_sensitive(word.lstrip("-"))
        if secret_flag and i + 1 < len(argv) and isinstance(argv[i + 1], str) and not is_pseudonym(argv[i + 1]) \
                and not argv[i + 1].startswith("-"):
            yield i + 1, ("", argv[i + 1])


def _hits(pointer: list[str], path: list) -> bool:
    return len(pointer) == len(path) and all(p == "*" or p == str(q) for p, q in zip(pointer, path))


# -- redacting ---------------------------------------------------------------------------------------------------
class Redactor:
    """Redacts records as they are made. `keep_paths`/`redact_paths`: JSON pointers into each JSON-RPC message
    (`/params/arguments/query`; `*` stands for any one key or index) exempted from redaction, or redacted whole."""

    def __init__(self, extra_headers: Iterable[str] = (), enabled: bool = True,
                 keep_paths: Iterable[str] = (), redact_paths: Iterable[str] = ()) -> None:
        from .wire import pointer

        self.enabled = enabled
        self.extra_headers = sorted({h.strip().lower() for h in extra_headers})
        self.keep_paths = list(keep_paths)
        self.redact_paths = list(redact_paths)
        self._key = secrets.token_bytes(32)
        self._cache: dict[str, str] = {}
        self._scrub = _Scrub(lambda path, value, rule: self.pseudonym(value),
                             [pointer.parse(p, "--keep-path") for p in self.keep_paths],
                             [pointer.parse(p, "--redact-path") for p in self.redact_paths], cached=True,
                             extra_headers=self.extra_headers)

    def pseudonym(self, secret: str) -> str:
        found = self._cache.get(secret)
        if found is None:
            digest = hmac.new(self._key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
            found = f"<redacted:{digest[:12]}>"
            if len(self._cache) < 4096:
                self._cache[secret] = found
        return found

    def headers(self, pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
        return self._pairs(pairs, "headers")

    def query(self, pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
        return self._pairs(pairs, "query")

    def _pairs(self, pairs: Iterable[tuple[str, str]], field: str) -> list[list[str]]:
        listed = [[k, v] for k, v in pairs]
        return self._scrub.pairs(listed, field) if self.enabled else listed

    def text(self, value: str) -> str:
        return self._scrub.text(value, []) if self.enabled and len(value) >= _SHORTEST else value

    def raw(self, data: bytes) -> bytes:
        return self._scrub.raw(data, []) if self.enabled else data

    def json(self, value: Any) -> Any:
        return self._scrub.json(value, []) if self.enabled else value

    def record(self, record: dict) -> dict:
        """A record with everything secret in it replaced (a copy where something changed; the same otherwise).
        Idempotent: pseudonyms are left as they are, so a redacted tape can be redacted again."""
        return self._scrub.record(record) if self.enabled else record

    def describe(self) -> dict:
        """What the tape says about its own redaction (names only, never values)."""
        if not self.enabled:
            return {"enabled": False}
        described: dict = {"enabled": True, "body": True, "rules": list(RULE_NAMES)}
        for name in ("extra_headers", "keep_paths", "redact_paths"):
            if getattr(self, name):
                described[name] = getattr(self, name)
        return described


# -- a pseudonym matches anything --------------------------------------------------------------------------------
def blend(recorded: Any, live: Any) -> Any:
    """`live`, with every value that stands where `recorded` holds a pseudonym replaced by the recorded one (and
    the same where `live` holds one): a redacted value matches any value at its position, so after `blend` plain
    equality (`recorded == blend(recorded, live)`) is the match, and what still differs is a real difference.
    A string with a pseudonym inside ("Bearer <redacted:…>", a token in a text) matches a string that is the same
    around it. Returns `live` itself when nothing was blended."""
    if isinstance(recorded, str):
        if isinstance(live, str) and (holds_pseudonym(recorded) or holds_pseudonym(live)):
            if _same_around(recorded, live) or _same_around(live, recorded) or _same_json(recorded, live):
                return recorded
            return live
        if is_pseudonym(recorded) and isinstance(live, (int, float)) and not isinstance(live, bool):
            return recorded  # a number under a sensitive key was recorded as a pseudonym
        return live
    if isinstance(recorded, dict) and isinstance(live, dict):
        out = None
        for key, item in live.items():
            if key in recorded:
                new = blend(recorded[key], item)
                if new is not item:
                    out = out or dict(live)
                    out[key] = new
        if len(live) == len(recorded) and any(key not in recorded for key in live):
            out = _blend_keys(recorded, out or live)  # a key redacted where a secret stood in it
        return live if out is None else out
    if isinstance(recorded, list) and isinstance(live, list) and len(recorded) == len(live):
        out = None
        for i, (a, b) in enumerate(zip(recorded, live)):
            new = blend(a, b)
            if new is not b:
                out = out or list(live)
                out[i] = new
        return live if out is None else out
    if isinstance(live, str) and is_pseudonym(live) and isinstance(recorded, (int, float)):
        return recorded
    return live


def _same_json(recorded: str, live: str) -> bool:
    """JSON inside a string was redacted and written back (_Scrub._nested): the same once both are read."""
    if recorded[:1] not in "{[" or live.strip()[:1] not in "{[":
        return False
    from .wire import jsonrpc

    try:
        a, b = jsonrpc.loads(recorded), jsonrpc.loads(live)
    except (ValueError, RecursionError):
        return False
    return a == blend(a, b)


def _blend_keys(recorded: dict, live: dict) -> dict | None:
    """`live` with each key that differs only where a recorded key holds a pseudonym renamed to that key (its value
    blended too), or None when none does."""
    hidden = [key for key in recorded if isinstance(key, str) and key not in live and holds_pseudonym(key)]
    if not hidden:
        return None
    renamed = {}
    for key in live:
        if key not in recorded and isinstance(key, str):
            match = next((h for h in hidden if _same_around(h, key)), None)
            if match is not None:
                hidden.remove(match)
                renamed[key] = match
    if not renamed:
        return None
    return {renamed.get(k, k): blend(recorded[renamed[k]], v) if k in renamed else v for k, v in live.items()}


_around_cache: dict[str, re.Pattern] = {}


def _same_around(with_pseudonyms: str, other: str) -> bool:
    if "<redacted:" not in with_pseudonyms:
        return False
    pattern = _around_cache.get(with_pseudonyms)
    if pattern is None:
        parts = PSEUDONYM.split(with_pseudonyms)
        pattern = re.compile(r"(?s:.+?)".join(re.escape(p) for p in parts))
        if len(_around_cache) < 1024:
            _around_cache[with_pseudonyms] = pattern
    return pattern.fullmatch(other) is not None


def unredacted(header: dict, records: Iterable[dict]) -> Iterator[tuple[int | None, str, str]]:
    """Why a tape is not safe to share, for `check --require-redacted`: (None, what, "not-redacted") when its
    header, or (record number, "/redaction", "not-redacted") when a recording run in it, says redaction was off
    or did not cover bodies; then each secret `secrets_in` finds."""
    if not _covers_bodies(header.get("redaction")):
        yield None, "its header says it was recorded without body redaction", "not-redacted"
    starts: list[int] = []

    def watched(records: Iterable[dict]) -> Iterator[dict]:
        for number, record in enumerate(records):
            if record.get("kind") == "capture.start" and not _covers_bodies(record.get("redaction")):
                starts.append(number)
            yield record

    found = list(secrets_in(watched(records)))
    yield from sorted([(number, "/redaction", "not-redacted") for number in starts] + found)


def _covers_bodies(redaction: Any) -> bool:
    return isinstance(redaction, dict) and redaction.get("enabled") is True and redaction.get("body") is True


def redacted_tape(header: dict, records: Iterable[dict], redactor: Redactor) -> tuple[dict, Iterator[dict]]:
    """A tape's header and records redacted, each part that says how a tape was redacted saying so: what
    `mcptape redact` writes, and `mcptape bundle --redact` puts in a bundle."""
    described = redactor.describe()

    def redacted() -> Iterator[dict]:
        for record in records:
            if record.get("kind") == "capture.start":
                record = {**record, "redaction": described}
            yield redactor.record(record)

    return {**header, "redaction": described}, redacted()
