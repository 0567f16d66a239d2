"""The requirement registry: every clause `mcptape check` judges, as data (one module per area).

A requirement is one spec sentence, quoted in this package with its revision and section (`clause`, what findings
carry), its level in each revision where it holds (`levels`; a revision it is absent from makes it not applicable
there), the side it binds, the transports it is about, and how it is judged: the facts that show a tape exercised
it (`exercised`, counted by check.verdicts while it reads a tape) and, in `judged`, what breaks it. The findings
that break a requirement carry its id as their rule id. The rules mcptape had before the registry are entries too,
with their finding ids unchanged (check/spec.py keeps their quotations, the one place for each).

docs/rules.md is generated from this registry (`python -m mcptape.check.requirements --docs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from ...model import LEGACY_SSE, STATELESS, STDIO, STREAMABLE

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
TRANSPORTS = frozenset({STDIO, LEGACY_SSE, STREAMABLE, STATELESS})
HTTP = frozenset({LEGACY_SSE, STREAMABLE, STATELESS})
SESSIONS = frozenset({STDIO, LEGACY_SSE, STREAMABLE})  # the transports with a lifecycle (before 2026-07-28)


class Level(str, Enum):
    MUST = "MUST"
    MUST_NOT = "MUST NOT"
    SHOULD = "SHOULD"
    SHOULD_NOT = "SHOULD NOT"
    MAY = "MAY"

    @property
    def severity(self) -> str:
        """The severity of a finding that breaks a clause of this level."""
        return {"MUST": "error", "MUST NOT": "error", "SHOULD": "warning", "SHOULD NOT": "warning"}.get(self.value,
                                                                                                         "info")


MUST, MUST_NOT, SHOULD, SHOULD_NOT, MAY = Level.MUST, Level.MUST_NOT, Level.SHOULD, Level.SHOULD_NOT, Level.MAY
# whom a requirement binds: a side, or the sender / receiver of what a finding is about (finding.blamed)
CLIENT, SERVER, SENDER, RECEIVER, NONE = "client", "server", "sender", "receiver", "none"


def since(first: str, level: Level, until: str = REVISIONS[-1]) -> dict[str, Level]:
    """One level from revision `first` through `until`."""
    return {r: level for r in REVISIONS if first <= r <= until}


def quote(revision: str, section: str, sentence: str) -> str:
    """A clause as findings print it: where it is, then the sentence in the spec's words."""
    return f'{revision} {section}: "{sentence}"'


@dataclass(frozen=True, slots=True)
class Requirement:
    id: str  # stable: a finding id, a SARIF rule id, a docs anchor
    area: str
    binds: str
    levels: Mapping[str, Level]
    clause: str
    judged: str  # what breaks it, in plain words (docs/rules.md)
    exercised: tuple[str, ...]  # facts (check.verdicts) of which any shows the tape exercised it
    transports: frozenset[str] = TRANSPORTS
    observation: bool = False  # a finding says what happened (info), never that a side broke the clause

    def level(self, revision: str | None) -> Level | None:
        """The level in `revision`; for a tape whose revision is unknown, in the latest revision it holds in."""
        if revision is None:
            return self.levels[max(self.levels)] if self.levels else None
        return self.levels.get(revision)

    def holds(self, revision: str | None, transport: str | None) -> bool:
        """Whether it binds a session of this revision and transport (either unknown: it may)."""
        return ((revision is None or revision in self.levels)
                and (transport is None or transport in self.transports))

    def severity(self, revision: str | None) -> str:
        level = self.level(revision)
        return "info" if self.observation or level is None else level.severity


def _load(modules: Iterable) -> Mapping[str, Requirement]:
    found: dict[str, Requirement] = {}
    for module in modules:
        for requirement in module.REQUIREMENTS:
            if requirement.id in found:
                raise ValueError(f"requirement {requirement.id} is registered twice")
            found[requirement.id] = requirement
    return MappingProxyType(found)


def _registry() -> Mapping[str, Requirement]:
    from . import capabilities, envelope, features, lifecycle, modern, sessions, transports, utilities

    return _load((envelope, lifecycle, capabilities, utilities, transports, sessions, features, modern))


REGISTRY: Mapping[str, Requirement] = _registry()
DOCS = "docs/rules.md"  # where each requirement's section is (its anchor is its id)

