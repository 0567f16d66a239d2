"""The report as one self-contained HTML page: the same content as the Markdown, the diagram as inline SVG drawn
here, messages in native `<details>` (collapsible with no script). No script, font, image or style sheet is
fetched, and the page's Content-Security-Policy forbids it, so it opens offline and leaks nothing.

Why not Mermaid's own bundle inlined: mermaid.min.js is 5.5 MB (12.3.0) and runs a script over the page; the SVG
drawn here costs a few KB for the same diagram."""

from __future__ import annotations

from html import escape

from .. import __version__
from . import diagram, story
from .tables import Table, clock, overview, tables

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:16px 24px;
color:#1f2933}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #d9dee3}h3{font-size:15px;margin-bottom:4px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d9dee3;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f3f5f7}code,pre{font:12px/1.4 ui-monospace,"DejaVu Sans Mono",monospace}
pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:480px}details{margin:4px 0}summary{cursor:pointer}
.diagram{overflow-x:auto;border:1px solid #d9dee3;padding:4px}.sequence text{font:12px ui-monospace,"DejaVu Sans Mono",
monospace}.sequence .actor{font-weight:bold}.error{color:#c62828}.warning{color:#a15c00}.info{color:#52606d}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{font-weight:bold}dd{margin:0}
"""
_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def render(report: dict) -> str:
    out = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f'<title>mcptape report: {escape(", ".join(t["path"] for t in report["tapes"]))}</title>',
           f'<style>{_STYLE}</style></head><body>', '<h1>mcptape report</h1>',
           f'<p class="headline"><b>{escape(story.headline(report))}</b></p>', '<dl>']
    for name, value in overview(report):
        out.append(f'<dt>{escape(name)}</dt><dd>{escape(value)}</dd>')
    out += ['</dl>', '<h2>Sequence</h2>', f'<div class="diagram">{diagram.svg(report)}</div>']
    out += _findings(report)
    for t in tables(report):
        out += _table(t)
    out.append(f'<p>Made by mcptape {__version__} (<code>mcptape report</code>). <code>mcptape check</code> and '
               f'<code>mcptape replay</code> take the same tapes.</p></body></html>')
    return "\n".join(out) + "\n"


def _table(t: Table) -> list[str]:
    out = [f'<h2>{escape(t.title)}</h2>']
    if t.note:
        out.append(f'<p>{escape(t.note)}</p>')
    out.append('<table><tr>' + "".join(f'<th>{escape(h)}</th>' for h in t.header) + '</tr>')
    for row in t.rows:
        out.append('<tr>' + "".join(f'<td>{escape(cell)}</td>' for cell in row) + '</tr>')
    out.append('</table>')
    return out


def _findings(report: dict) -> list[str]:
    """One section per story (story.py): the findings about one event together, their evidence shown once."""
    out = [f'<h2>Findings ({len(report["findings"])})</h2>']
    if not report["findings"]:
        out.append('<p>No findings: every rule held.</p>')
    for n, group in enumerate(story.stories(report), 1):
        out += [f'<h3 class="{escape(story.worst(group)["severity"])}">{n}. {escape(story.title(group))}</h3>', '<ul>']
        for f in group:
            where = f"record {f['record']} of {f['tape']}" if f["record"] is not None else f["tape"]
            call = " ".join(str(x) for x in (f["dir"], f["method"], f"#{f['request_id']}"
                                              if f["request_id"] is not None else None) if x)
            session = f'<li>session: {escape(f["session"])}</li>' if f["session"] else ""
            out.append(f'<li><code>{escape(f["rule"])}</code> ({escape(story.verdict(f))}): '
                       f'{escape(f["message"])}<ul><li>where: {escape(where)} at {escape(clock(report, f["t"]))}'
                       f'{", " + escape(call) if call else ""}</li>{session}<li>spec: {escape(f["spec"])}</li>'
                       f'</ul></li>')
        out.append('</ul>')
        for e in story.evidence(group):
            out.append(f'<details><summary>record {e["record"]}: {escape(e["what"])}</summary>'
                       f'<pre>{escape(e["body"])}</pre></details>')
    return out
