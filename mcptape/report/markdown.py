"""The report as GitHub Markdown: it renders as it is, the diagram in a Mermaid block, each finding's messages in a
collapsed `<details>`. Everything taken from a tape is untrusted text: its controls and reordering characters shown
as escapes (terminal.py, as everywhere else), then escaped in prose and tables, fenced in code blocks with a fence
longer than any backtick run it holds."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import escape

from .. import __version__
from ..terminal import safe, safe_json, safe_lines
from . import diagram, story
from .tables import Table, clock, overview, tables

_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def text(value: object) -> str:
    """Untrusted text for prose or a table cell: one line, controls shown, Markdown and HTML characters escaped."""
    return _SPECIAL.sub(r"\\\1", safe(" ".join(str(value).split())).replace("&", "&amp;"))


def fenced(body: str, language: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body}\n{fence}"


def table(t: Table) -> Iterator[str]:
    yield f"## {t.title}"
    yield ""
    if t.note:
        yield text(t.note)
        yield ""
    yield "| " + " | ".join(t.header) + " |"
    yield "|" + "---|" * len(t.header)
    for row in t.rows:
        yield "| " + " | ".join(text(cell) for cell in row) + " |"
    yield ""


def render(report: dict) -> str:
    lines = ["# mcptape report", "", f"**{text(story.headline(report))}**", ""]
    for name, value in overview(report):
        lines.append(f"- **{name}**: {text(value)}")
    lines += ["", "## Sequence", "", fenced(diagram.mermaid(report).rstrip(), "mermaid"), ""]
    lines += list(findings(report))
    for t in tables(report):
        lines += list(table(t))
    lines.append(f"Made by mcptape {__version__} (`mcptape report`). `mcptape check` and `mcptape replay` take the "
                 f"same tapes.")
    return "\n".join(lines) + "\n"


def findings(report: dict) -> Iterator[str]:
    """One section per story (story.py): the findings about one event together, their evidence shown once."""
    yield f"## Findings ({len(report['findings'])})"
    yield ""
    if not report["findings"]:
        yield "No findings: every rule held."
        yield ""
    for n, group in enumerate(story.stories(report), 1):
        yield f"### {n}. {text(story.title(group))}"
        yield ""
        for f in group:
            call = " ".join(str(x) for x in (f["dir"], f["method"], f"#{f['request_id']}"
                                              if f["request_id"] is not None else None) if x)
            where = f"record {f['record']} of {f['tape']}" if f["record"] is not None else f["tape"]
            yield f"- **`{f['rule']}`** ({story.verdict(f)}): {text(f['message'])}"
            yield f"  - where: {text(where)} at {text(clock(report, f['t']))}" + (f", {text(call)}" if call else "")
            if f["session"]:
                yield f"  - session: {text(f['session'])}"
            yield f"  - spec: {text(f['spec'])}"
        yield ""
        for e in story.evidence(group):
            # raw HTML: GitHub renders no Markdown inside <summary>, so it is escaped as HTML, not as Markdown
            yield f"<details><summary>record {e['record']}: {escape(safe(' '.join(e['what'].split())))}</summary>"
            yield ""
            # JSON keeps its \uXXXX form (still JSON); a body that is no JSON may hold C0 controls too
            yield fenced(safe_lines(safe_json(e["body"])), "json" if e["body"][:1] in "{[" else "")
            yield ""
            yield "</details>"
            yield ""
