"""How findings are shown: text for people, JSON for programs, SARIF for code-scanning tools."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .. import __version__
from .rules import SEVERITIES, Finding


def summary(findings: list[Finding], tapes: list[str]) -> dict:
    counts = Counter(f.severity for f in findings)
    return {"tapes": len(tapes), **{s: counts.get(s, 0) for s in SEVERITIES},
            "rules": dict(sorted(Counter(f.rule for f in findings).items()))}


def text(findings: list[Finding], tapes: list[str]) -> Iterable[str]:
    for f in findings:
        where = f"{f.tape}#{f.record}" if f.record is not None else f.tape
        call = " ".join(str(x) for x in (f.dir, f.method, f"#{f.request_id}" if f.request_id is not None else None) if x)
        session = f" session {f.session}" if f.session else ""
        injected = " [rests on what mcptape injected]" if f.injected else ""
        blames = f"  blames the {f.blames}" if f.blames != "none" else ""
        yield f"{f.severity:7} {f.rule}  {where}{session}  {call}{blames}".rstrip()
        yield f"        {f.message}{injected}"
        yield f"        spec: {f.spec}"
    s = summary(findings, tapes)
    yield (f"{s['error']} error(s), {s['warning']} warning(s), {s['info']} info in {s['tapes']} tape(s)"
           if findings else f"no findings in {s['tapes']} tape(s)")


def as_json(findings: list[Finding], tapes: list[str]) -> dict:
    return {"findings": [f.to_json() for f in findings], "summary": summary(findings, tapes)}


def sarif(findings: list[Finding], tapes: list[str]) -> dict:
    level = {"error": "error", "warning": "warning", "info": "note"}
    rules = sorted({f.rule for f in findings})
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "mcptape", "version": __version__,
                                "rules": [{"id": r, "shortDescription": {"text": r.replace("-", " ")}} for r in rules]}},
            "artifacts": [{"location": {"uri": t}} for t in tapes],
            "results": [{
                "ruleId": f.rule, "level": level[f.severity],
                "message": {"text": f"{f.message} (spec: {f.spec})"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.tape}},
                               "logicalLocations": [{"name": f"record {f.record}", "kind": "record"}]}],
                "properties": {k: v for k, v in f.to_json().items() if k not in ("rule", "message", "tape")},
            } for f in findings],
        }],
    }
