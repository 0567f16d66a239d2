"""`check` for CI, in memory: the verdict table, JUnit read back by a real JUnit reader, SARIF rule ids with their
docs anchors, baselines, the project's settings, the JSON Schema of the JSON output, docs/rules.md up to date."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from junitparser import Failure, JUnitXml, Skipped

from mcptape.check.requirements import REGISTRY, docs
from mcptape.cli import main
from mcptape.model import STDIO
from mcptape.testing.builder import Conversation

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "check.schema.json").read_text())


def broken_tape(path: Path, name: str = "broken") -> str:
    """A stdio conversation whose server answers ping with something and declares no tools yet serves them."""
    tape = Conversation(transport=STDIO, name=name)
    tape.initialize(capabilities={})
    tape.call("ping", result={"pong": True})
    tape.call("tools/list", result={"tools": []})
    return tape.write(path / f"{name}.mcptape")


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_requirements_prints_a_verdict_per_requirement_after_the_findings(tmp_path):
    tape = broken_tape(tmp_path)
    out = run("check", tape, "--requirements")
    assert out.exit_code == 1
    lines = out.output.splitlines()
    table = lines[lines.index(f"{tape}  (2025-11-25)") + 1:-1]
    assert len(table) == len(REGISTRY)
    verdict = {line.split()[-1] if "finding" not in line else line.split()[-3]: line.split()[0] for line in table}
    assert verdict["ping-empty-result"] == "fail" and verdict["declare-tools"] == "fail"
    assert verdict["jsonrpc-version"] == "pass" and verdict["post-accept-both"] == "not-applicable"
    assert verdict["progress-token-type"] == "not-observed"


def test_junit_has_a_case_per_requirement_per_tape_that_a_junit_reader_reads(tmp_path):
    first, second = broken_tape(tmp_path, "first"), broken_tape(tmp_path, "second")
    out = run("check", first, second, "--format", "junit")
    assert out.exit_code == 1
    (tmp_path / "report.xml").write_text(out.output)
    suites = list(JUnitXml.fromfile(str(tmp_path / "report.xml")))
    assert [s.name for s in suites] == [first, second]
    for suite in suites:
        cases = {case.name: case for case in suite}
        assert len(cases) == len(REGISTRY) == suite.tests
        failed = cases["ping-empty-result"].result
        assert len(failed) == 1 and isinstance(failed[0], Failure)
        assert "ping answered with" in failed[0].message and "docs/rules.md#ping-empty-result" in failed[0].text
        assert isinstance(cases["progress-token-type"].result[0], Skipped)  # not observed
        assert cases["jsonrpc-version"].result == []  # a pass
        docs_anchor = cases["jsonrpc-version"]._elem.find("properties/property[@name='docs']")
        assert docs_anchor.get("value") == "docs/rules.md#jsonrpc-version"
        assert suite.failures == sum(1 for c in suite if any(isinstance(r, Failure) for r in c.result))


def test_sarif_names_requirements_with_their_clause_and_docs_anchor(tmp_path):
    out = run("check", broken_tape(tmp_path), "--format", "sarif")
    rules = {r["id"]: r for r in json.loads(out.output)["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["declare-tools"]["helpUri"] == "docs/rules.md#declare-tools"
    assert "Servers that support tools MUST declare" in rules["declare-tools"]["fullDescription"]["text"]


def test_json_output_follows_its_schema_with_and_without_requirements(tmp_path):
    tape = broken_tape(tmp_path)
    for extra in ([], ["--requirements"]):
        doc = json.loads(run("check", tape, "--format", "json", *extra).output)
        jsonschema.validate(doc, SCHEMA)
        assert ("requirements" in doc) == bool(extra)
    assert doc["verdicts"]["fail"] >= 2 and len(doc["requirements"]) == len(REGISTRY)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc, "summary": {}}, SCHEMA)


def test_a_baseline_lets_known_findings_pass_and_fails_on_a_new_one(tmp_path):
    tape = broken_tape(tmp_path)
    base = str(tmp_path / "base.json")
    assert run("check", tape, "--write-baseline", base).exit_code == 0
    assert run("check", tape, "--baseline", base).exit_code == 0
    junit = run("check", tape, "--baseline", base, "--format", "junit")
    (tmp_path / "baselined.xml").write_text(junit.output)
    (suite,) = JUnitXml.fromfile(str(tmp_path / "baselined.xml"))
    assert junit.exit_code == 0 and suite.failures == 0  # known findings: said in the output, not failures
    worse = Conversation(transport=STDIO, name="broken")
    worse.initialize(capabilities={})
    worse.call("ping", result={"pong": True})
    worse.call("tools/list", result={"tools": []})
    worse.call("prompts/list", result={"prompts": []})  # one more: not in the baseline
    worse.write(tmp_path / "broken.mcptape")
    out = run("check", tape, "--baseline", base, "--format", "json")
    assert out.exit_code == 1
    bad = run("check", tape, "--baseline", str(tmp_path / "missing.json"))
    assert bad.exit_code == 2 and bad.output.startswith("mcptape: cannot read the baseline")


def test_the_projects_settings_override_severities_and_fail_on(tmp_path, monkeypatch):
    tape = broken_tape(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.mcptape]\nfail-on = "never"\n\n[tool.mcptape.severity]\n'
                                             '"ping-empty-result" = "info"\n"declare-tools" = "off"\n')
    out = run("check", tape, "--format", "json")
    assert out.exit_code == 0
    rules = {f["rule"]: f["severity"] for f in json.loads(out.output)["findings"]}
    assert rules["ping-empty-result"] == "info" and "declare-tools" not in rules
    (tmp_path / "mcptape.toml").write_text('[severity]\n"no-such-rule" = "error"\n')  # mcptape.toml wins
    out = run("check", tape)
    assert out.exit_code == 2 and "unknown rule 'no-such-rule'" in out.output and "Traceback" not in out.output


def test_docs_rules_md_is_generated_from_the_registry():
    assert (ROOT / "docs" / "rules.md").read_text(encoding="utf-8") == docs.render(), \
        "run: python -m mcptape.check.requirements.docs"
    for requirement in REGISTRY.values():
        assert f"\n### {requirement.id}\n" in docs.render()
    assert f"`check` judges {len(REGISTRY)} requirements" in (ROOT / "README.md").read_text(encoding="utf-8")
