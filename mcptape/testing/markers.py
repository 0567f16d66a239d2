"""A test's tapes as its `mcptape` markers say: where each lives (pytest-recording's layout), its edits (parsed
once, at collection), what replay matching ignores, which server records it, its record mode."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .modes import RecordMode

SUFFIX = ".mcptape"
OPTIONS = ("tape", "edits", "ignore", "upstream", "command", "mode", "strict")
FORBIDDEN = "<>?%*:|\"'/\\"  # pytest-recording's rule: these become "-" in a default tape name


class MarkerError(ValueError):
    """A marker that cannot be used; the message says which part and what it takes."""


@dataclass(frozen=True)
class Spec:
    """One tape of a test, as its markers say."""

    path: str
    edits: tuple  # parsed edits (mcptape.edits.Edit), parsed once at collection
    ignore: tuple[str, ...]
    upstream: str | None
    command: tuple[str, ...] | None
    mode: str | None
    strict: bool


# -- markers ------------------------------------------------------------------------------------------------------


def default_name(item: pytest.Item) -> str:
    """pytest-recording's default: `Class.test_name[params]`, with characters a file name cannot hold made '-'."""
    cls = getattr(item, "cls", None)
    name = f"{cls.__name__}.{item.name}" if cls is not None else item.name
    for ch in FORBIDDEN:
        name = name.replace(ch, "-")
    return name


def cassette_dir(item: pytest.Item) -> Path:
    """pytest-recording's layout: `cassettes/<module>/` beside the test module."""
    return item.path.parent / "cassettes" / item.path.stem


def specs(item: pytest.Item) -> list[Spec]:
    """The tapes a test uses: one per tape its closest markers name (several markers, or tape=[...]); markers on
    its class or module give defaults the closer ones override. No marker: the default tape, replayed."""
    levels: dict[Any, list[dict]] = {}
    for node, mark in item.iter_markers_with_node("mcptape"):
        levels.setdefault(node, []).append(_options(mark))
    groups = list(levels.values())  # the closest first
    defaults: dict = {}
    for group in reversed(groups[1:]):
        for options in group:
            defaults.update(options)
    entries = []
    for options in groups[0] if groups else [{}]:
        merged = {**defaults, **options}
        names = merged.pop("tape", None)
        for name in names if isinstance(names, (list, tuple)) else [names]:
            entries.append((name, merged))
    if len(entries) > 1 and any(name is None for name, _ in entries):
        raise MarkerError("a test with several tapes must name each one (tape=...)")
    out, paths = [], set()
    for name, options in entries:
        spec = _spec(item, name, options)
        if spec.path in paths:
            raise MarkerError(f"tape {spec.path} is named twice")
        paths.add(spec.path)
        out.append(spec)
    return out


def _options(mark: pytest.Mark) -> dict:
    if len(mark.args) > 1:
        raise MarkerError("the marker takes one positional argument, the tape (or a list of tapes)")
    unknown = sorted(set(mark.kwargs) - set(OPTIONS))
    if unknown:
        raise MarkerError(f"unknown option {unknown[0]!r} (the marker takes {', '.join(OPTIONS)})")
    return {**({"tape": mark.args[0]} if mark.args else {}), **mark.kwargs}


def _strings(options: dict, key: str) -> tuple[str, ...]:
    value = options.get(key) or ()
    value = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(v, str) for v in value):
        raise MarkerError(f"{key}= takes a list of strings")
    return value


def _spec(item: pytest.Item, name: Any, options: dict) -> Spec:
    from ..edits import EditError, parse
    from ..wire import pointer

    if name is None:
        name = default_name(item) + SUFFIX
    elif not isinstance(name, (str, os.PathLike)):
        raise MarkerError(f"tape={name!r}: a file name or path")
    name = os.fspath(name)
    if not name.endswith(SUFFIX):
        name += SUFFIX
    path = os.path.normpath(os.path.join(cassette_dir(item), name))  # an absolute name stays as it is
    try:
        edits = tuple(parse(text) for text in _strings(options, "edits"))
    except EditError as e:
        raise MarkerError(str(e)) from None
    try:  # parsed once here, as the edits are: the replay reads their steps
        ignore = tuple(pointer.Pointer(text, "ignore=") for text in _strings(options, "ignore"))
    except ValueError as e:
        raise MarkerError(str(e)) from None
    mode = options.get("mode")
    if mode is not None:
        try:
            RecordMode.parse(mode, "mode")
        except ValueError as e:
            raise MarkerError(str(e)) from None
    command = options.get("command")
    if command is not None:
        if isinstance(command, str) or not command or not all(isinstance(a, str) for a in command):
            raise MarkerError("command= takes the server's argv as a list, e.g. ['python', 'server.py']")
        command = tuple(command)
    up = options.get("upstream")
    if up is not None and command is not None:
        raise MarkerError("give upstream= (an HTTP server) or command= (a stdio server), not both")
    if up is not None and not (isinstance(up, str) and up.startswith(("http://", "https://"))):
        raise MarkerError(f"upstream={up!r}: an http:// or https:// URL")
    return Spec(path, edits, ignore, up, command, mode, bool(options.get("strict", False)))
