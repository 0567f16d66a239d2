"""JSON text read with the place of every token, so that one value can be replaced where it stands and every other
byte kept: redaction opens JSON inside a string (a tool's text, an argument, a header) this way, and writes back
only the tokens that held a secret (docs/redaction.md).

The values are read by jsonrpc's own decoder (its scanner reads each string, number and literal, exactly as a
message's are read); this module only walks the brackets, commas and colons between them, which the standard
library's decoder does not report the places of. A key repeated in one object is kept, every occurrence, as a
`Repeated` key: json.loads keeps only the last, but the text holds all of them, and a secret under the first must
be found too.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring
from json.scanner import make_scanner
from typing import Any

from .jsonrpc import MAX_DEPTH, decoder, too_deep

_scan = make_scanner(decoder())  # (text, index) -> (value, end): one value, exactly as jsonrpc.loads reads it
_SPACE = re.compile(r"[ \t\n\r]*")

# What `parse` returns beside the value, shaped like it: a string, number or literal has (start, end); an array a
# list of its items' spans; an object a list of (key's (start, end), value's spans), in the order of the text,
# which is also the order of the object's keys.
Spans = Any


class Repeated(str):
    """A key seen before in the same object: a different key to a dict (hashed by identity), the same text to
    everything that reads it."""

    __slots__ = ()
    __hash__ = object.__hash__


class _KeyRepeated(Exception):
    pass


def _unique(pairs: list) -> dict:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _KeyRepeated
    return value


_fast = decoder(_unique)  # refuses a key written twice in one object: `parse` then reads the text itself


def parse(text: str, located: bool = True) -> tuple[Any, Spans | None] | None:
    """The JSON object or array `text` holds (spaces around it allowed) and its spans; None when it holds anything
    else, is not JSON, or nests deeper than a message may (jsonrpc.MAX_DEPTH). Not `located`: the spans may be None,
    when the standard library's decoder read it (ten times as fast: most JSON is only read, never written to),
    which it does unless a key is written twice."""
    start = _SPACE.match(text).end()
    if text[start:start + 1] not in ("{", "["):
        return None
    if not located:
        try:
            value = _fast.decode(text)
        except _KeyRepeated:
            pass
        except (ValueError, RecursionError):
            return None
        else:
            return None if too_deep(text, value) else (value, None)
    try:
        value, spans, end = _value(text, start, 0)
    except (ValueError, StopIteration, RecursionError):  # the scanner raises StopIteration where no value starts
        return None
    return (value, spans) if _SPACE.match(text, end).end() == len(text) else None


def _value(text: str, i: int, depth: int) -> tuple[Any, Spans, int]:
    c = text[i:i + 1]
    if c == "{" or c == "[":
        if depth >= MAX_DEPTH:
            raise ValueError("nested too deeply")
        return _object(text, i + 1, depth + 1) if c == "{" else _array(text, i + 1, depth + 1)
    value, end = _scan(text, i)
    return value, (i, end), end


def _object(text: str, i: int, depth: int) -> tuple[dict, list, int]:
    value: dict = {}
    spans: list = []
    i = _SPACE.match(text, i).end()
    if text[i:i + 1] == "}":
        return value, spans, i + 1
    while True:
        if text[i:i + 1] != '"':
            raise ValueError("expected a key")
        key, end = scanstring(text, i + 1)
        key_span = (i, end)
        i = _SPACE.match(text, end).end()
        if text[i:i + 1] != ":":
            raise ValueError("expected ':'")
        item, item_spans, i = _value(text, _SPACE.match(text, i + 1).end(), depth)
        value[Repeated(key) if key in value else key] = item
        spans.append((key_span, item_spans))
        i = _SPACE.match(text, i).end()
        c = text[i:i + 1]
        if c == "}":
            return value, spans, i + 1
        if c != ",":
            raise ValueError("expected ',' or '}'")
        i = _SPACE.match(text, i + 1).end()


def _array(text: str, i: int, depth: int) -> tuple[list, list, int]:
    value: list = []
    spans: list = []
    i = _SPACE.match(text, i).end()
    if text[i:i + 1] == "]":
        return value, spans, i + 1
    while True:
        item, item_spans, i = _value(text, i, depth)
        value.append(item)
        spans.append(item_spans)
        i = _SPACE.match(text, i).end()
        c = text[i:i + 1]
        if c == "]":
            return value, spans, i + 1
        if c != ",":
            raise ValueError("expected ',' or ']'")
        i = _SPACE.match(text, i + 1).end()


def splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each (start, end, value) token replaced by `value` written as a JSON string, and nothing else
    changed. The new token is written in ASCII with escapes where the old one was ASCII (or where the value holds a
    lone surrogate, which UTF-8 cannot carry), in plain characters otherwise."""
    parts, last = [], 0
    for start, end, value in sorted(edits):
        as_ascii = text[start:end].isascii() or not _utf8(value)
        parts += [text[last:start], json.dumps(value, ensure_ascii=as_ascii)]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
