"""The 2026-07-28 encoding of standard header values: `Mcp-Name` and `Mcp-Param-{Name}` carry a value that is not
plain header-safe ASCII as `=?base64?{Base64 of its UTF-8}?=` (Transports › Streamable HTTP › Value Encoding).
Decoded here, once, for whatever compares a header with the body (check's header rule)."""

from __future__ import annotations

import base64
import binascii
import re

PREFIX, SUFFIX = "=?base64?", "?="  # case-sensitive, exactly as shown
# visible ASCII, space and tab (RFC 9110 field values), as the spec's Value Encoding lists them
_SAFE = re.compile(r"[\x20-\x7e\t]*")


class EncodingError(ValueError):
    """A value a client must have encoded, or encoded badly: what is wrong with it, in plain words."""


def decode(value: str) -> str:
    """The value a header stands for: the sentinel form decoded, a plain value as it is. Raises EncodingError for
    a sentinel whose payload is not Base64 or not UTF-8, and for a plain value with characters a client must have
    encoded."""
    if value.startswith(PREFIX) and value.endswith(SUFFIX) and len(value) >= len(PREFIX) + len(SUFFIX):
        payload = value[len(PREFIX):len(value) - len(SUFFIX)]
        try:
            raw = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise EncodingError(f"{quote(value)} is in the =?base64?…?= form but its payload is not Base64") from None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise EncodingError(f"{quote(value)} decodes to bytes that are not UTF-8") from None
    if not _SAFE.fullmatch(value):
        raise EncodingError(f"{quote(value)} has characters outside visible ASCII, sent without the =?base64?…?= "
                            "form")
    return value


def quote(value: object) -> str:
    """A value as a finding's message quotes it: a hostile one may be long."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}… ({len(text)} characters)"


def encode(value: str) -> str:
    """The header value a 2026-07-28 client sends for `value` (what the builder writes, as the SDK client does)."""
    if _SAFE.fullmatch(value) and "\t" not in value and value == value.strip() and not (
            value.startswith(PREFIX) and value.endswith(SUFFIX)):
        return value
    return f"{PREFIX}{base64.b64encode(value.encode('utf-8')).decode('ascii')}{SUFFIX}"
