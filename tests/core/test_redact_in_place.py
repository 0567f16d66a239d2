"""Redaction keeps what a peer sent byte for byte, except a secret's own token (redact/scrub.py, wire/json_spans.py).

The messages are made here in every style a peer may write JSON in (any spacing, escapes or not, `1.0` and `1e3`,
repeated keys, JSON in a string in JSON in a string), then put in each field redaction reads. Without a secret
every field comes back equal, every string character for character. With one, only the JSON token that holds it
differs, at every level of nesting, and what is left parses to the original with that value replaced.
"""

import json
import string
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptape.redact.redactor import Redactor
from mcptape.redact.scrub import FIELDS, JSON_VALUE, PAIRS, RAW, SOURCE, TEXTS
from mcptape.redact.shapes import spans
from mcptape.wire import json_spans, jsonrpc

# keys no credential word can be read in (no vowel but y, no p, s, k or t): none of them is sensitive
SAFE_KEYS = st.text(alphabet="bcdfghjlmnqrvwxyzBCDFGHJLMN_-0123456789", min_size=1, max_size=6)
SAFE_TEXT = st.text(max_size=12).filter(lambda s: not spans(s))
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                   st.floats(allow_nan=False, allow_infinity=False), SAFE_TEXT)


class Nested:
    """JSON written into a string."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Nested({self.value!r})"


def _containers(children):
    return st.one_of(st.lists(children, max_size=4), st.dictionaries(SAFE_KEYS, children, max_size=4),
                     st.builds(Nested, st.one_of(st.lists(children, max_size=3),
                                                 st.dictionaries(SAFE_KEYS, children, max_size=3))))


TREES = st.recursive(LEAVES, _containers, max_leaves=12)
SK = "sk-" + "Zq9" * 9


# -- writing JSON as a peer might -------------------------------------------------------------------------------


class Style:
    """How one peer writes JSON: drawn once per text."""

    def __init__(self, draw):
        self.space = draw(st.sampled_from(["", " ", "\n  ", "\t", " \r\n "]))
        self.colon = draw(st.sampled_from([":", ": ", " : "]))
        self.ascii = draw(st.booleans())
        self.slash = draw(st.booleans())
        self.escape_letters = draw(st.booleans())
        self.float_form = draw(st.sampled_from(["repr", "exp", "zeros"]))
        self.repeat = draw(st.booleans())  # write a key twice (the first with a throwaway value)

    def string(self, s: str) -> str:
        out = []
        for c in s:
            if c == '"' or c == "\\":
                out.append("\\" + c)
            elif c == "/" and self.slash:
                out.append("\\/")
            elif ord(c) < 0x20 or (not c.isascii() and self.ascii):
                out.append(json.dumps(c, ensure_ascii=True)[1:-1])
            elif c.isascii() and c.isalpha() and self.escape_letters and c in "eE":
                out.append(f"\\u{ord(c):04x}")
            else:
                out.append(c)
        return '"' + "".join(out) + '"'

    def number(self, n) -> str:
        if isinstance(n, float) and self.float_form == "exp":
            return f"{n:.17e}"
        if isinstance(n, float) and self.float_form == "zeros" and "e" not in repr(n):
            return repr(n) + "00"
        return json.dumps(n)


def write(node, style: Style, path: list, levels: list) -> tuple[str, tuple[int, int] | None]:
    """`node` as JSON text, and where the token on `path` (the first of its steps) stands in it; a `Nested` on the
    path adds its text and that place to `levels`, outermost first."""
    if isinstance(node, dict):
        parts, at = ["{"], None
        for n, (key, value) in enumerate(node.items()):
            if n:
                parts.append("," + style.space)
            if style.repeat and not (path and path[0] == key):
                parts += [style.string(key), style.colon, "0,", style.space]
            prefix = sum(map(len, parts))
            parts += [style.string(key), style.colon]
            on_path = bool(path) and path[0] == key
            text, inner = write(value, style, path[1:] if on_path else [], levels if on_path else [])
            if on_path:
                if path[1:] == ["<key>"]:  # the key itself is the secret
                    at = (prefix, prefix + len(style.string(key)))
                else:
                    at = _shift(inner, sum(map(len, parts)), text)
            parts.append(text)
        parts.append(style.space + "}")
        return "".join(parts), at
    if isinstance(node, list):
        parts, at = ["[", style.space], None
        for n, value in enumerate(node):
            if n:
                parts.append("," + style.space)
            on_path = bool(path) and path[0] == n
            text, inner = write(value, style, path[1:] if on_path else [], levels if on_path else [])
            if on_path:
                at = _shift(inner, sum(map(len, parts)), text)
            parts.append(text)
        parts.append("]")
        return "".join(parts), at
    if isinstance(node, Nested):
        text, inner = write(node.value, node.style, path[1:], levels if path else [])
        if path:
            levels.insert(0, (text, inner))
        return style.string(text), None  # the whole string token is on the path
    if isinstance(node, str):
        return style.string(node), None
    if node is None or isinstance(node, bool):
        return json.dumps(node), None
    return style.number(node), None


def _shift(inner, offset, text):
    return (offset, offset + len(text)) if inner is None else (inner[0] + offset, inner[1] + offset)


def styles(node, draw):
    """Gives each Nested its own style (a tool's text is written by another writer than the message)."""
    if isinstance(node, Nested):
        node.style = Style(draw)
        styles(node.value, draw)
    elif isinstance(node, dict):
        for v in node.values():
            styles(v, draw)
    elif isinstance(node, list):
        for v in node:
            styles(v, draw)


def materialize(node, path: list, levels: list):
    """`node` as Python values (what a message read from the wire holds): each Nested its JSON text."""
    if isinstance(node, Nested):
        text, at = write(node.value, node.style, path[1:], levels if path else [])
        if path:
            levels.insert(0, (text, at))
        return text
    if isinstance(node, dict):
        return {k: materialize(v, path[1:] if path and path[0] == k else [], levels if path and path[0] == k else [])
                for k, v in node.items()}
    if isinstance(node, list):
        return [materialize(v, path[1:] if path and path[0] == i else [], levels if path and path[0] == i else [])
                for i, v in enumerate(node)]
    return node


# -- a secret, put somewhere -------------------------------------------------------------------------------------


@st.composite
def planted(draw, secret: bool):
    """(a tree whose top is an object, the path to the secret's token or [], what the redacted token must hold:
    a function of the redactor's pseudonym)."""
    tree = {"m": draw(TREES), "n": Nested(draw(st.dictionaries(SAFE_KEYS, TREES, max_size=3)))}
    path, expected = [], None
    if secret:
        # go down to a container, at any depth, through the JSON inside strings too
        node, path = tree, []
        while True:
            inner = node.value if isinstance(node, Nested) else node
            steps = list(inner.items()) if isinstance(inner, dict) else list(enumerate(inner))
            deeper = [(k, v) for k, v in steps if isinstance(v, (dict, list, Nested))]
            if not deeper or not draw(st.booleans()):
                break
            if isinstance(node, Nested):
                path.append("<nested>")
            key, node = draw(st.sampled_from(deeper))
            path.append(key)
        if isinstance(node, Nested):
            path.append("<nested>")
            node = node.value
        kind = draw(st.sampled_from(["key", "pin", "shape", "shape-key"] if isinstance(node, dict) else ["shape"]))
        # ASCII: raw bytes are read a byte a character, and a pseudonym is of the secret as read
        value = draw(st.text(alphabet=string.printable, min_size=1, max_size=10).map(lambda s: "pw-" + s))
        before, after = draw(SAFE_TEXT), draw(SAFE_TEXT)
        sentence = f"{before} {SK} {after}"
        if kind == "key":
            node["apiKey"], path, expected = value, [*path, "apiKey"], lambda pseudonym: pseudonym(value)
        elif kind == "pin":
            node["pin"], path, expected = 4711, [*path, "pin"], lambda pseudonym: pseudonym("4711")
        elif kind == "shape-key":
            node[SK] = 1
            path, expected = [*path, SK, "<key>"], lambda pseudonym: pseudonym(SK)
        elif isinstance(node, dict):
            node["note"], path = sentence, [*path, "note"]
            expected = lambda pseudonym: sentence.replace(SK, pseudonym(SK))  # noqa: E731
        else:
            path = [*path, len(node)]
            node.append(sentence)
            expected = lambda pseudonym: sentence.replace(SK, pseudonym(SK))  # noqa: E731
    styles(tree, draw)
    return tree, path, expected


def check_levels(out: str, levels: list, expected: str) -> None:
    """At each level of JSON inside a string, outermost first: the redacted text is JSON, and the same as the
    original around the token on the path; the innermost such token holds `expected`."""
    for i, (orig, (start, end)) in enumerate(levels):
        jsonrpc.loads(out)
        tail = len(orig) - end
        assert out[:start] == orig[:start]
        assert out[len(out) - tail:] == orig[end:]
        decoded = json.loads(out[start:len(out) - tail])
        if i + 1 < len(levels):
            out = decoded
        else:
            assert decoded == expected


def _replaced(value, path: list, new):
    """A copy of `value` with what `path` names replaced by `new` (a key, when the path ends in "<key>")."""
    if path[-1:] == ["<key>"]:
        *path, key = path[:-1]
        return _replaced(value, path, {new if k == key else k: v for k, v in _at(value, path).items()})
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: _replaced(v, rest, new) if k == head else v for k, v in value.items()}
    return [_replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]


