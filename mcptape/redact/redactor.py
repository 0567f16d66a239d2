"""The Redactor: what the recorder, `import`, `redact` and `bundle --redact` hold to replace secrets with
pseudonyms as records are made, and what a tape's header says of it."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from typing import Any

from ..wire import pointer
from .names import REDACT_PATH, SENSITIVE_HEADER, SENSITIVE_KEY, SENSITIVE_QUERY
from .scrub import Scrub
from .shapes import SHAPES, SHORTEST

# what a tape's header lists (names, never values): the rules by name, documented in docs/redaction.md
RULE_NAMES = [SENSITIVE_HEADER, SENSITIVE_QUERY, SENSITIVE_KEY, REDACT_PATH, *(name for name, _, _ in SHAPES)]


class Redactor:
    """Redacts records as they are made. `keep_paths`/`redact_paths`: JSON pointers into each JSON-RPC message
    (`/params/arguments/query`; `*` stands for any one key or index) exempted from redaction, or redacted whole."""

    def __init__(self, extra_headers: Iterable[str] = (), enabled: bool = True,
                 keep_paths: Iterable[str] = (), redact_paths: Iterable[str] = ()) -> None:
        self.enabled = enabled
        self.extra_headers = sorted({h.strip().lower() for h in extra_headers})
        self.keep_paths = list(keep_paths)
        self.redact_paths = list(redact_paths)
        self._key = secrets.token_bytes(32)
        self._cache: dict[str, str] = {}
        self._scrub = Scrub(lambda path, value, rule: self.pseudonym(value),
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
        return self._scrub.text(value, []) if self.enabled and len(value) >= SHORTEST else value

    def raw(self, data: bytes) -> bytes:
        return self._scrub.raw(data, []) if self.enabled else data

    def json(self, value: Any) -> Any:
        return self._scrub.json(value, []) if self.enabled else value

    def clean(self, text: bytes | str) -> bool:
        """Whether what is read from this text (a body, SSE data) needs no redaction: see Scrub.clean."""
        return not self.enabled or self._scrub.clean(text)

    def record(self, record: dict, done: frozenset[str] = frozenset()) -> dict:
        """A record with everything secret in it replaced (a copy where something changed; the same otherwise).
        Idempotent: pseudonyms are left as they are, so a redacted tape can be redacted again; `done` names fields
        the caller already passed through this redactor, which are then not read again."""
        return self._scrub.record(record, done) if self.enabled else record

    def describe(self) -> dict:
        """What the tape says about its own redaction (names only, never values)."""
        if not self.enabled:
            return {"enabled": False}
        described: dict = {"enabled": True, "body": True, "rules": list(RULE_NAMES)}
        for name in ("extra_headers", "keep_paths", "redact_paths"):
            if getattr(self, name):
                described[name] = getattr(self, name)
        return described
