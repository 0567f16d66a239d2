"""The report's sequence diagram, decided once as a list of steps, then written as Mermaid (Markdown) or drawn as
inline SVG (HTML). A long conversation is summarized so the diagram stays readable: every call that matters is
drawn (the handshake, failures, calls an edit touched or a finding is about, requests the server sent), and runs of
ordinary answered calls between them are folded into one note that counts them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from html import escape

from ..tape import records
from ..terminal import safe
from . import story
from .calls import matters

CLIENT, MCPTAPE, SERVER = "client", "mcptape", "server"
ALL_CALLS_UNDER = 30  # a conversation with fewer calls is drawn whole
RUN_SHOWN = 2  # of a longer run of ordinary calls, this many are drawn before the note that counts the rest
MAX_STEPS = 160  # past this, the middle of the diagram is folded too (the tables list everything)
LABEL_CHARS = 70


@dataclass(frozen=True)
class Step:
    kind: str  # "arrow" or "note"
    text: str
    frm: str = CLIENT  # an arrow's ends; a note spans frm..to
    to: str = SERVER
    style: str = ""  # arrow: request | answer | error | injected; note: session | edit | finding | summary
    at: str = ""  # an arrow's record, TAPE#SEQ: the SVG carries it, so a reader (or a test) finds what is drawn


def _short(text: str, width: int = LABEL_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


_ENDS = {records.C2S: (CLIENT, SERVER), records.S2C: (SERVER, CLIENT)}


def _call_steps(call: dict) -> tuple[list[Step], list[Step]]:
    """The arrow of the request, and what became of it (drawn where the answer is in the tape)."""
    frm, to = (CLIENT, SERVER) if call["dir"] == records.C2S else (SERVER, CLIENT)
    ident = "" if call["id"] is None else f" #{call['id']}"
    name = f" {call['name']}" if call.get("name") else ""
    took = f" ({call['duration_ms']:.0f} ms)" if call["duration_ms"] is not None else ""
    answerer = MCPTAPE if call["injected"] and call["dir"] == records.C2S else to
    # mcptape answered it: the request is drawn reaching mcptape, not the server
    asked = [Step("arrow", _short(f"{call['method']}{ident}{name}"), frm, answerer, "request",
                  f"{call['tape']}#{call['record']}")]
    back = f"{call['tape']}#{call['response_record']}" if call["response_record"] is not None else ""
    style = "injected" if answerer == MCPTAPE else "error"
    outcome = call["outcome"]
    if outcome == "result":
        return asked, [Step("arrow", f"result{ident}{took}", answerer, frm,
                            "injected" if answerer == MCPTAPE else "answer", back)]
    if outcome in ("error", "tool error"):
        err = call.get("error") or {}
        said = f" {err.get('code')} {err.get('message')}" if err else ""
        return asked, [Step("arrow", _short(f"{outcome}{ident}{said}{took}"), answerer, frm, style, back)]
    if outcome.startswith("HTTP"):
        return asked, [Step("arrow", f"{outcome}{ident}", answerer, frm, style, back)]
    return asked, [Step("note", f"{call['method']}{ident}: {outcome}", to, to, "finding")]  # no answer, cancelled


def steps(report: dict) -> list[Step]:
    """The diagram of a report (report/data.py), in tape order."""
    calls = report["calls"]
    about = {(f["tape"], f["record"]) for f in report["findings"]}
    everything = report["summary"]["calls"] < ALL_CALLS_UNDER
    events: list[tuple[tuple, list[Step] | str]] = []
    order = {t["path"]: i for i, t in enumerate(report["tapes"])}

    def at(tape: str, seq: int, tie: int) -> tuple:
        return order.get(tape, 0), seq, tie

    for call in calls:
        if not (everything or matters(call, about)):
            events.append((at(call["tape"], call["record"], 1), call["method"]))
            continue
        asked, answered = _call_steps(call)
        events.append((at(call["tape"], call["record"], 1), asked))
        answered_at = call["response_record"] if call["response_record"] is not None else call["record"]
        events.append((at(call["tape"], answered_at, 1), answered))
    for run in getattr(calls, "folded", ()):  # the calls a long report did not keep (report/calls.py)
        events.append((at(run["tape"], run["record"], 1), run))
    for x in report.get("exchanges", ()):  # a refused GET, a DELETE: what a session's end rests on
        answerer = MCPTAPE if x["injected"] else SERVER
        style = "injected" if x["injected"] else "error" if x["status"] >= 400 else "answer"
        events.append((at(x["tape"], x["record"], 1), [Step("arrow", x["method"], CLIENT, answerer, "request",
                                                            f"{x['tape']}#{x['record']}")]))
        events.append((at(x["tape"], x["response_record"], 1),
                       [Step("arrow", f"HTTP {x['status']} ({x['method']})", answerer, CLIENT, style,
                             f"{x['tape']}#{x['response_record']}")]))
    drawn = {(c["tape"], c["record"]) for c in calls} | {(x["tape"], x["record"]) for x in report.get("exchanges", ())}
    for f in report["findings"]:  # a finding about a message that is no call (a log the server did not declare)
        where = (f["tape"], f["record"])
        if f["record"] is not None and f["method"] and f["dir"] in _ENDS and where not in drawn:
            drawn.add(where)
            frm, to = _ENDS[f["dir"]]
            sender, style = (MCPTAPE, "injected") if f["injected"] else (frm, "request")
            events.append((at(*where, 1), [Step("arrow", _short(f["method"]), sender, to, style,
                                                f"{f['tape']}#{f['record']}")]))
    for s in report["sessions"]:
        for what in ("opened", "dead", "ended", "superseded"):
            step = s[what]
            if step is not None:
                status = f" {step['status']}" if step["status"] is not None and step["kind"] != "opened" else ""
                version = f" ({s['version']})" if what == "opened" and s["version"] else ""
                by = " by an edit" if step["injected"] else ""
                text = f"session {session_label(s)} {step['kind']}{status}{by}{version}"
                events.append((at(s["tape"], step["record"], 0 if what == "opened" else 2),
                               [Step("note", text, CLIENT, SERVER, "session")]))
    for e in report["edits"]:
        text = f"edit {'; '.join(e['edits'])}: {e['detail']}"
        events.append((at(e["tape"], e["record"], 0), [Step("note", _short(text, 90), MCPTAPE, MCPTAPE, "edit")]))
    for group in story.stories(report):  # the findings about one event: one note
        f = group[0]
        injected = " (rests on an edit)" if any(g["injected"] for g in group) else ""
        events.append((at(f["tape"], f["record"] if f["record"] is not None else 1 << 62, 3),
                       [Step("note", story.title(group) + injected, CLIENT, SERVER, "finding")]))
    events.sort(key=lambda e: e[0])
    return _fold(events)


def sessionless(session: dict) -> bool:
    """No session on the wire (2026-07-28, or a server that hands out none): the model names one per connection."""
    return session["label"].startswith(("stateless:", "sessionless:"))


def session_label(session: dict) -> str:
    label = session["label"]
    if session["transport"] == "stdio":
        return "stdio" + label[label.rfind("#"):]
    if sessionless(session):
        return f"(no session, {label[label.rfind(':') + 1:]})"
    return label[:8] + ("…" if len(label) > 8 else "")


def _fold(events: list) -> list[Step]:
    """Drawn steps in order; runs of ordinary calls (given as their method, or as a run of calls the report did not
    keep) become a counting note."""
    out: list[Step] = []
    shown: list[str] = []  # the run's first methods, drawn
    rest: Counter = Counter()  # the run's others, counted
    unanswered = 0  # of those, calls a long report did not keep that had no plain result

    def flush() -> None:
        nonlocal unanswered
        for method in shown:
            out.append(Step("arrow", method, CLIENT, SERVER, "request"))
            out.append(Step("arrow", "result", SERVER, CLIENT, "answer"))
        if rest:
            what = ", ".join(f"{m} ×{n}" for m, n in rest.most_common(4)) + (", …" if len(rest) > 4 else "")
            more = f"{sum(rest.values())} more calls" + (f" ({unanswered} without a plain result)" if unanswered
                                                         else " answered")
            out.append(Step("note", f"… {more}: {what}", CLIENT, SERVER, "summary"))
        shown.clear()
        rest.clear()
        unanswered = 0

    def ordinary(method: str, n: int = 1) -> None:
        while n and len(shown) < RUN_SHOWN:
            shown.append(method)
            n -= 1
        if n:
            rest[method] += n

    for _, item in events:
        if isinstance(item, str):
            ordinary(item)
        elif isinstance(item, dict):  # a folded run: its first methods in order, then the counts of the rest
            counts = item["methods"].copy()
            for method in item["first"]:
                counts[method] -= 1
                ordinary(method)
            for method, n in counts.items():
                ordinary(method, n)
            unanswered += item["unanswered"]
        else:
            flush()
            out.extend(item)
    flush()
    if len(out) > MAX_STEPS:
        head, tail = out[: MAX_STEPS * 2 // 3], out[-(MAX_STEPS // 3):]
        hidden = len(out) - len(head) - len(tail)
        out = head + [Step("note", f"… {hidden} more steps (the tables below list every call and finding)",
                           CLIENT, SERVER, "summary")] + tail
    return out


def participants(drawn: list[Step]) -> list[str]:
    used = {CLIENT, SERVER} | {s.frm for s in drawn} | {s.to for s in drawn}
    return [p for p in (CLIENT, MCPTAPE, SERVER) if p in used]


def names(report: dict) -> dict[str, str]:
    peers = report.get("peers") or {}
    return {CLIENT: _short(f"Client {peers['client']}" if "client" in peers else "Client", 30),
            MCPTAPE: "mcptape (edits)",
            SERVER: _short(f"Server {peers['server']}" if "server" in peers else "Server", 30)}


# -- Mermaid ------------------------------------------------------------------------------------------------------

_MERMAID_ID = {CLIENT: "C", MCPTAPE: "M", SERVER: "S"}
_MERMAID_ARROW = {"request": "->>", "answer": "-->>", "error": "--x", "injected": "--x"}
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,/()-_=+*'…×!?@$%^~[]{}|\"")


def _mermaid_text(text: str) -> str:
    """Text from a tape is untrusted: its controls and reordering characters are shown as escapes (terminal.py; an
    entity would draw them raw), then anything that could end a Mermaid statement or open markup (#, ;, :, <, >,
    backticks, newlines…) is written as Mermaid's own entity code."""
    return "".join(c if c in _SAFE else f"#{ord(c)};" for c in safe(text))


