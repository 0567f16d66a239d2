"""Which names say their value is a credential: a header or query parameter (a list, then a pattern), a JSON key
or a command-line option (split into words, docs/redaction.md), and the keys never touched whatever they read like.
"""

from __future__ import annotations

import re

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
# A key is split into words (camelCase, snake_case, kebab-case, dots): it is sensitive when one word, or two
# neighbours run together, is a credential word. `maxTokens` is not (its word is "tokens"): token counts are data.
WORDS_ALONE = ("token", "secret", "password", "passwd", "pwd", "passphrase", "authorization", "cookie", "credential",
                "credentials")
WORD_PAIRS = (("api", "key"), ("private", "key"), ("secret", "key"), ("access", "key"))
# short words that are credentials as JSON keys and option names (`{"pin": …}`, `--auth X`), too common inside
# prose to anchor the text shapes on ("spin: fast", "author:")
_KEY_WORDS = ("auth", "authentication", "pass", "pin")
_KEY_PAIRS = (("session", "key"), ("auth", "key"))
SENSITIVE_WORDS = frozenset({*WORDS_ALONE, *_KEY_WORDS, *(a + b for a, b in (*WORD_PAIRS, *_KEY_PAIRS))})
# A sensitive key, lowered, holds one of these (its words are ASCII letters; a pair's second word stands alone)
KEY_LITERALS = frozenset({*SENSITIVE_WORDS, *(b for _, b in (*WORD_PAIRS, *_KEY_PAIRS))})
# a key ending in one of these names a quantity or a setting about a credential, not the credential:
# `token_count`, `tokenType`, `authUrl`, `passwordMinLength`
_NOT_SECRET_TAILS = frozenset({"count", "counts", "limit", "limits", "length", "len", "size", "type", "types", "kind",
                               "usage", "used", "total", "budget", "url", "uri", "endpoint", "required", "enabled",
                               "expires", "expiry", "ttl", "policy", "min", "max", "format", "schema", "scheme"})
# one-letter options whose value is a credential (`-p SECRET`, `-pSECRET`, `-k KEY`)
SHORT_SECRET_FLAGS = frozenset("kp")
# Keys whose value is never touched, however they read: protocol state that replay, diff and check rely on.
NEVER_KEYS = frozenset({"progressToken", "cursor", "nextCursor", "inputSchema", "outputSchema"})
PROTOCOL_KEYS = frozenset({"jsonrpc", "id", "method"})  # a message's own: never content
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


def header_is_secret(name: str) -> bool:
    name = name.lower()
    return name in DEFAULT_HEADERS or bool(_SECRET_NAME.search(name))


def query_is_secret(name: str) -> bool:
    return name.lower() in DEFAULT_QUERY or bool(_SECRET_NAME.search(name))


def is_session(field: str, name: str) -> bool:
    """Session ids are redacted only when token-shaped (Mcp-Session-Id, a legacy endpoint's session query),
    whatever their name reads like."""
    name = name.lower()
    return name == "mcp-session-id" if field == "headers" else name in ("session_id", "sessionid")


# The rules that redact by name, as a tape's header lists them (docs/redaction.md); the shapes are named in shapes.py.
SENSITIVE_KEY, SENSITIVE_HEADER, SENSITIVE_QUERY = "sensitive-key", "sensitive-header", "sensitive-query"
REDACT_PATH = "redact-path"
