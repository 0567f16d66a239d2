"""Every rule id `check` reports, enumerated once: each has a conversation that makes it fire and one that keeps it
silent, and no conversation of those tables gets a finding under an id the registry does not know.

The tables live beside the judgements they exercise:
- a requirement of the registry (mcptape/check/requirements/): its (break, keep) pair in a `CASES` table, that of
  tests/core/test_requirements.py or of tests/core/test_feature_requirements.py (a new requirement id needs one
  entry: `"the-id": (_broken, _kept)`; a new table module needs its line in `PAIRS` below);
- a public finding id of check/rules.py (docs/rules.md): a `@fires("the-id", blames)` and a `@silent("the-id")`
  conversation in tests/core/test_rules.py, and its name in `PUBLIC` there.
"""

from __future__ import annotations

from mcptape.check import check_records
from mcptape.check.requirements import REGISTRY

from . import test_feature_requirements as feature_cases
from . import test_requirements as requirement_cases
from . import test_rules as rule_cases

PAIRS = (requirement_cases.CASES, feature_cases.CASES)  # id -> (break, keep)


def every_id() -> set[str]:
    """The registry's ids (whom each finding blames is read from it: check/finding.py BLAMES) and the public ids
    of docs/rules.md."""
    return set(REGISTRY) | rule_cases.PUBLIC


def firing() -> dict[str, list]:
    """id -> the builders of conversations that make it fire (each returns its tapes)."""
    out: dict[str, list] = {}
    for rule, (broken, _) in (pair for table in PAIRS for pair in table.items()):
        out.setdefault(rule, []).append(broken)
    for rule, entries in rule_cases.FIRES.items():
        out.setdefault(rule, []).extend(scenario for _, scenario in entries)
    return out


def silent() -> dict[str, list]:
    """id -> the builders of conversations that keep it silent."""
    out: dict[str, list] = {}
    for rule, (_, kept) in (pair for table in PAIRS for pair in table.items()):
        out.setdefault(rule, []).append(kept)
    for rule, scenarios in rule_cases.SILENT.items():
        out.setdefault(rule, []).extend(scenarios)
    return out


def _tapes(build) -> list:
    built = build()
    return list(built) if isinstance(built, (tuple, list)) else [built]


def test_every_rule_id_has_a_firing_and_a_silent_conversation():
    ids = every_id()
    assert sorted(ids - set(firing())) == [], "rule ids no conversation makes fire"
    assert sorted(ids - set(silent())) == [], "rule ids no conversation keeps silent"
    assert sorted(set(firing()) - ids) == [], "conversations for ids check does not know"


def test_every_finding_of_those_conversations_names_a_known_id():
    """A judgement that reports an id of its own, outside the registry, would escape the tables above."""
    ids = every_id()
    reported: set[str] = set()
    for table in (firing(), silent()):
        for builders in table.values():
            for build in builders:
                tapes = _tapes(build)
                reported |= {f.rule for f in check_records([(t.name, t.records) for t in tapes])}
    assert sorted(reported - ids) == [], "ids reported that no table names"
    assert sorted(ids - reported) == [], "ids no conversation made fire"
