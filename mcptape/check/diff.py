"""`mcptape diff A B`: two tapes compared in protocol terms, call by call.

Calls are aligned by (session order, direction, method, ordinal): the 3rd `tools/call` the client sent in the
2nd session of A meets the 3rd one in the 2nd session of B. What always differs between two runs (JSON-RPC ids,
session ids, progress tokens, timestamps) is never compared, nor a redacted value against what stands in its place
(blend.py); `--ignore POINTER` drops more. Pairs are compared for equality first; deepdiff (imported only
then) explains the pairs that differ.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

import msgpack

from ..facts import Outcome
from ..model import Call, Model, Observer, collector_paused
from ..blend import blend
from ..wire import jsonrpc, pointer
from ..tape.codec import decode_payload, pack, packer
from ..tape.file import Reader
from .finding import Finding
from .rules import all_rules

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


def to_json(differences: list[Difference]) -> dict:
    """`mcptape diff --format json`'s document: the differences, and how many of each kind."""
    kinds: dict[str, int] = {}
    for d in differences:
        kinds[d.kind] = kinds.get(d.kind, 0) + 1
    return {"differences": [d.to_json() for d in differences],
            "summary": {"differences": len(differences), "kinds": kinds}}


class _Called(NamedTuple):
    """What diff keeps of a call: enough to compare and name it, none of the transport around it. Params and answer
    (the result or the error), per-run noise dropped, are packed: equal bytes are equal calls without unpacking
    anything, and a tape read in a worker process crosses back as one msgpack blob (_ship)."""

    outcome: str
    packed: bytes  # (params, answer)
    session_name: str  # as show names it
    name: str | None  # the tool, prompt or resource it is about

    def unpacked(self) -> tuple[Any, Any]:
        params, answer = decode_payload(self.packed)
        return params, answer


class _Collect(Observer):
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str, str, _Called]] = []  # seq, session, dir, method, what is kept
        self.sessions: dict[int, int] = {}
        self._pack = packer().pack  # one packer for every call: msgpack.packb makes a new one each time

    def call(self, call: Call, model: Model) -> None:
        session = self.sessions.setdefault(id(call.session), len(self.sessions))
        outcome = _outcome(call)
        answer = call.response.get(outcome) if call.outcome.answered else None
        params = call.request.get("params")
        packed = self._pack([_drop_noise(params), _drop_noise(answer)])
        name = (params.get("name") or params.get("uri")) if isinstance(params, dict) else None
        self.calls.append((call.seq, session, call.dir, call.method,
                           _Called(outcome, packed, call.session.short, name if isinstance(name, str) else None)))


Aligned = list[tuple[Key, _Called]]  # a tape's calls with their keys, in the order they were sent


def _read(path: str) -> tuple[Aligned, list[Finding]]:
    """A tape's calls, aligned, and its findings (read with the cyclic collector paused: diff)."""
    collect = _Collect()
    model = Model([collect, *all_rules()])
    reader = Reader(path)
    findings = [f for f in model.feed_tape(reader.path, reader) if isinstance(f, Finding)]
    findings += [f for f in model.finish() if isinstance(f, Finding)]
    calls = sorted(collect.calls, key=itemgetter(0))  # in the order they were sent
    # sessions are numbered in the order their first call settled; renumber by first request
    first: dict[int, int] = {}
    for _, session, *_ in calls:
        first.setdefault(session, len(first))
    ordinals: Counter = Counter()
    aligned: Aligned = []
    for _, session, direction, method, called in calls:
        base = (first[session], direction, method)
        ordinal = ordinals[base] = ordinals[base] + 1
        aligned.append(((*base, ordinal), called))
    return aligned, findings


def _ship(path: str) -> tuple[bytes, list[Finding]]:
    """_read in a worker process: its calls as one msgpack blob, which crosses back several times faster than
    pickled objects (0.2 s instead of 0.6 s for 50,000 calls)."""
    aligned, findings = _read(path)
    return pack(aligned), findings


