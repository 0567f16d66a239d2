"""The tape reader decodes a record with msgspec where that is sure to agree with msgpack-python and with
msgpack-python everywhere else (tape/codec.py): any bytes give the record msgpack-python gives, or its error."""

from __future__ import annotations

import math
from decimal import Decimal

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptape.tape import records
from mcptape.tape.codec import FAST_MAX, FRAME, MAGIC, crc32, decode_payload, encode, ext_hook, fast_decode, pack
from mcptape.tape.file import Reader, TapeError

keys = st.one_of(st.text(max_size=40), st.integers(-(1 << 63), (1 << 64) - 1), st.binary(max_size=4), st.none(),
                 st.booleans(), st.floats(allow_nan=False))
leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70), st.floats(), st.text(max_size=40),
    st.binary(max_size=40), st.decimals(allow_nan=False, allow_infinity=False),
    st.builds(msgpack.Timestamp, st.integers(0, 1 << 33), st.integers(0, 999_999_999)),
    st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=6)))
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
                      max_leaves=30)


def plain(payload: bytes):
    """What msgpack-python makes of the bytes: ("ok", value) or ("error", type, message)."""
    try:
        return "ok", exact(msgpack.unpackb(payload, ext_hook=ext_hook, raw=False, strict_map_key=False))
    except Exception as e:
        return "error", type(e), str(e)


def ours(payload: bytes):
    try:
        return "ok", exact(decode_payload(payload))
    except Exception as e:
        return "error", type(e), str(e)


def exact(value) -> list:
    """A value with its types spelled out (1, 1.0, True and Decimal(1) compare equal in Python), as a flat list, in
    order: comparing two of them does not recurse however deep the value (Python 3.12 refuses a comparison a
    thousand lists deep)."""
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            out.append(("map", len(item)))
            for key, inner in reversed(list(item.items())):
                stack += [inner, key]
        elif isinstance(item, (list, tuple)):
            out.append((type(item).__name__, len(item)))
            stack.extend(reversed(item))
        elif isinstance(item, float) and math.isnan(item):
            out.append(("float", "nan"))
        else:
            out.append((type(item).__name__, repr(item)))
    return out


@settings(max_examples=400, deadline=None)
@given(values)
def test_any_value_decodes_as_msgpack_python_decodes_it(value):
    payload = pack(value)
    assert ours(payload) == plain(payload)


@settings(max_examples=400, deadline=None)
@given(values, st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255), st.sampled_from("sid")), max_size=4))
def test_damaged_bytes_decode_or_fail_as_msgpack_python_does(tmp_path_factory, value, edits):
    payload = bytearray(pack(value))
    for at, byte, how in edits:
        at %= len(payload) + 1
        if how == "s" and at < len(payload):
            payload[at] = byte
        elif how == "i":
            payload.insert(at, byte)
        elif at < len(payload):
            del payload[at]
    payload = bytes(payload)
    if _array_key(payload):
        return
    assert ours(payload) == plain(payload)
    assert read(tmp_path_factory.mktemp("t") / "t.mcptape", payload) == read_plain(payload)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60))
def test_any_bytes_decode_or_fail_as_msgpack_python_does(payload):
    if not _array_key(payload):
        assert ours(payload) == plain(payload)


def read(path, payload: bytes):
    """What the tape reader makes of a record of these bytes: ("ok", record) or ("error", its one line)."""
    path.write_bytes(MAGIC + encode(records.header(0.0, "t")) + FRAME.pack(len(payload), len(payload) ^ 0xFFFFFFFF,
                                                                            crc32(payload)) + payload)
    try:
        return "ok", [exact(r) for r in Reader(path)]
    except TapeError as e:
        return "error", str(e).split(" at byte ", 1)[1].split(" ", 1)[1]  # (the words after the offset)


def read_plain(payload: bytes):
    outcome = plain(payload)
    if outcome[0] == "ok":
        return ("ok", [outcome[1]]) if outcome[1][0][0] == "map" else ("error", "is not a map")
    why = outcome[2] or ("nested too deeply" if outcome[1] is msgpack.StackError else outcome[1].__name__)
    return "error", f"is not valid msgpack ({why})"


def _array_key(payload: bytes) -> bool:
    """The one difference (codec.py): an array as a map key, refused by msgpack-python, read as a tuple."""
    outcome = ours(payload)
    return plain(payload)[1:2] == (TypeError,) and "tuple" in repr(outcome)


def test_an_array_as_a_map_key_is_the_one_difference():
    payload = b"\x81\x92\x01\xa1x\xc0"  # {[1, "x"]: nil}
    assert plain(payload) == ("error", TypeError, "unhashable type: 'list'")
    assert decode_payload(payload) == {(1, "x"): None}


def test_nesting_past_what_msgpack_python_takes_is_refused_in_its_words(tmp_path):
    for depth in (1023, 1024, 1025, 5000, 20_000):
        payload = b"\x81\xa1k" + b"\x91" * depth + b"\xc0"
        assert ours(payload) == plain(payload)
        assert read(tmp_path / "deep.mcptape", payload) == read_plain(payload)
    assert read_plain(b"\x81\xa1k" + b"\x91" * 5000 + b"\xc0") == ("error", "is not valid msgpack (nested too deeply)")
    assert ours(b"\x91" * FAST_MAX) == plain(b"\x91" * FAST_MAX)  # the longest msgspec reads: truncated, same words


def test_big_integers_exact_decimals_and_timestamps_come_back_as_they_were():
    value = {"big": 1 << 80, "neg": -(1 << 70), "exact": Decimal("3.14159265358979323846264338327950288"),
             "at": msgpack.Timestamp(5, 7), "raw": b"\x00\xff"}
    assert exact(decode_payload(pack(value))) == exact(value)
    short = {"big": 1 << 80, "exact": Decimal("0.1")}
    assert 255 not in pack(short) and exact(decode_payload(pack(short))) == exact(short)
    # msgspec's own way, not msgpack-python's behind it (the fallback would hide a hook msgspec cannot call)
    assert exact(fast_decode(pack(short))) == exact(short)


def test_extensions_of_every_code_decode_or_fail_as_msgpack_python_does():
    for code in range(-128, 128):
        for data in (b"", b"7", b"12345678", b"x" * 12):
            payload = b"\x81\xa1k\xc7" + bytes([len(data), code & 0xFF]) + data
            assert ours(payload) == plain(payload), (code, data)


def test_a_short_record_past_a_low_item_limit_is_counted(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPTAPE_MAX_ITEMS", "10")
    payload = pack({"kind": "stdio.line", "msg": list(range(50))})
    assert len(payload) < FAST_MAX
    assert read(tmp_path / "t.mcptape", payload)[1].startswith("holds more than 10 items, over the limit")


def test_a_record_holding_what_no_json_holds_is_named_when_a_command_trips_on_it(tmp_path):
    line = msgpack.packb({"kind": "stdio.line", "t": 1.0, "dir": "c2s"})
    for value, named in ((b"\x81\x91\x01\x01", "a map key that is an array ([1])"),  # {[1]: 1}
                         (msgpack.packb(msgpack.Timestamp(5, 7)), "a value of type Timestamp")):
        path = tmp_path / "t.mcptape"
        read(path, bytes([line[0] + 1]) + line[1:] + b"\xa3msg" + value)
        found = records.first_problem([str(path)])
        assert found is not None and found.startswith(f"{path}#0: the record does not fit the tape format: "
                                                          f"stdio.line field msg holds {named}")
