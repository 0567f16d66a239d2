"""A tape as JSON, and back: `{"mcptape": FORMAT, "header": {...}, "records": [...]}`, or JSON Lines (header
first). Raw bytes become base64 under `raw_b64`; every record gains its `seq`. The round trip is lossless.

JSON text is written by wire/jsonrpc.py's `dumps` (exact numbers), the one writer every module uses.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from decimal import Decimal
from itertools import count
from typing import Any

from ..wire import jsonrpc
from ..wire.jsonrpc import dumps
from . import records
from .codec import FORMAT, Record


def seconds(t: Any, otherwise: float) -> float:
    """A record's time as a float: a tape imported from JSON may hold an exact decimal (or, from a stranger, no
    number at all: then `otherwise`)."""
    return float(t) if isinstance(t, (int, float, Decimal)) and not isinstance(t, bool) else otherwise


def record_to_json(record: Record, seq: int | None) -> Record:
    out: Record = {} if seq is None else {"seq": seq}
    for key, value in record.items():
        if key == "raw":
            out["raw_b64"] = base64.b64encode(value).decode()
        else:
            out[key] = value
    return out


def record_from_json(record: Record) -> Record:
    out: Record = {}
    for key, value in record.items():
        if key == "seq":
            continue
        if key == "raw_b64":
            out["raw"] = base64.b64decode(value, validate=True)
        else:
            out[key] = value
    return out


def document(header: Record, items: Iterable, numbered: bool = False) -> Record:
    """The JSON form of a tape: `items` are its records, or (record, seq) pairs when `numbered` (some of them)."""
    return {
        "mcptape": FORMAT,
        "header": record_to_json(header, None),
        "records": [record_to_json(r, seq) for r, seq in (items if numbered else zip(items, count()))],
    }


def document_text(header: Record, items: Iterable, numbered: bool = False) -> Iterator[str]:
    """`document` as JSON text (indent 1, exactly as dumps(document(...), indent=1) writes it), in pieces as the
    records are read: a tape of a million records is written without holding them."""
    head = dumps({"mcptape": FORMAT, "header": record_to_json(header, None)}, indent=1)
    sep = head[:-2] + ',\n "records": ['  # the head without its closing brace, the records' array opened
    for record, seq in items if numbered else zip(items, count()):
        yield sep + "\n  " + dumps(record_to_json(record, seq), indent=1).replace("\n", "\n  ")
        sep = ","  # a newline inside a JSON string is always escaped: every newline here is layout
    yield (sep + "]\n}") if sep != "," else "\n ]\n}"


def lines(header: Record, items: Iterable, numbered: bool = False) -> Iterator[str]:
    """JSON Lines: the header line, then one line per record (as for `document`)."""
    yield dumps({"mcptape": FORMAT, "header": record_to_json(header, None)})
    for record, seq in items if numbered else zip(items, count()):
        yield dumps(record_to_json(record, seq))


def parse_document(text: str) -> tuple[Record, list[Record]]:
    """Read either JSON form back, each record checked against its kind's fields. Raises ValueError with a
    one-line reason that names the record (its seq) and the field."""
    stripped = text.lstrip()
    if not stripped:
        raise ValueError("the file is empty")
    try:
        doc = jsonrpc.loads(stripped)
    except ValueError as e:  # JSON Lines, if its first line is the header line; else a document that broke
        items = stripped.splitlines()
        first = _jsonl_header(items[0])
        if first is None:
            raise ValueError(_where(e, stripped)) from None
        _check_format(first)
        last = len(items)
        found = [_record(_line(line, n, n == last), n - 2) for n, line in enumerate(items[1:], start=2)
                 if line.strip()]
        return _header(first["header"]), found
    if not isinstance(doc, dict) or "header" not in doc or not isinstance(doc.get("records"), list):
        raise ValueError('expected {"mcptape": …, "header": {…}, "records": […]}')
    _check_format(doc)
    return _header(doc["header"]), [_record(r, i) for i, r in enumerate(doc["records"])]


def _check_format(doc: Record) -> None:
    if doc.get("mcptape") != FORMAT:
        raise ValueError(f"tape format {doc.get('mcptape')!r} is not supported (this mcptape reads {FORMAT})")


def _jsonl_header(line: str) -> dict | None:
    """The first line of JSON Lines, `{"mcptape": …, "header": {…}}`, or None when it is not one."""
    try:
        first = jsonrpc.loads(line)
    except ValueError:
        return None
    return first if isinstance(first, dict) and "header" in first else None


def _cut_off(error: ValueError, text: str) -> bool:
    """The JSON ran off the end of the text (an unterminated string runs to the end too): the file was cut."""
    return isinstance(error, json.JSONDecodeError) and (
        error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string"))


def _where(error: ValueError, text: str) -> str:
    """Where a JSON document broke: a document cut off (the file ends inside it) says so."""
    if _cut_off(error, text):
        return (f"the JSON is cut off at line {error.lineno} (the file ends before the document does): "
                f"was it copied or saved whole?")
    if not isinstance(error, json.JSONDecodeError):
        return f"not JSON: {error}"
    return f"not JSON at line {error.lineno}, column {error.colno}: {error.msg}"


def _line(text: str, n: int, last: bool = False) -> Any:
    try:
        return jsonrpc.loads(text)
    except ValueError as e:
        if last and _cut_off(e, text):
            raise ValueError(f"line {n} is cut off (the file ends inside it)") from None
        raise ValueError(f"line {n}: {e}") from None


def _header(value: Any) -> Record:
    if not isinstance(value, dict) or value.get("kind") != records.HEADER:
        raise ValueError('the header must be an object with "kind": "header"')
    header = record_from_json(value)
    if (wrong := records.problem(header)) is not None:
        raise ValueError(f"the header: {wrong}")
    return header


def _record(value: Any, index: int) -> Record:
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        raise ValueError(f"record {index}: expected an object with a kind")
    try:
        record = record_from_json(value)
    except (ValueError, TypeError) as e:
        raise ValueError(f"record {index}: raw_b64 is not base64 ({e})") from None
    if (wrong := records.problem(record)) is not None:
        raise ValueError(f"record {index}: {wrong}")
    return record
