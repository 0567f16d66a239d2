"""`mcptape diff A B`: two tapes compared in protocol terms, call by call.

Calls are aligned by (session order, direction, method, ordinal): the 3rd `tools/call` the client sent in the
2nd session of A meets the 3rd one in the 2nd session of B. What always differs between two runs (JSON-RPC ids,
session ids, progress tokens, timestamps) is never compared; `--ignore POINTER` drops more. Pairs are compared
for equality first; deepdiff (imported only then) explains the pairs that differ.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..model import Call, Model, Observer
from ..tape.file import Reader
from .rules import Finding, all_rules

Key = tuple[int, str, str, int]  # (session order, dir, method, ordinal)


@dataclass
class Difference:
    kind: str
    call: str
    path: str | None
    a: Any
    b: Any

    def to_json(self) -> dict:
        return {"kind": self.kind, "call": self.call, "path": self.path, "a": self.a, "b": self.b}


class _Collect(Observer):
    def __init__(self) -> None:
        self.calls: list[Call] = []

    def call(self, call: Call, model: Model) -> Iterable[Any]:
        self.calls.append(call)
        return ()


def _read(path: str) -> tuple[dict[Key, Call], list[Finding]]:
    collect = _Collect()
    model = Model([collect, *all_rules()])
    reader = Reader(path)
    findings = [f for f in model.feed_tape(reader.path, reader) if isinstance(f, Finding)]
    findings += [f for f in model.finish() if isinstance(f, Finding)]
    sessions: dict[int, int] = {}
    ordinals: Counter = Counter()
    aligned: dict[Key, Call] = {}
    for call in sorted(collect.calls, key=lambda c: c.seq):
        order = sessions.setdefault(id(call.session), len(sessions))
        base = (order, call.dir, call.method)
        ordinals[base] += 1
        aligned[(*base, ordinals[base])] = call
    return aligned, findings


def _label(key: Key) -> str:
    order, direction, method, ordinal = key
    return f"session {order + 1} {direction} {method} #{ordinal}"


def _outcome(call: Call) -> str:
    if call.answered:
        return "error" if "error" in call.response else "result"
    if call.rejected_status is not None:
        return f"http {call.rejected_status}"
    return "cancelled" if call.cancel else "unanswered"


def _strip(value: Any, pointers: list[list[str]]) -> Any:
    """A copy without the ignored parts: JSON pointers (relative to the message) and per-run noise."""
    value = _drop_noise(value)
    for pointer in pointers:
        _drop(value, pointer)
    return value


_NOISE = {"progressToken", "requestId", "io.modelcontextprotocol/related-task"}


def _drop_noise(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_noise(v) for k, v in value.items() if k not in _NOISE}
    if isinstance(value, list):
        return [_drop_noise(v) for v in value]
    return value


def _drop(value: Any, pointer: list[str]) -> None:
    for i, part in enumerate(pointer):
        last = i == len(pointer) - 1
        if isinstance(value, dict) and part in value:
            if last:
                del value[part]
                return
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            if last:
                value[int(part)] = None
                return
            value = value[int(part)]
        else:
            return


def parse_pointer(text: str) -> list[str]:
    if not text.startswith("/"):
        raise ValueError(f"--ignore {text!r}: a JSON pointer starts with / (e.g. /result/content/0/text)")
    return [p.replace("~1", "/").replace("~0", "~") for p in text.split("/")[1:]]


def diff(path_a: str, path_b: str, ignore: list[str] = ()) -> list[Difference]:
    pointers = [parse_pointer(p) for p in ignore]
    calls_a, findings_a = _read(path_a)
    calls_b, findings_b = _read(path_b)
    out: list[Difference] = []
    for key in sorted(calls_a.keys() | calls_b.keys()):
        a, b = calls_a.get(key), calls_b.get(key)
        label = _label(key)
        if a is None or b is None:
            kind = "only-in-b" if a is None else "only-in-a"
            present = b or a
            out.append(Difference(kind, label, None, _outcome(present) if a else None, _outcome(present) if b else None))
            continue
        outcome_a, outcome_b = _outcome(a), _outcome(b)
        if outcome_a != outcome_b:
            kind = ("answered-in-a-only" if a.answered and not b.answered else
                    "answered-in-b-only" if b.answered and not a.answered else "outcome-changed")
            out.append(Difference(kind, label, None, outcome_a, outcome_b))
            continue
        request_a = _strip(a.request.get("params"), [p[1:] for p in pointers if p[:1] == ["params"]])
        request_b = _strip(b.request.get("params"), [p[1:] for p in pointers if p[:1] == ["params"]])
        if request_a != request_b:
            out += _explain("request-changed", label, request_a, request_b, "params")
        if a.answered:
            field = outcome_a  # "result" or "error"
            sub = [p[1:] for p in pointers if p[:1] == [field]]
            body_a, body_b = _strip(a.response.get(field), sub), _strip(b.response.get(field), sub)
            if body_a != body_b:
                out += _explain(f"{field}-changed", label, body_a, body_b, field)
    seen_a = Counter((f.rule, f.dir, f.method) for f in findings_a)
    for f in findings_b:
        key = (f.rule, f.dir, f.method)
        if seen_a[key] > 0:
            seen_a[key] -= 1
        else:
            out.append(Difference("finding-new-in-b", f"{f.dir or ''} {f.method or ''}".strip() or f.tape,
                                  f.rule, None, f.message))
    return out


def _explain(kind: str, label: str, a: Any, b: Any, root: str) -> list[Difference]:
    from deepdiff import DeepDiff  # only when something differs: it costs 0.15 s to import

    found = DeepDiff(a, b, verbose_level=2).to_dict()
    out = []
    for change, items in found.items():
        if isinstance(items, dict):
            for path, detail in items.items():
                old = detail.get("old_value") if isinstance(detail, dict) and "old_value" in detail else None
                new = detail.get("new_value") if isinstance(detail, dict) and "new_value" in detail else None
                if change.endswith("_added"):
                    old, new = None, detail
                elif change.endswith("_removed"):
                    old, new = detail, None
                out.append(Difference(kind, label, _pointer(root, path), old, new))
        else:
            for path in items:
                out.append(Difference(kind, label, _pointer(root, path), None, None))
    return out or [Difference(kind, label, "/" + root, a, b)]


def _pointer(root: str, deepdiff_path: str) -> str:
    """deepdiff's root['a'][0] -> JSON pointer /root/a/0."""
    import re

    parts = re.findall(r"\[(?:'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"|(\d+))\]", deepdiff_path)
    return "/" + "/".join([root] + [(a or b or c).replace("~", "~0").replace("/", "~1") for a, b, c in parts])
