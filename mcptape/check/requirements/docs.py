"""docs/rules.md, generated from the registry: one section per requirement (its heading is its id, the anchor SARIF
and JUnit point at), and the count of requirements per revision.

    python -m mcptape.check.requirements.docs            # rewrite docs/rules.md
    python -m mcptape.check.requirements.docs --check    # exit 1 when docs/rules.md is not up to date
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from . import REGISTRY, REVISIONS, Level

INTRO = """\
# The rules and what they rest on

<!-- Generated from mcptape/check/requirements/ by `python -m mcptape.check.requirements.docs`: edit the registry,
not this file. -->

`mcptape check` judges tapes requirement by requirement. Each requirement is one sentence of the MCP
specification, quoted in mcptape's registry (`mcptape/check/requirements/`, one module per area) with its revision
and section, its level in each revision where it holds, the side it binds, and how it is judged. A finding that
breaks a requirement carries the requirement's id as its rule id; the rules mcptape had before the registry keep
their ids (their quotations live in `mcptape/check/spec.py`, and some cite more than one sentence).

A finding's severity follows the level of the clause in the session's revision: MUST and MUST NOT give errors,
SHOULD and SHOULD NOT warnings (the older rules keep the severities they always had: a warning for an answer
nobody asked for, for instance). An *observation* says what happened and never blames a side (info).

Each finding says whom it blames: one side, the side that sent what the finding is about (`sender`), the side
that should have answered (`receiver`), or nobody. `injected` marks a finding that rests on anything an edit did
(an injected answer, a dropped or rewritten one, a request an edit selected). It excuses only the server, for what
mcptape made up: such a finding blames nobody. A client's reaction to an injected answer is still the client's own
(`no-reinitialize` after an injected 404).

## What real peers break

Recordings of correct conversations give no finding at warning or above. The real violations mcptape's tests meet
in the official peers are flagged, each on its clause:

- `declare-logging`: the official Python SDK server (mcp 2.3.0) logs from its tools (`ctx.info`, a
  `notifications/message`) although it declares the `logging` capability only when a `logging/setLevel` handler is
  registered. "Servers that emit log message notifications MUST declare the logging capability" (2025-11-25 Server ›
  Utilities › Logging); the TypeScript SDK refuses to send such a notification at all.

## Verdicts

`mcptape check --requirements` prints a verdict per requirement per tape (`--format json` gives them as data,
`--format junit` as one test case each):

- `fail`: a finding at error severity broke it; `warn`: a finding at warning severity;
- `pass`: the tape exercised it (the facts under "Exercised by" below) and nothing broke it;
- `not-observed`: it holds for the tape's transport and revision but the tape never put it to the test (never
  counted as a pass);
- `not-applicable`: the tape's sessions are all of another revision or transport.

## Settings

Per-rule severities (or `off`), `fail-on` and a `baseline` file can be set in `[tool.mcptape]` of
`pyproject.toml`, or at the top level of `mcptape.toml` (which wins):

```toml
[tool.mcptape]
fail-on = "warning"
baseline = "mcptape-baseline.json"

[tool.mcptape.severity]
post-accept-both = "warning"
capture-incomplete = "off"
```

`mcptape check TAPES --write-baseline FILE` writes the findings as a baseline; `--baseline FILE` then fails the
run only for findings the baseline does not hold (matched by rule, tape and message, counted). The JSON of
`check --format json` (with and without `--requirements`) is described by
[check.schema.json](check.schema.json).
"""

_LEVELS = [level for level in Level]


def counts() -> dict[str, Counter]:
    per: dict[str, Counter] = {r: Counter() for r in REVISIONS}
    for requirement in REGISTRY.values():
        for revision, level in requirement.levels.items():
            per[revision][level] += 1
    return per


def render() -> str:
    lines = [INTRO, "## Requirements per revision", "",
             f"{len(REGISTRY)} requirements in all. Per revision, by level:", "",
             "| revision | " + " | ".join(level.value for level in _LEVELS) + " | in all |",
             "|---" * (len(_LEVELS) + 2) + "|"]
    for revision, per in counts().items():
        lines.append(f"| {revision} | " + " | ".join(str(per[level]) for level in _LEVELS)
                     + f" | {sum(per.values())} |")
    area = None
    for requirement in REGISTRY.values():
        if requirement.area != area:
            area = requirement.area
            lines += ["", f"## {area[0].upper()}{area[1:]}"]
        levels = ", ".join(f"{r} {requirement.levels[r].value}" if r in requirement.levels else f"{r} —"
                           for r in REVISIONS)
        transports = ", ".join(sorted(requirement.transports))
        kind = " (an observation)" if requirement.observation else ""
        lines += ["", f"### {requirement.id}", "",
                  f"- Spec: {requirement.clause}",
                  f"- Levels: {levels}{kind}",
                  f"- Binds: {requirement.binds}; transports: {transports}",
                  f"- Broken by: {requirement.judged}",
                  f"- Exercised by: {', '.join(f'`{fact}`' for fact in requirement.exercised)}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    path = Path(__file__).resolve().parents[3] / "docs" / "rules.md"
    text = render()
    if "--check" in argv:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            print(f"{path} is not up to date: run python -m mcptape.check.requirements.docs", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
