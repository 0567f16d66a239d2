"""JSON pointers (RFC 6901), as `--ignore`, `--keep-path` and `--redact-path` take them: parse one, write one, and
drop what it names from a value."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Self

_DEEPDIFF_STEP = re.compile(r"\[(?:'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"|(\d+))\]")


class Pointer(str):
    """A JSON pointer parsed once (at the option that gave it): its text, for whatever prints or stores it, and its
    steps, which `parse` hands back without reading the text again."""

    steps: tuple[str, ...]

    def __new__(cls, text: str, option: str = "--ignore") -> Self:
        pointer = super().__new__(cls, text)
        pointer.steps = tuple(parse(text, option))
        return pointer


def parse(text: str, option: str = "--ignore") -> list[str]:
    if isinstance(text, Pointer):
        return list(text.steps)
    if not text.startswith("/"):
        raise ValueError(f"{option} {text!r}: a JSON pointer starts with / (e.g. /params/arguments/now)")
    return [p.replace("~1", "/").replace("~0", "~") for p in text.split("/")[1:]]


def without(value: Any, pointer: list[str]) -> Any:
    """`value` without the part `pointer` names; containers on the way are copied, the original is not changed.
    A list item is replaced by null rather than removed, so the positions of the others stay put."""
    if not pointer:
        return value
    head, rest = pointer[0], pointer[1:]
    if isinstance(value, dict) and head in value:
        copy = dict(value)
        if rest:
            copy[head] = without(value[head], rest)
        else:
            del copy[head]
        return copy
    if isinstance(value, list) and head.isdigit() and int(head) < len(value):
        copy = list(value)
        copy[int(head)] = without(value[int(head)], rest) if rest else None
        return copy
    return value


def from_deepdiff(path: str) -> str:
    """deepdiff's `root['params']['arguments'][0]` as the JSON pointer `/params/arguments/0`: what --ignore takes,
    so a difference can be pasted back."""
    return encode(a or b or c for a, b, c in _DEEPDIFF_STEP.findall(path))


def encode(steps: Iterable) -> str:
    """A path of keys and indexes as a JSON pointer: `["params", "a/b", 0]` -> `/params/a~1b/0`."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in steps)
