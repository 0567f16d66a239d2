"""`mcptape report`: one page that tells what happened in tapes, for people (Markdown with Mermaid, a
self-contained HTML page), for programs (JSON), or the diagram alone (Mermaid). Findings come from `check`;
the page report lives here, the findings' own formats (text, JSON, SARIF) in check/formatting.py."""

from __future__ import annotations

from collections.abc import Iterator

from .calls import CallList
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
    """What json_form.dumps(report, indent=1) writes, a top-level item at a time: a list (every call from the
    spool, the findings, the sessions) an element at a time, never the whole text of a long report at once."""
    from ..tape.json_form import dumps

    yield "{"
    for n, (key, value) in enumerate(report.items()):
        yield ("\n " if n == 0 else ",\n ") + dumps(key) + ": "
        if not isinstance(value, list):
            yield dumps(value, indent=1).replace("\n", "\n ")
            continue
        first = True  # a list at depth 1: each element two spaces in; the calls, every one, from the spool
        for item in value.every() if isinstance(value, CallList) else value:
            yield ("[\n  " if first else ",\n  ") + dumps(item, indent=1).replace("\n", "\n  ")
            first = False
        yield "[]" if first else "\n ]"
    yield "\n}\n" if report else "}\n"


__all__ = ["FORMATS", "build", "render"]
