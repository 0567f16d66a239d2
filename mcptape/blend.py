"""A pseudonym matches anything: where a recording holds `<redacted:…>`, any live value at that position is the
same. Replay's matching (replay/match.py) and the comparison of diff and verify (check/diff.py) both ask this; it sits
below both so that diff does not load the replay server to compare two tapes."""

from __future__ import annotations

import re
from typing import Any

from .redact.pseudonym import PSEUDONYM, holds_pseudonym, is_pseudonym
from .wire import jsonrpc


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
    """JSON inside a string was redacted and written back (redact/scrub.py, Scrub._nested): the same once both are read."""
    if recorded[:1] not in "{[" or live.strip()[:1] not in "{[":
        return False
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
