"""What the report's pages say, as plain text cells: the overview and the tables. Markdown and HTML lay out the
same cells, so both pages say the same thing; the findings, with their excerpts, each page lays out itself."""

from __future__ import annotations

from dataclasses import dataclass, field

from .calls import matters
from .diagram import session_label, sessionless

CALLS_LISTED = 100  # the calls that matter, listed one by one (the JSON has them all)


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    note: str = ""


def clock(report: dict, t: float | None) -> str:
    """A time as seconds after the first record of the report."""
    if t is None or report["start"] is None:
        return ""
    return f"+{float(t) - report['start']:.3f} s"  # float: a tape imported from JSON may hold exact decimals


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.1f} ms"


def overview(report: dict) -> list[tuple[str, str]]:
    s = report["summary"]
    tapes = ", ".join(f"{t['path']} ({t['records']} records)" for t in report["tapes"])
    span = [t for t in report["tapes"] if t["start"] is not None]
    lasted = f"{max(t['end'] for t in span) - min(t['start'] for t in span):.3f} s" if span else "empty"
    transports = sorted({f"{x['transport']}" + (f" {x['version']}" if x["version"] else "")
                         for x in report["sessions"]})
    peers = report.get("peers") or {}
    connections = sum(sessionless(x) for x in report["sessions"])
    rows = [("Tapes", tapes), ("Recorded over", lasted)]
    if peers:
        rows.append(("Peers", ", ".join(f"{side} {name}" for side, name in sorted(peers.items()))))
    rows += [
        ("Transports", ", ".join(transports) or "none"),
        ("Sessions", f"{len(report['sessions']) - connections}"
                     + (f" ({connections} connection(s) without a session)" if connections else "")),
        ("Calls", f"{s['calls']} ({s['failed_calls']} without a plain result)"),
        ("Findings", f"{s['error']} error(s), {s['warning']} warning(s), {s['info']} info"),
        ("Edits fired", str(s["edits"])),
    ]
    return rows


def tables(report: dict) -> list[Table]:
    out = [_sessions(report), _methods(report), _calls(report)]
    statuses = Table("HTTP statuses", ["Status", "Responses"],
                     [[k, str(v)] for k, v in report["statuses"].items()])
    ends = Table("How exchanges ended", ["End", "Exchanges"], [[k, str(v)] for k, v in report["ends"].items()])
    exits = Table("stdio server exits", ["Record", "Exit"],
                  [[str(e["record"]), e["error"] or (f"killed by {e['signal']}" if e["signal"] else f"code {e['code']}")]
                   for e in report["exits"]])
    edits = Table("Edits that fired", ["Time", "Record", "Edit", "What mcptape did"],
                  [[clock(report, e["t"]), str(e["record"]), "; ".join(e["edits"]), str(e["detail"])]
                   for e in report["edits"]])
    return out + [t for t in (statuses, ends, exits, edits) if t.rows]


def _sessions(report: dict) -> Table:
    rows = []
    for s in report["sessions"]:
        life = []
        for what in ("dead", "ended", "superseded"):
            step = s[what]
            if step is not None:
                status = f" {step['status']}" if step["status"] is not None else ""
                life.append(f"{step['kind']}{status} at {clock(report, step['t'])}"
                            f"{' (by an edit)' if step['injected'] else ''}")
        if s["midway"]:
            life.insert(0, "recording began mid-session")
        if s["unknown"]:
            life.insert(0, "never opened in the tape")
        opened = clock(report, s["opened"]["t"]) if s["opened"] else ""
        alive = "no session on this wire" if sessionless(s) else "alive at the end"
        rows.append([session_label(s), s["transport"], s["version"] or "", opened, "; ".join(life) or alive,
                     str(s["calls"])])
    return Table("Sessions", ["Session", "Transport", "Revision", "Opened", "Then", "Calls"], rows)


def _methods(report: dict) -> Table:
    rows = [[m["dir"], m["method"], str(m["count"]),
             ", ".join(f"{k} {v}" for k, v in sorted(m["outcomes"].items(), key=lambda kv: -kv[1])),
             _ms(m["median_ms"]), _ms(m["max_ms"])] for m in report["methods"]]
    return Table("Calls by method", ["Sent", "Method", "Calls", "Outcomes", "Median", "Slowest"], rows,
                 "c2s: the client asked; s2c: the server asked.")


def _calls(report: dict) -> Table:
    about = {(f["tape"], f["record"]) for f in report["findings"]}
    calls, total = report["calls"], report["summary"]["calls"]
    listed = calls if total <= CALLS_LISTED else [c for c in calls if matters(c, about)]
    rows = []
    sessions = {s["label"]: s for s in report["sessions"]}
    for c in listed[:CALLS_LISTED]:
        ident = "" if c["id"] is None else f" #{c['id']}"
        outcome = c["outcome"]
        if c["error"]:
            outcome += f" {c['error']['code']} {c['error']['message']}"
        notes = [n for n in ("injected by an edit" if c["injected"] else "",
                             f"{c['progress']} progress" if c["progress"] else "",
                             "finding" if (c["tape"], c["record"]) in about else "") if n]
        session = sessions.get(c["session"])
        rows.append([clock(report, c["t"]), session_label(session) if session else c["session"], c["dir"],
                     f"{c['method']}{ident}" + (f" {c['name']}" if c["name"] else ""), outcome,
                     _ms(c["duration_ms"]), ", ".join(notes)])
    note = ""
    if total > CALLS_LISTED:
        note = (f"{len(listed)} of {total} calls matter (the handshake, failed, unanswered, injected, asked by "
                f"the server, or a finding's)")
        if len(listed) > CALLS_LISTED:
            note += f"; the first {CALLS_LISTED} are listed"
        note += ". The JSON report lists every call."
    title = "Calls" if total <= CALLS_LISTED else "Calls that matter"
    return Table(title, ["Time", "Session", "Sent", "Call", "Outcome", "Took", "Notes"], rows, note)
