"""How findings are shown: text for people, JSON for programs, SARIF for code-scanning tools, JUnit for CI."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from xml.etree import ElementTree

from .. import __version__
from ..terminal import safe_lines
from .requirements import DOCS, REGISTRY
from .finding import SEVERITIES, Finding


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
                                "rules": [_sarif_rule(r) for r in rules]}},
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


def _sarif_rule(rule: str) -> dict:
    requirement = REGISTRY.get(rule)
    entry: dict = {"id": rule, "shortDescription": {"text": rule.replace("-", " ")}}
    if requirement is not None:
        entry["fullDescription"] = {"text": requirement.clause}
        entry["helpUri"] = help_uri(rule)
        entry["properties"] = {"area": requirement.area, "binds": requirement.binds,
                               "levels": {r: level.value for r, level in requirement.levels.items()}}
    return entry


def help_uri(rule: str) -> str:
    """Where a rule is explained: its section of docs/rules.md (relative to the project's root)."""
    return f"{DOCS}#{rule}"


def _xml_safe(text: str) -> str:
    """Text from a tape as XML holds it and a terminal shows it: line by line through the one escaper (every
    control and reordering character as an escape; XML 1.0 cannot hold most C0 controls at all)."""
    return safe_lines(text)


def junit(rows: list, findings: list[Finding], failing: tuple[str, ...]) -> str:
    """One test case per requirement per tape (verdicts.judge's rows): a failure carries the `findings` that broke
    it (those not in a baseline) when its verdict is in `failing` (fail, and warn when warnings fail the run); a
    warning that does not fail the run, or findings all in the baseline, are said in the case's output;
    not-observed and not-applicable are skipped."""
    by_key: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        by_key.setdefault((f.tape, f.rule), []).append(f)
    suites = ElementTree.Element("testsuites", name="mcptape check")
    suite = None
    for row in rows:
        if suite is None or suite.get("name") != _xml_safe(row.tape):
            suite = ElementTree.SubElement(suites, "testsuite", name=_xml_safe(row.tape))
        rule = row.requirement.id
        case = ElementTree.SubElement(suite, "testcase", name=rule, classname=row.requirement.area)
        props = ElementTree.SubElement(case, "properties")
        ElementTree.SubElement(props, "property", name="docs", value=help_uri(rule))
        ElementTree.SubElement(props, "property", name="verdict", value=row.verdict.value)
        found = by_key.get((row.tape, rule), [])
        detail = "\n".join(line for f in found for line in (
            f"{f.severity} {f.tape}#{f.record}: {f.message}" if f.record is not None else f"{f.severity} {f.message}",
            f"  spec: {f.spec}")) + f"\ndocs: {help_uri(rule)}"
        if row.verdict.value in failing and found:
            failure = ElementTree.SubElement(case, "failure", type=row.verdict.value, message=_xml_safe(
                f"{len(found)} finding(s): {found[0].message}" if found else row.verdict.value))
            failure.text = _xml_safe(detail)
        elif row.verdict.value in ("not-observed", "not-applicable"):
            ElementTree.SubElement(case, "skipped", message=row.verdict.value)
        elif found or row.verdict.value in ("fail", "warn"):  # a warning that does not fail, or in the baseline
            said = detail if found else f"{row.verdict.value}: every finding is in the baseline"
            ElementTree.SubElement(case, "system-out").text = _xml_safe(said)
    for suite in suites:
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n"
