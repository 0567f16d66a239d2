"""`check`'s settings from the project: `[tool.mcptape]` in pyproject.toml, or the top level of mcptape.toml
(which wins), read from the current directory. A table of per-rule severities overrides the registry's, a rule set to
"off" is not reported, and `fail-on` and `baseline` give the defaults of the options of those names:

    [tool.mcptape]
    fail-on = "warning"
    baseline = "mcptape-baseline.json"

    [tool.mcptape.severity]
    post-accept-both = "warning"
    capture-incomplete = "off"
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from .requirements import REGISTRY
from .finding import SEVERITIES, Finding

OFF = "off"
FAIL_ON = (*SEVERITIES, "never")


class ConfigError(ValueError):
    """A setting that cannot be used: the message says which, where, and what would do."""


@dataclass(frozen=True)
class Config:
    source: str | None = None
    severity: dict[str, str] = field(default_factory=dict)
    fail_on: str | None = None
    baseline: str | None = None

    def apply(self, findings: Iterable[Finding]) -> Iterator[Finding]:
        """The findings at the severities the project chose; those of rules turned off are left out."""
        if not self.severity:
            yield from findings
            return
        for f in findings:
            chosen = self.severity.get(f.rule)
            if chosen is None or chosen == f.severity:
                yield f
            elif chosen != OFF:
                yield replace(f, severity=chosen)


def load(directory: Path | str = ".") -> Config:
    directory = Path(directory)
    own, project = directory / "mcptape.toml", directory / "pyproject.toml"
    if own.is_file():
        return _parse(_read(own), str(own))
    if project.is_file():
        table = _read(project).get("tool", {}).get("mcptape")
        if isinstance(table, dict):
            return _parse(table, f"{project} [tool.mcptape]")
    return Config()


def _read(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}; fix the file or remove it") from None


def _parse(table: dict, where: str) -> Config:
    severity = table.get("severity", {})
    if not isinstance(severity, dict):
        raise ConfigError(f"{where}: severity must be a table of rule = severity")
    for rule, value in severity.items():
        if rule not in REGISTRY:
            raise ConfigError(f"{where}: severity names an unknown rule {rule!r}; the rules are in docs/rules.md")
        if value not in (*SEVERITIES, OFF):
            raise ConfigError(f"{where}: severity of {rule} is {value!r}; use one of "
                              f"{', '.join((*SEVERITIES, OFF))}")
    fail_on = table.get("fail-on")
    if fail_on is not None and fail_on not in FAIL_ON:
        raise ConfigError(f"{where}: fail-on is {fail_on!r}; use one of {', '.join(FAIL_ON)}")
    baseline = table.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise ConfigError(f"{where}: baseline must be a file name")
    return Config(where, dict(severity), fail_on, baseline)