def _at(value, path: list):
    for step in path:
        value = value[step]
    return value


def _text_field(how, text: str):
    return {RAW: text.encode(), PAIRS: [["X-Tool-Result", text]], TEXTS: [text]}.get(how, text)


def _text_of(how, value) -> str:
    return {RAW: lambda: value.decode(), PAIRS: lambda: value[0][1], TEXTS: lambda: value[0]}.get(how, lambda: value)()


def _field(how, tree, path: list, levels: list, draw):
    """The tree as the value of a field read `how`: a message (values, JSON text in their strings), or JSON text
    (then its own level comes first in `levels` when there is a path)."""
    if how is JSON_VALUE or how is SOURCE:
        value = materialize(tree, path, levels)
        return {"jsonrpc": "2.0", "id": 1, "result": value} if how is JSON_VALUE else value
    text, at = write(tree, Style(draw), path, levels)
    if path:
        levels.insert(0, (text, at))
    return _text_field(how, text)


FIELD_NAMES = sorted(FIELDS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_without_a_secret_every_field_comes_back_as_it_went_in(data):
    tree, _, _ = data.draw(planted(False))
    field = data.draw(st.sampled_from(FIELD_NAMES))
    record = {"kind": "x", "t": 1.0, field: _field(FIELDS[field], tree, [], [], data.draw)}
    assert repr(Redactor().record(record)) == repr(record)  # every value of its type, every string as it was


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_secret_changes_its_own_token_and_nothing_else_at_any_depth(data):
    tree, path, expected = data.draw(planted(True))
    field = data.draw(st.sampled_from(FIELD_NAMES))
    how = FIELDS[field]
    r = Redactor()
    levels: list = []
    value = _field(how, tree, path, levels, data.draw)
    out = r.record({"kind": "x", "t": 1.0, field: value})[field]
    if how is JSON_VALUE or how is SOURCE:
        top = (["result"] if how is JSON_VALUE else []) + (path[:path.index("<nested>")] if levels else path)
        if not levels:  # the secret stands in the message's own values
            assert repr(out) == repr(_replaced(value, top, expected(r.pseudonym)))
            return
        assert repr(_replaced(out, top, None)) == repr(_replaced(value, top, None))
        check_levels(_at(out, top), levels, expected(r.pseudonym))
    else:
        check_levels(_text_of(how, out), levels, expected(r.pseudonym))


def test_a_secret_under_a_key_written_twice_is_found_in_each():
    r = Redactor()
    text = '{"token" : "first-one",\n "token":"second-one", "n": 1e3}'
    out = r.text(text)
    assert out == text.replace('"first-one"', f'"{r.pseudonym("first-one")}"').replace(
        '"second-one"', f'"{r.pseudonym("second-one")}"')


def test_a_text_seen_before_comes_back_as_itself():
    """The cache hands back an equal text; the walk tells a change by identity, so it must be the caller's own."""
    r = Redactor()
    pretty = json.dumps({"name": "a repeated string", "items": ["a repeated string"] * 2}, indent=2)
    first = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": pretty}], "tokens": 1}}
    second = json.loads(json.dumps(first))  # equal strings, other objects
    assert r.json(first)["result"]["content"][0]["text"] == pretty
    assert r.json(second)["result"]["content"][0]["text"] == pretty


def test_spans_name_every_token_and_refuse_what_is_not_json():
    text = r' { "a" : [1, 2.50, "x\u00e9"], "a": null } '
    value, where = json_spans.parse(text)
    assert list(value) == ["a", "a"] and type(list(value)[1]) is json_spans.Repeated
    assert list(value.values()) == [[1, 2.5, "x\u00e9"], None]
    (k1, items), (k2, null) = where
    assert [text[a:b] for a, b in (k1, *items, k2, null)] == ['"a"', "1", "2.50", r'"x\u00e9"', '"a"', "null"]
    for bad in ["", "1", '"s"', "{", "[1,]", '{"a" 1}', "[1] x", "[NaN]", "[" * 600 + "]" * 600, '{"a":1,}']:
        assert json_spans.parse(bad) is None, bad


def test_hostile_json_in_a_string_is_bounded_and_still_redacted():
    r = Redactor()
    # long: a hundred thousand tokens, the secret last (a safety rail on time, not a speed goal)
    items = ",".join(f'{{"n":{i}.0}}' for i in range(100_000))
    text = f'[{items}, {{"password": "hunter2"}}]'
    started = time.monotonic()
    out = r.text(text)
    assert time.monotonic() - started < 30
    assert out == text.replace('"hunter2"', f'"{r.pseudonym("hunter2")}"')
    # deeper than a message may nest: read as text, its shapes still found
    deep = "[" * 600 + f'"{SK}"' + "]" * 600
    assert r.text(deep) == deep.replace(SK, r.pseudonym(SK))
    # cut off, or not JSON at all after its bracket: text too
    for broken in ['{"token": "' + SK + '"', "[" + SK + "]", '{"a": "\\ud800 ' + SK + '"}']:
        assert SK not in r.text(broken)