def mermaid(report: dict, drawn: list[Step] | None = None) -> str:
    drawn = steps(report) if drawn is None else drawn
    label = names(report)
    lines = ["sequenceDiagram"]
    for p in participants(drawn):
        lines.append(f"    participant {_MERMAID_ID[p]} as {_mermaid_text(label[p])}")
    for s in drawn:
        text = _mermaid_text(s.text)
        if s.kind == "arrow":
            lines.append(f"    {_MERMAID_ID[s.frm]}{_MERMAID_ARROW[s.style]}{_MERMAID_ID[s.to]}: {text}")
        else:
            span = _MERMAID_ID[s.frm] if s.frm == s.to else f"{_MERMAID_ID[s.frm]},{_MERMAID_ID[s.to]}"
            lines.append(f"    Note over {span}: {text}")
    return "\n".join(lines) + "\n"


# -- SVG ----------------------------------------------------------------------------------------------------------

_COLUMN = 340
_GAP = 8  # an arrow label keeps this far from the lifelines on either side of it
_ROW = 30
_TOP = 56
_CHAR = 7.2  # the width of one character of the 12px monospace labels
_COLOURS = {"request": "#1f4e8c", "answer": "#2e7d32", "error": "#c62828", "injected": "#8e24aa",
            "session": "#eef3fb", "edit": "#f6e8fb", "finding": "#fdecea", "summary": "#f3f3f3"}