def _one_thread() -> bool:
    """No other thread in this process, counted as the kernel does: threads a C library started are not in
    threading's count (pytest-xdist's execnet)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # no /proc: not Linux
        return threading.active_count() == 1


def _read_both(path_a: str, path_b: str) -> tuple[tuple[Aligned, list[Finding]], tuple[Aligned, list[Finding]]]:
    """The two tapes are independent: with two cores, B is read in a worker process while this one reads A (only
    B's calls have to cross back). Only from a process with no other thread: a fork copies one thread and whatever
    locks the others held (diff called as a library from a threaded program, or under pytest-xdist)."""
    if (os.cpu_count() or 1) < 2 or not _one_thread():
        return _read(path_a), _read(path_b)
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(1, mp_context=get_context("fork")) as pool:
        shipped = pool.submit(_ship, path_b)
        read_a = _read(path_a)
        blob, findings_b = shipped.result()
    # B's keys and calls come back as plain tuples (cheaper than lists made into tuples and _Called)
    return read_a, (msgpack.unpackb(blob, use_list=False), findings_b)


def _label(key: Key, a: _Called | None, b: _Called | None) -> str:
    """`session 1 (1a3084d6) tools/call (2nd) add`: the session's order and id (both when the tapes differ),
    the method and its ordinal in the session, the tool, prompt or resource."""
    order, direction, method, ordinal = key
    names = dict.fromkeys(c.session_name for c in (a, b) if c is not None)
    name = next((c.name for c in (a, b) if c is not None and c.name), None)
    suffix = "th" if 10 <= ordinal % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(ordinal % 10, "th")
    return (f"session {order + 1} ({' | '.join(names)}) {'' if direction == 'c2s' else direction + ' '}{method} "
            f"({ordinal}{suffix}){' ' + name if name else ''}")


_ANSWERED = ("result", "error")


# How diff says an outcome (a tool's error is a result to compare, not an outcome of its own)
_WORDS = {Outcome.RESULT: "result", Outcome.TOOL_ERROR: "result", Outcome.ERROR: "error",
          Outcome.CANCELLED: "cancelled", Outcome.UNANSWERED: "unanswered"}


def _outcome(call: Call) -> str:
    if call.outcome is Outcome.REJECTED:
        return f"http {call.rejected_status}"
    return _WORDS[call.outcome]


def _drop_noise(value: Any) -> Any:
    """A copy without what differs from run to run anyway (progress tokens, request ids in cancellations)."""
    # runs on every call of both tapes: recurse into containers only, not into each string and number
    if isinstance(value, dict):
        return {k: _drop_noise(v) if isinstance(v, (dict, list)) else v for k, v in value.items()
                if k not in jsonrpc.VOLATILE_KEYS}
    if isinstance(value, list):
        return [_drop_noise(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


Pair = tuple[Key, _Called | None, _Called | None]


def _pairs(path_a: str, path_b: str, pointers: list[list[str]]) -> tuple[list[Pair], list[Finding], list[Finding]]:
    """The calls that may differ (in key order), and each tape's findings."""
    (aligned_a, findings_a), (aligned_b, findings_b) = _read_both(path_a, path_b)
    calls_a = dict(aligned_a)
    differing: list[Pair] = []
    for key, b in aligned_b:
        a = calls_a.pop(key, None)
        if a is not None and a[:2] == b[:2] and not pointers:  # (outcome, packed): as a _Called or a tuple
            continue  # the common case, and the cheap one: nothing to strip, nothing to explain
        differing.append((key, a, _Called._make(b)))
    differing += [(key, a, None) for key, a in calls_a.items()]  # not in b
    return sorted(differing, key=itemgetter(0)), findings_a, findings_b


def diff(path_a: str, path_b: str, ignore: list[str] = ()) -> list[Difference]:
    pointers = [pointer.parse(p) for p in ignore]
    # Every call of both tapes is kept until they are compared, so the heap only grows: the cyclic collector would
    # rescan it again and again for garbage that is not there (a tenth of a tape's read). Paused until they are
    # compared and let go of (on _pairs' return): then it has a small heap left to look at.
    with collector_paused():
        differing, findings_a, findings_b = _pairs(path_a, path_b, pointers)
    out: list[Difference] = []
    for key, a, b in differing:
        label = _label(key, a, b)
        if a is None or b is None:
            out.append(Difference("only-in-b" if a is None else "only-in-a", label, None,
                                  a.outcome if a else None, b.outcome if b else None))
            continue
        if a.outcome != b.outcome:
            answered_a, answered_b = a.outcome in _ANSWERED, b.outcome in _ANSWERED
            kind = ("answered-in-a-only" if answered_a and not answered_b else
                    "answered-in-b-only" if answered_b and not answered_a else "outcome-changed")
            out.append(Difference(kind, label, None, a.outcome, b.outcome))
            continue
        (params_a, answer_a), (params_b, answer_b) = a.unpacked(), b.unpacked()
        out += _compare("request-changed", label, params_a, params_b, "params", pointers)
        if a.outcome in _ANSWERED:
            out += _compare(f"{a.outcome}-changed", label, answer_a, answer_b, a.outcome, pointers)
    in_a, seen_b = Counter((f.rule, f.dir, f.method) for f in findings_a), Counter()
    for f in findings_b:
        key = (f.rule, f.dir, f.method)
        seen_b[key] += 1
        if seen_b[key] > in_a[key]:  # b has more of these than a: the ones beyond a's count are new
            out.append(Difference("finding-new-in-b", f"{f.dir or ''} {f.method or ''}".strip() or f.tape,
                                  f.rule, None, f.message))
    return out


def _compare(kind: str, label: str, a: Any, b: Any, root: str, pointers: list[list[str]]) -> list[Difference]:
    sub = [p[1:] for p in pointers if p[:1] == [root]]
    for path in sub:
        a, b = pointer.without(a, path), pointer.without(b, path)
    b = blend(a, b)
    return [] if a == b else _explain(kind, label, a, b, root)


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
    return f"/{root}{pointer.from_deepdiff(deepdiff_path)}"
