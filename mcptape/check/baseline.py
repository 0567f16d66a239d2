"""Baselines, as linters keep them: the findings a project has accepted for now, written once
(`check --write-baseline FILE`) and read back (`check --baseline FILE`) so that only new ones fail the run.

A finding is known by its rule, its tape (as named on the command line) and its message, counted: the baseline
holds how many of each there were, so a tape re-recorded with its records shifted still matches, and one more of
the same finding than the baseline holds is new.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from .finding import Finding

FORMAT = "mcptape-baseline"


class BaselineError(ValueError):
    pass


def _key(f: Finding) -> tuple[str, str, str]:
    return f.rule, f.tape, f.message


def dumps(findings: Iterable[Finding]) -> str:
    counts = Counter(_key(f) for f in findings)
    entries = [{"rule": rule, "tape": tape, "message": message, "count": n}
               for (rule, tape, message), n in sorted(counts.items())]
    return json.dumps({"format": FORMAT, "version": 1, "findings": entries}, indent=1, ensure_ascii=False) + "\n"


def load(path: str) -> Counter:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise BaselineError(f"cannot read the baseline {path}: {e.strerror}; write one with --write-baseline") from None
    except ValueError as e:
        raise BaselineError(f"the baseline {path} is not JSON ({e}); write it again with --write-baseline") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("findings"), list):
        raise BaselineError(f"{path} is not an mcptape baseline; write one with --write-baseline")
    known: Counter = Counter()
    for entry in doc["findings"]:
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("rule", "tape", "message")):
            raise BaselineError(f"the baseline {path} holds an entry without rule, tape and message; write it again")
        count = entry.get("count", 1)
        known[(entry["rule"], entry["tape"], entry["message"])] += count if isinstance(count, int) else 1
    return known


def new(findings: Iterable[Finding], known: Counter) -> list[Finding]:
    """The findings the baseline does not hold, in order."""
    left = Counter(known)
    fresh = []
    for f in findings:
        key = _key(f)
        if left[key] > 0:
            left[key] -= 1
        else:
            fresh.append(f)
    return fresh
