"""`mcptape report`: one page that tells what happened in tapes, for people (Markdown with Mermaid, a
self-contained HTML page), for programs (JSON), or the diagram alone (Mermaid). Findings come from `check`;
the page report lives here, the findings' own formats (text, JSON, SARIF) in check/report.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from .data import build

FORMATS = ("md", "html", "mermaid", "json")


def render(report: dict, fmt: str) -> str:
    return "".join(chunks(report, fmt))


def chunks(report: dict, fmt: str) -> Iterator[str]:
    """The report in a format, as text to write in order: the JSON report lists every call from the spool
    (report/calls.py) as it writes, never all of them in memory at once."""
    if fmt == "json":
        yield from _json(report)
    else:
        yield _page(report, fmt)


def _page(report: dict, fmt: str) -> str:
    if fmt == "md":
        from .markdown import render as md

        return md(report)
    if fmt == "html":
        from .page import render as html

        return html(report)
    if fmt == "mermaid":
        from .diagram import mermaid

        return mermaid(report)
    raise ValueError(f"no report format {fmt!r}")


def _json(report: dict) -> Iterator[str]:
    from ..tape.json_form import dumps

    calls = report["calls"]
    every = calls.every() if hasattr(calls, "every") else calls
    marker = f"calls-{uuid.uuid4()}"  # unguessable: no string from a tape is it
    before, _, after = dumps({**report, "calls": marker}, indent=1).partition(f'"{marker}"')
    yield before
    first = True
    for call in every:  # as json.dumps(indent=1) writes a list at depth 1: each item two spaces in
        yield ("[\n  " if first else ",\n  ") + dumps(call, indent=1).replace("\n", "\n  ")
        first = False
    yield "[]" if first else "\n ]"
    yield after + "\n"


__all__ = ["FORMATS", "build", "render"]
