"""What a secret looks like in text (bearer tokens, `sk-…` keys, JWTs, cloud, GitHub, GitLab and Slack tokens, PEM
private keys, credentials in URLs, `password=…` assignments), found where it stands.

The patterns are few, precompiled, anchored on a literal where they can be and capped in length: they run on the
recorder's hot path, where general secret scanners (hundreds of rules) would cost milliseconds per message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ahocorasick_rs import AhoCorasick

from .names import DEFAULT_QUERY, WORD_PAIRS, WORDS_ALONE

# Each shape: its rule name, the literals (lower case) one of which starts every match, and the pattern, tried only
# where a literal stands; the secret is its group `s`, and what is around it (a scheme, a key, a URL) stays. One
# Aho-Corasick pass over the lowered text finds every literal (a regex alternation of fifty literals costs ten
# times as much per character), most texts stop there, and a pattern tried at a few places is cheap.
def _shape(name: str, anchors: Iterable[str], pattern: str) -> tuple[str, tuple[str, ...], re.Pattern]:
    return name, tuple(anchors), re.compile(pattern)


# a token starts at a word's start: a hyphen or underscore may stand before it (`X-sk-…` names a header, `key_eyJ…`)
_NOT_AFTER = r"(?<![A-Za-z0-9])"
# the credential words as they are written in text: `OPENAI_API_KEY=`, `aws_secret_access_key =`, `password:`
_TEXT_KEYS = sorted({*WORDS_ALONE, *(a + sep + b for a, b in WORD_PAIRS for sep in ("", "_", "-"))})
_QUERY_KEYS = sorted(DEFAULT_QUERY)
SHAPES = (
    _shape("private-key", ["-----begin"], r"-----BEGIN[A-Z0-9 ]{0,32} PRIVATE KEY-----"
           r"(?P<s>[\s\S]{1,16384}?)-----END[A-Z0-9 ]{0,32} PRIVATE KEY-----"),
    _shape("bearer", ["bearer"], _NOT_AFTER + r"(?i:bearer)\s{1,8}(?P<s>[A-Za-z0-9._~+/-]{12,4096}=*)"),
    _shape("jwt", ["eyj"],
           _NOT_AFTER + r"(?P<s>eyJ[A-Za-z0-9_-]{5,2048}\.eyJ[A-Za-z0-9_-]{5,8192}\.[A-Za-z0-9_-]{0,2048})"),
    _shape("sk-key", ["sk-"], _NOT_AFTER + r"(?P<s>sk-[A-Za-z0-9_-]{20,256})"),
    _shape("stripe-key", ["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
           _NOT_AFTER + r"(?P<s>[rs]k_(?:live|test)_[A-Za-z0-9]{16,247})"),
    _shape("aws-access-key", ["akia", "asia", "abia", "acca"],
           _NOT_AFTER + r"(?P<s>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?![A-Za-z0-9])"),
    _shape("google-api-key", ["aiza"], _NOT_AFTER + r"(?P<s>AIza[0-9A-Za-z_-]{35})"),
    _shape("github-token", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
           _NOT_AFTER + r"(?P<s>gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})"),
    _shape("gitlab-token", ["glpat-", "gldt-", "glptt-", "glrt-"],
           _NOT_AFTER + r"(?P<s>gl(?:pat|dt|ptt|rt)-[A-Za-z0-9_-]{20,64})"),
    _shape("slack-token", ["xox"], _NOT_AFTER + r"(?P<s>xox[abposre]-[A-Za-z0-9-]{10,255})"),
    _shape("url-password", ["://"], r"://[^/\s:@]{1,256}:(?P<s>[^/\s@<>]{1,256})@"),
    _shape("url-query", [k + "=" for k in _QUERY_KEYS],
           r"(?<=[?&#;])(?i:" + "|".join(_QUERY_KEYS) + r")=(?P<s>[^&#\s\"'<>]{1,2048})"),
    _shape("assignment", _TEXT_KEYS,
           r"(?i:" + "|".join(re.escape(k) for k in _TEXT_KEYS) + r")[\"']?\s{0,4}[:=]\s{0,4}[\"']?"
           r"(?:(?i:bearer|basic|token)\s{1,4})?(?P<s>[^\s\"'&,;<>]{4,1024})"),
)
_BY_ANCHOR: dict[str, list[tuple[str, re.Pattern]]] = {}  # anchor -> the shapes it starts
for _name, _anchors, _pattern in SHAPES:
    for _anchor in _anchors:
        _BY_ANCHOR.setdefault(_anchor, []).append((_name, _pattern))
ANCHORS = tuple(_BY_ANCHOR)  # every secret shape starts with one of these, lowered
_ANCHOR_LIST = list(ANCHORS)
_ANCHORS = AhoCorasick(_ANCHOR_LIST)
SHORTEST = 8  # no secret shape fits in fewer characters: shorter strings are not scanned


def spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, rule) of each secret-shaped part of a text, in order, not overlapping."""
    if len(text) < SHORTEST:
        return []
    low = text.lower()
    try:
        anchors = _ANCHORS.find_matches_as_indexes(low, overlapping=True) if len(low) == len(text) else None
    except UnicodeEncodeError:  # a lone surrogate (JSON allows "\udcff")
        anchors = None
    if anchors is None:  # the slow way, where the fast one cannot go (lowering moved characters: a dotted capital I)
        found = [(*m.span("s"), name) for name, _, pattern in SHAPES for m in pattern.finditer(text)]
    else:
        found = []
        for anchor, at, _ in anchors:
            for name, pattern in _BY_ANCHOR[_ANCHOR_LIST[anchor]]:
                if m := pattern.match(text, at):
                    found.append((*m.span("s"), name))
    found.sort()
    out, end = [], 0
    for span in found:
        if span[0] >= end:
            out.append(span)
            end = span[1]
    return out


def shapes_in(text: str | bytes) -> Iterator[str]:
    """The names of the secret-shaped strings in a text, in order."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    for _, _, rule in spans(text):
        yield rule