def svg(report: dict, drawn: list[Step] | None = None) -> str:
    """The diagram as one inline SVG element: no script, no font to fetch, nothing outside the page."""
    drawn = steps(report) if drawn is None else drawn
    label = names(report)
    cols = participants(drawn)
    x = {p: 160 + i * _COLUMN for i, p in enumerate(cols)}
    width = 160 * 2 + _COLUMN * (len(cols) - 1)
    height = _TOP + _ROW * (len(drawn) + 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="sequence" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="sequence diagram, client and server">',
           '<defs>' + "".join(
               f'<marker id="head-{style}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
               f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{_COLOURS[style]}"/></marker>'
               for style in ("request", "answer", "error", "injected")) + '</defs>']
    for p in cols:
        out.append(f'<line x1="{x[p]}" y1="{_TOP - 14}" x2="{x[p]}" y2="{height - 8}" stroke="#9aa5b1" '
                   f'stroke-dasharray="4 4"/>')
        out.append(f'<rect x="{x[p] - 130}" y="8" width="260" height="30" rx="4" fill="#ffffff" stroke="#52606d"/>')
        out.append(f'<text x="{x[p]}" y="28" text-anchor="middle" class="actor">{escape(label[p])}</text>')
    for i, s in enumerate(drawn):
        y = _TOP + _ROW * i + 18
        colour = _COLOURS.get(s.style, "#333333")
        if s.kind == "arrow":
            x1, x2 = x[s.frm], x[s.to]
            dash = ' stroke-dasharray="6 3"' if s.style != "request" else ""
            at = f' data-at="{escape(s.at)}"' if s.at else ""
            out.append(f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="{colour}" stroke-width="1.6"{dash} '
                       f'marker-end="url(#head-{s.style})"{at}/>')
            # the label sits between the sender's lifeline and the next one toward the receiver, on a box of its
            # own: an arrow that crosses a lifeline (client to server, past mcptape) never writes over it
            near = x1 + (_COLUMN if x2 > x1 else -_COLUMN)
            centre, label = (x1 + near) / 2, _cut(s.text, _COLUMN - 2 * _GAP)
            half = len(label) * _CHAR / 2 + 3
            out.append(f'<rect x="{centre - half:.1f}" y="{y - 17}" width="{2 * half:.1f}" height="15" '
                       f'fill="#ffffff" class="label-box"/>')
            out.append(f'<text x="{centre}" y="{y - 5}" text-anchor="middle" fill="{colour}" '
                       f'class="label {s.style}">{escape(label)}</text>')
        else:
            left, right = sorted((x[s.frm], x[s.to]))
            centre = (left + right) / 2
            half = max(130, min(len(s.text) * _CHAR / 2 + 12, centre - 8, width - centre - 8))
            out.append(f'<rect x="{centre - half}" y="{y - 15}" width="{2 * half}" height="22" rx="3" '
                       f'fill="{colour}" stroke="#c5ccd3" class="note {s.style}"/>')
            out.append(f'<text x="{centre}" y="{y}" text-anchor="middle">{escape(_cut(s.text, 2 * half))}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _cut(text: str, room: float) -> str:
    """The text cut to the room it has (the whole of it stays in the tables and the JSON)."""
    chars = int(room / _CHAR)
    return text if len(text) <= chars else text[: max(chars - 1, 1)] + "…"
