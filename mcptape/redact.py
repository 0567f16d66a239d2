"""Keep secrets out of tapes. Before anything is written, credentials are replaced by pseudonyms that are stable
within one recording run (same secret -> same pseudonym), so a reader still sees that two requests used the same
token without learning it: in headers and query strings (by name), and in every body (JSON-RPC messages of every
record kind, bodies that are not JSON, problem texts, stderr lines, URLs) by two kinds of rule:

- a value under a sensitive key (`token`, `api_key`, `clientSecret`, …; case- and separator-insensitive) is
  replaced whole;
- a secret-shaped string anywhere (bearer tokens, `sk-…` keys, JWTs, cloud, GitHub, GitLab and Slack tokens, PEM
  private keys, credentials in URLs, `password=…` assignments) is replaced where it stands.

Never touched: JSON-RPC ids, schema positions (`inputSchema`, `outputSchema`), progress tokens, pagination
cursors, and session ids: they carry no credential, and replay, diff and check rely on them.

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
    r"(^|[-_])(token|secret|password|passwd|pwd|api[-_]?key|apikey|access[-_]?key|credentials?|signature|sig)($|[-_])",
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
SENSITIVE_WORDS = frozenset({*_WORDS_ALONE, *(a + b for a, b in _WORD_PAIRS)})
# Keys whose value is never touched, however they read: protocol state that replay, diff and check rely on.
NEVER_KEYS = frozenset({"progressToken", "cursor", "nextCursor", "inputSchema", "outputSchema"})
_PROTOCOL_KEYS = frozenset({"jsonrpc", "id", "method"})  # a message's own: never content
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_key_cache: dict[str, bool] = {}


def key_is_sensitive(key: str) -> bool:
    hit = _key_cache.get(key)
    if hit is None:
        words = [w.lower() for w in _WORDS.findall(key)]
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


# -- finding what is left ----------------------------------------------------------------------------------------
_TEXT_FIELDS = ("problem", "data", "text", "detail", "error", "path", "rewritten_to")
_JSON_FIELDS = ("msg", "withheld", "source")
_FIELDS_TO_REDACT = frozenset({*_TEXT_FIELDS, *_JSON_FIELDS, "raw", "headers", "query", "comments"})
_SECRET, _SCAN, _NEVER = "secret", "scan", "never"  # how a header's or query parameter's value is treated


def secrets_in(records: Iterable[dict]) -> Iterator[tuple[int, str, str]]:
    """(record number, JSON pointer, rule name) for each secret still in a tape's records (numbered from 0, the
    first record after the header, as `seq`): a value under a sensitive header, query parameter or key that is
    not a pseudonym, and each secret-shaped string. The pointer names the record's field (`/msg/params/…`)."""
    for number, record in enumerate(records):
        for name in ("headers", "query"):
            is_secret = _header_is_secret if name == "headers" else _query_is_secret
            for i, pair in enumerate(record.get(name) or ()):
                if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[1], str)):
                    continue
                if _is_session(name, pair[0]):
                    continue
                if is_secret(pair[0]) and pair[1] and not is_pseudonym(pair[1]):
                    yield number, f"/{name}/{i}/1", SENSITIVE_HEADER if name == "headers" else SENSITIVE_QUERY
                    continue
                for rule in shapes_in(pair[1]):
                    yield number, f"/{name}/{i}/1", rule
        for name in _TEXT_FIELDS:
            value = record.get(name)
            if isinstance(value, str):
                for rule in shapes_in(value):
                    yield number, "/" + name, rule
        if isinstance(record.get("raw"), bytes):
            for rule in shapes_in(record["raw"]):
                yield number, "/raw", rule
        for i, comment in enumerate(record.get("comments") or ()):
            if isinstance(comment, str):
                for rule in shapes_in(comment):
                    yield number, f"/comments/{i}", rule
        if isinstance(record.get("source"), dict):
            for i in _after_secret_flags(record["source"].get("stdio")):
                yield number, f"/source/stdio/{i}", SENSITIVE_KEY
        for name in _JSON_FIELDS:
            if name in record:
                found: list[tuple[list, str]] = []
                _Walk(lambda path, value, rule: found.append((list(path), rule)) or value).json(record[name], [name])
                for path, rule in found:
                    yield number, _pointer(path), rule


def _after_secret_flags(argv: Any) -> list[int]:
    """Where a command line has the value of a sensitive flag in the next word: `--api-key VALUE`."""
    if not isinstance(argv, list):
        return []
    return [i for i in range(1, len(argv)) if isinstance(argv[i - 1], str) and argv[i - 1].startswith("-")
            and "=" not in argv[i - 1] and key_is_sensitive(argv[i - 1].lstrip("-")) and isinstance(argv[i], str)
            and not is_pseudonym(argv[i])]


def _pointer(path: list) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _header_is_secret(name: str) -> bool:
    name = name.lower()
    return name in DEFAULT_HEADERS or bool(_SECRET_NAME.search(name))


def _query_is_secret(name: str) -> bool:
    return name.lower() in DEFAULT_QUERY or bool(_SECRET_NAME.search(name))


def _is_session(field: str, name: str) -> bool:
    """Session ids are governed by the header rules alone (Mcp-Session-Id, a legacy endpoint's session query)."""
    name = name.lower()
    return name == "mcp-session-id" if field == "headers" else name in ("session_id", "sessionid")


# -- walking JSON once -------------------------------------------------------------------------------------------
Replace = Callable[[list, Any, str], Any]  # (path, value, rule) -> what goes in its place


