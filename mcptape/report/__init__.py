"""`mcptape report`: one page that tells what happened in tapes, for people (Markdown with Mermaid, a
self-contained HTML page), for programs (JSON), or the diagram alone (Mermaid). Findings come from `check`;
the page report lives here, the findings' own formats (text, JSON, SARIF) in check/formatting.py."""

from __future__ import annotations

from .data import build

FORMATS = ("md", "html", "mermaid", "json")


def render(report: dict, fmt: str) -> str:
    if fmt == "md":
        from .markdown import render as md

        return md(report)
    if fmt == "html":
        from .page import render as html

        return html(report)
    if fmt == "mermaid":
        from .diagram import mermaid

        return mermaid(report)
    from ..tape.json_form import dumps

    return dumps(report, indent=1) + "\n"


__all__ = ["FORMATS", "build", "render"]
