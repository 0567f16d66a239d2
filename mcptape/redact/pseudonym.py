"""What stands where a secret stood: `<redacted:` and twelve hex digits (an HMAC of the secret, Redactor.pseudonym),
alone or behind an auth scheme."""

from __future__ import annotations

import re
from typing import Any

# A pseudonym (Redactor.pseudonym) wherever it stands in a string: what verify cannot send, and compares as anything.
PSEUDONYM = re.compile(r"<redacted:[0-9a-f]{12}>")
# Schemes kept in front of the pseudonym: "Bearer <redacted:…>" still says how the client authenticated.
SCHEMES = ("bearer ", "basic ", "digest ", "token ", "negotiate ", "dpop ")


def is_pseudonym(value: Any) -> bool:
    """A redaction pseudonym: `<redacted:…>`, or one behind an auth scheme (`Bearer <redacted:…>`)."""
    if not isinstance(value, str):
        return False
    if PSEUDONYM.fullmatch(value):
        return True
    scheme, _, rest = value.partition(" ")
    return bool(rest) and (scheme.lower() + " ") in SCHEMES and PSEUDONYM.fullmatch(rest) is not None


def holds_pseudonym(value: Any) -> bool:
    """A string with a pseudonym anywhere in it (a redacted token inside a text)."""
    return isinstance(value, str) and "<redacted:" in value and PSEUDONYM.search(value) is not None