class _Walk:
    """One pass over a JSON value: each secret found goes to `replace` with its path and rule; what it returns
    takes its place. Containers are copied only where something changed. `keep`/`extra` are JSON pointers (as
    lists, `*` for any one step) relative to each message: exempted, or redacted whole. `cached`: short texts
    seen before (header values, method names, descriptions: a session repeats them) are not scanned again."""

    __slots__ = ("replace", "keep", "extra", "cache")

    def __init__(self, replace: Replace, keep: list[list[str]] = (), extra: list[list[str]] = (),
                 cached: bool = False) -> None:
        self.replace, self.keep, self.extra = replace, keep, extra
        self.cache: dict[str, str] | None = {} if cached else None

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
        out = None
        base = len(path)
        for key, item in value.items():
            if key in _PROTOCOL_KEYS or key in NEVER_KEYS:
                continue
            path.append(key)
            new = self.value(item, path, base, isinstance(key, str) and key_is_sensitive(key))
            path.pop()
            if new is not item:
                out = out or dict(value)
                out[key] = new
        return value if out is None else out

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
            out = None
            for key, item in value.items():
                if key in NEVER_KEYS or item is None or item is True or item is False:
                    continue
                path.append(key)
                new = self.value(item, path, base, sensitive or isinstance(key, str) and key_is_sensitive(key))
                path.pop()
                if new is not item:
                    out = out or dict(value)
                    out[key] = new
            return value if out is None else out
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

    def text(self, value: str, path: list) -> str:
        cache = self.cache
        if cache is not None and (seen := cache.get(value)) is not None:
            return seen
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
        self._walk = _Walk(lambda path, value, rule: self.pseudonym(value),
                           [pointer.parse(p, "--keep-path") for p in self.keep_paths],
                           [pointer.parse(p, "--redact-path") for p in self.redact_paths], cached=True)
        self._names: dict[str, dict[str, object]] = {"headers": {}, "query": {}}  # name -> how its value is treated

    def pseudonym(self, secret: str) -> str:
        found = self._cache.get(secret)
        if found is None:
            digest = hmac.new(self._key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
            found = f"<redacted:{digest[:12]}>"
            if len(self._cache) < 4096:
                self._cache[secret] = found
        return found

    def header_is_secret(self, name: str) -> bool:
        return _header_is_secret(name) or name.lower() in self.extra_headers

    def query_is_secret(self, name: str) -> bool:
        return _query_is_secret(name)

    def headers(self, pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
        return self._pairs(pairs, "headers")

    def query(self, pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
        return self._pairs(pairs, "query")

    def _pairs(self, pairs: Iterable[tuple[str, str]], field: str) -> list[list[str]]:
        if not self.enabled:
            return [[k, v] for k, v in pairs]
        names = self._names[field]
        out = []
        for name, value in pairs:
            how = names.get(name)
            if how is None:
                how = _NEVER if _is_session(field, name) else _SECRET if (
                    self.header_is_secret(name) if field == "headers" else self.query_is_secret(name)) else _SCAN
                if len(names) < 1024:
                    names[name] = how
            if how is _SECRET and value and not is_pseudonym(value):
                value = self._secret_value(value) if field == "headers" else self.pseudonym(value)
            elif how is _SCAN and len(value) >= _SHORTEST:
                value = self._walk.text(value, [])
            out.append([name, value])
        return out

    def _secret_value(self, value: str) -> str:
        lowered = value.lower()
        for scheme in _SCHEMES:
            if lowered.startswith(scheme):
                return value[: len(scheme)] + self.pseudonym(value[len(scheme):])
        return self.pseudonym(value)

    def text(self, value: str) -> str:
        return self._walk.text(value, []) if self.enabled and len(value) >= _SHORTEST else value

    def raw(self, data: bytes) -> bytes:
        if not self.enabled or len(data) < _SHORTEST:
            return data
        text = data.decode("latin-1")  # a byte a character: any bytes, and the patterns are ASCII
        redacted = self._walk.text(text, [])
        return data if redacted is text else redacted.encode("latin-1")

    def json(self, value: Any) -> Any:
        return self._walk.json(value, []) if self.enabled else value

    def record(self, record: dict) -> dict:
        """A record with everything secret in it replaced (a copy where something changed; the same otherwise).
        Idempotent: pseudonyms are left as they are, so a redacted tape can be redacted again."""
        if not self.enabled:
            return record
        out = None
        for name in _FIELDS_TO_REDACT.intersection(record):
            value = record[name]
            if name in _TEXT_FIELDS:
                new = self.text(value) if isinstance(value, str) else value
            elif name in _JSON_FIELDS:
                new = self._walk.json(value, []) if name != "source" else self._source(value)
            elif name == "raw":
                new = self.raw(value) if isinstance(value, bytes) else value
            else:  # headers, query, comments: lists, copied anew
                new = (self._pairs(value, name) if name != "comments" else
                       [self.text(c) if isinstance(c, str) else c for c in value]) if isinstance(value, list) else value
                new = value if new == value else new
            if new is not value:
                out = out or dict(record)
                out[name] = new
        return record if out is None else out

    def _source(self, source: Any) -> Any:
        """Where a recording came from: an upstream URL, or a server's command line, whose `--api-key VALUE`
        pair is as secret as `--api-key=VALUE`."""
        if isinstance(source, dict) and (after := _after_secret_flags(source.get("stdio"))):
            argv = list(source["stdio"])
            for i in after:
                argv[i] = self.pseudonym(argv[i])
            source = {**source, "stdio": argv}
        return self._walk.json(source, [])

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
            return recorded if _same_around(recorded, live) or _same_around(live, recorded) else live
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
