"""Keep secrets out of tapes: credentials in headers and query strings are replaced, before anything is written,
by pseudonyms that are stable within one recording run (same secret -> same pseudonym), so a reader can still see
that two requests used the same token without learning it.

The pseudonym is an HMAC under a random key that lives only in memory: a tape holds no material to brute-force
a short secret with. Bodies (tool arguments) are recorded as they are; see the README.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable

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


class Redactor:
    def __init__(self, extra_headers: Iterable[str] = (), enabled: bool = True) -> None:
        self.enabled = enabled
        self.headers_named = DEFAULT_HEADERS | {h.strip().lower() for h in extra_headers}
        self._key = secrets.token_bytes(32)

    def pseudonym(self, secret: str) -> str:
        digest = hmac.new(self._key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return f"<redacted:{digest[:12]}>"

    def header_is_secret(self, name: str) -> bool:
        name = name.lower()
        return name in self.headers_named or bool(_SECRET_NAME.search(name))

    def query_is_secret(self, name: str) -> bool:
        return name.lower() in DEFAULT_QUERY or bool(_SECRET_NAME.search(name))

    def headers(self, pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
        if not self.enabled:
            return [[k, v] for k, v in pairs]
        return [[k, self._header_value(v) if self.header_is_secret(k) else v] for k, v in pairs]

    def _header_value(self, value: str) -> str:
        lowered = value.lower()
        for scheme in _SCHEMES:
            if lowered.startswith(scheme):
                return value[: len(scheme)] + self.pseudonym(value[len(scheme):])
        return self.pseudonym(value)

    def query(self, pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
        if not self.enabled:
            return [[k, v] for k, v in pairs]
        return [[k, self.pseudonym(v) if self.query_is_secret(k) else v] for k, v in pairs]

    def describe(self) -> dict:
        """What the tape says about its own redaction (names only, never values)."""
        return {"enabled": self.enabled, "headers": sorted(self.headers_named), "query": sorted(DEFAULT_QUERY),
                "pattern": _SECRET_NAME.pattern}
