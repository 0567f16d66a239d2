"""Which recorded answer a live request gets. Like vcrpy's matchers: small pure functions.

A live request matches a recorded one when the methods are equal and the params are equal as JSON values, after
dropping what differs from run to run and what the user said to ignore (JSON pointers); a redacted value in the
recording matches any live value at its position (blend.py). `params._meta` is metadata, not the request: by
default only its keys with protocol meaning are compared (`protocol_meta`, docs/matching.md); `match_meta` compares
every key but the volatile ones (jsonrpc.VOLATILE_KEYS), as a replay did before.
Unused answers are taken in recorded order; once all are used, the last one serves again. A miss names the
recorded request that came closest and where it differs (deepdiff, imported only on a miss).

This is the one "same request" rule: the gauntlet asks it too, whether a client sent the faulted request again
(`same_request`, with every `_meta` key dropped: `no_meta`). `check/diff.py` keeps its own list of what differs
between two runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..blend import blend
from ..wire import jsonrpc, pointer
from .recorded import Answer


def protocol_meta(key: str) -> bool:
    """A `_meta` key the spec reserves for MCP ("any prefix where the second label is `modelcontextprotocol` or
    `mcp`", e.g. io.modelcontextprotocol/protocolVersion): it says what is asked, so matching compares it. Everything
    else in `_meta` (a vendor's per-run stamps, trace context, progressToken whose value is the run's own and which
    the replay maps) is not compared."""
    prefix, slash, _ = key.partition("/")
    labels = prefix.split(".")
    return bool(slash) and len(labels) >= 2 and labels[1] in ("modelcontextprotocol", "mcp")


def every_meta(key: str) -> bool:
    """--match-meta: every `_meta` key is compared (but the volatile ones)."""
    return True


def no_meta(key: str) -> bool:
    """No `_meta` key is compared: the gauntlet's rule for a request sent again (its progress token is new)."""
    return False


def normalize(msg: Any, ignore: Iterable[list[str]], match_meta: bool = False,
              meta: Callable[[str], bool] | None = None) -> Any:
    """The part of a request that must match: method and params, without volatile and ignored parts. `meta` says
    which `_meta` keys are compared (default: protocol_meta, or every_meta with match_meta)."""
    if not isinstance(msg, dict):
        return msg
    params = msg.get("params")
    if isinstance(params, dict):
        params = dict(params)
        meta_value = params.get("_meta")
        if isinstance(meta_value, dict):
            compared = meta or (every_meta if match_meta else protocol_meta)
            meta_value = {k: v for k, v in meta_value.items() if k not in jsonrpc.VOLATILE_KEYS and compared(k)}
            if meta_value:
                params["_meta"] = meta_value
            else:
                del params["_meta"]
    shaped = {"method": msg.get("method"), "params": params}
    for path in ignore:
        shaped = pointer.without(shaped, path)
    return shaped


def matches(shape: Any, wanted: Any) -> bool:
    """A recorded request's shape matches a live one's: equal, or equal once the recording's redacted values stand
    for whatever the live request has there (blend.py)."""
    return shape == wanted or blend(shape, wanted) == shape


def same_request(first: dict, then: dict, ignore: Iterable[list[str]] = (),
                 meta: Callable[[str], bool] | None = None) -> bool:
    """`then` asks what `first` asked, as replay matching decides it (normalize, then matches)."""
    return matches(normalize(first, ignore, meta=meta), normalize(then, ignore, meta=meta))


def find(live: dict, candidates: Iterable[tuple[Answer, Any]], ignore: list[list[str]],
         used: Mapping[Answer, int], match_meta: bool = False) -> Answer | None:
    """The first unused candidate that matches, else the last used one. Candidates have the live method and come
    with their shape (`normalize` of their request, made once by the replay, whose ignore pointers they depend on);
    `used` is the replay's count of each answer served."""
    wanted = normalize(live, ignore, match_meta)
    last = None
    for answer, shape in candidates:
        if matches(shape, wanted):
            if not used.get(answer):
                return answer
            last = answer
    return last


def closest(live: dict, candidates: Iterable[Answer], ignore: list[list[str]],
            match_meta: bool = False) -> tuple[Answer | None, dict]:
    """The recorded request most like the live one, and the difference, for a miss's error message."""
    from deepdiff import DeepDiff

    wanted = normalize(live, ignore, match_meta)
    kind = jsonrpc.kind(live)
    best, best_diff, best_size = None, {}, None
    for answer in candidates:
        if jsonrpc.kind(answer.request) != kind:
            continue  # a request is never "closest" to a notification, nor the other way
        shape = normalize(answer.request, ignore, match_meta)
        diff = DeepDiff(shape, blend(shape, wanted), verbose_level=2).to_dict()
        size = sum(len(v) if isinstance(v, (dict, list, set)) else 1 for v in diff.values())
        size += 0 if answer.method == live.get("method") else 1000
        if best_size is None or size < best_size:
            best, best_diff, best_size = answer, diff, size
    return best, best_diff


def paths(diff: dict) -> list[str]:
    """Where a miss differs, as the JSON pointers --ignore takes (/params/arguments/message)."""
    return [pointer.from_deepdiff(str(path)) for items in diff.values()
            for path in (items.keys() if isinstance(items, dict) else items)]
