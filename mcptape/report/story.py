"""What a report says first: the headline (what went wrong, who is blamed) and the findings grouped into stories.
Findings about one event cite one record (check's rules: `dead-session-reuse` and `no-reinitialize` both cite the
first request the dead session still carried), so a story is the findings that share a tape and a record: one bug,
told once, its evidence shown once. Markdown and HTML lay out the same sentences."""

from __future__ import annotations

_RANK = {"error": 0, "warning": 1, "info": 2}


def stories(report: dict) -> list[list[dict]]:
    """The findings grouped by the record they are about, the most severe story first (then in tape order)."""
    groups: dict[tuple, list[dict]] = {}
    for f in report["findings"]:
        groups.setdefault((f["tape"], f["record"]), []).append(f)
    return sorted(groups.values(), key=lambda g: min(_RANK.get(f["severity"], 3) for f in g))


def blamed(story: list[dict]) -> str:
    sides = sorted({f["blames"] for f in story} - {"none"})
    return f"the {' and the '.join(sides)}" if sides else "nobody"


def verdict(finding: dict) -> str:
    """`error, blames the client; rests on what mcptape injected (an edit)`: a finding's weight, in words."""
    who = f"the {finding['blames']}" if finding["blames"] != "none" else "nobody"
    return (f"{finding['severity']}, blames {who}"
            + ("; rests on what mcptape injected (an edit)" if finding["injected"] else ""))


def evidence(story: list[dict]) -> list[dict]:
    """The records the story's findings rest on, each once, in tape order."""
    seen: dict[int, dict] = {}
    for f in story:
        for e in f["excerpts"]:
            seen.setdefault(e["record"], e)
    return [seen[k] for k in sorted(seen)]


def worst(story: list[dict]) -> dict:
    """The story's most severe finding (the first of them)."""
    return min(story, key=lambda f: _RANK.get(f["severity"], 3))


def title(story: list[dict]) -> str:
    rules = " + ".join(dict.fromkeys(f["rule"] for f in story))
    return f"{worst(story)['severity']}: {rules}, blames {blamed(story)}"


def headline(report: dict) -> str:
    """One or two sentences: what went wrong, and who is blamed; or that nothing did."""
    s = report["summary"]
    if not report["findings"]:
        return (f"Nothing went wrong: {s['calls']} call(s) in {s['sessions']} session(s), and every rule of "
                f"`mcptape check` held.")
    groups = stories(report)
    first = groups[0]
    lead = worst(first)
    rules = " and ".join(rule for rule in dict.fromkeys(f["rule"] for f in first))
    said = f"{blamed(first)[0].upper()}{blamed(first)[1:]} is blamed ({rules}): {lead['message'].rstrip('.')}."
    if any(f["injected"] for f in first):
        said += " It rests on what mcptape injected (an edit), not on anything the server sent."
    if len(groups) > 1:  # the other stories, by whom they blame
        also = [f"{worst(g)['severity']} blaming {blamed(g)} ({', '.join(dict.fromkeys(f['rule'] for f in g))})"
                for g in groups[1:4]]
        said += f" Also: {'; '.join(also)}{'; …' if len(groups) > 4 else ''}."
    return said
