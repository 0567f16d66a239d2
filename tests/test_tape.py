import json
import struct
import zlib
from decimal import Decimal
from pathlib import Path

import pytest

from mcptape.tape import json_form, records
from mcptape.tape.file import MAGIC, TapeError, Writer, read
from mcptape.wire import jsonrpc

from .conftest import run_mcptape

EXOTIC = jsonrpc.loads(
    '{"jsonrpc":"2.0","id":18446744073709551616999,"result":{"neg":-98765432109876543210,"f":0.5,'
    '"tiny":5e-324,"huge":1e400,"precise":3.14159265358979323846264338327950288,"u":"\\u00e9\\ud83d\\ude00",'
    '"nested":[[],{},null,true,false,""],"max":18446744073709551615,"min":-9223372036854775808}}'
)


def sample(path: Path, n: int = 5) -> list[dict]:
    items = [records.http_request(1.0 + i, i, 0, "POST", "/mcp", [["a", "b"]], [["Host", "x"]], "sid", None, True,
                                  {"msg": EXOTIC}) for i in range(n)]
    items.append({"kind": "http.response", "t": 9.0, "exchange": 0, "status": 200, "raw": b"\x00\xff binary",
                  "problem": "x"})
    with Writer(path, records.header(0.0, "test")) as w:
        for item in items:
            w.write(item)
    return items


def test_every_json_value_round_trips_exactly(tmp_path):
    items = sample(tmp_path / "a.mcptape")
    tape = read(tmp_path / "a.mcptape")
    assert tape.records == items and tape.truncated is None
    result = tape.records[0]["msg"]["result"]
    assert tape.records[0]["msg"]["id"] == 18446744073709551616999
    assert result["huge"] == Decimal("1e400") and result["precise"] == Decimal("3.14159265358979323846264338327950288")
    # and through the JSON form, twice
    text = json_form.dumps(json_form.document(tape.header, tape.records))
    header, back = json_form.parse_document(text)
    assert back == items and header == tape.header
    assert json_form.dumps(json_form.document(header, back)) == text


def test_a_tape_torn_at_any_byte_loads_what_came_before(tmp_path):
    path = tmp_path / "a.mcptape"
    items = sample(path, 3)
    data = path.read_bytes()
    header_end = len(MAGIC) + 12 + int.from_bytes(data[len(MAGIC):len(MAGIC) + 4], "big")
    torn = tmp_path / "torn.mcptape"
    complete_at = []
    for cut in range(header_end, len(data)):
        torn.write_bytes(data[:cut])
        tape = read(torn)
        assert tape.records == items[:len(tape.records)]
        if tape.truncated is None:
            complete_at.append(cut)
        else:
            assert "torn" in tape.truncated
    assert len(complete_at) == len(items)  # exactly at each record boundary the tape is whole


def test_a_flipped_byte_is_reported_with_its_offset(tmp_path):
    path = tmp_path / "a.mcptape"
    sample(path, 3)
    data = bytearray(path.read_bytes())
    for position in range(len(MAGIC), len(data), 7):
        broken = data.copy()
        broken[position] ^= 0x10
        path.write_bytes(bytes(broken))
        with pytest.raises(TapeError, match=r"corrupt record.* at byte \d+"):
            read(path)


def test_frames_carry_zlibs_crc32_whichever_library_computes_it(tmp_path):
    """Format 1's checksum is zlib's CRC-32: a tape written by any mcptape (zlib's or ISA-L's CRC) reads in any."""
    path = tmp_path / "a.mcptape"
    items = sample(path, 3)
    data = path.read_bytes()
    at, frames = len(MAGIC), 0
    while at < len(data):
        length, check, crc = struct.unpack(">III", data[at:at + 12])
        assert check == length ^ 0xFFFFFFFF and crc == zlib.crc32(data[at + 12:at + 12 + length])
        at, frames = at + 12 + length, frames + 1
    assert frames == 1 + len(items)  # the header, then each record


def test_files_that_are_not_tapes_get_one_clear_line(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(TapeError, match="not an mcptape tape"):
        read(tmp_path / "x.json")
    with pytest.raises(TapeError, match="cannot open"):
        read(tmp_path / "missing.mcptape")
    (tmp_path / "empty.mcptape").write_bytes(MAGIC)
    with pytest.raises(TapeError, match="no header"):
        read(tmp_path / "empty.mcptape")


def test_append_cuts_a_torn_tail_and_new_refuses_an_existing_file(tmp_path):
    path = tmp_path / "a.mcptape"
    items = sample(path, 2)
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(TapeError, match="already exists"):
        Writer(path, records.header(0, "t"))
    with Writer(path, records.header(0, "t"), "append") as w:
        assert w.repaired and "torn" in w.repaired
        w.write({"kind": "end", "t": 1, "exchange": 0, "reason": "complete"})
    tape = read(path)
    assert tape.truncated is None
    assert tape.records == items[:-1] + [{"kind": "end", "t": 1, "exchange": 0, "reason": "complete"}]


def test_show_json_and_import_round_trip_on_the_command_line(tmp_path):
    path = tmp_path / "a.mcptape"
    sample(path)
    shown = run_mcptape("show", str(path), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["mcptape"] == 1 and [r["seq"] for r in doc["records"]] == list(range(6))
    assert doc["records"][0]["msg"]["id"] == 18446744073709551616999 and doc["records"][5]["raw_b64"]
    assert "1E+400" in shown.stdout  # the exact literal, not a float
    (tmp_path / "a.json").write_text(shown.stdout)
    assert run_mcptape("import", str(tmp_path / "a.json"), "-o", str(tmp_path / "b.mcptape")).returncode == 0
    assert read(tmp_path / "b.mcptape").records == read(path).records
    lines = run_mcptape("show", str(path), "--format", "jsonl").stdout
    (tmp_path / "a.jsonl").write_text(lines)
    assert run_mcptape("import", str(tmp_path / "a.jsonl"), "-o", str(tmp_path / "c.mcptape")).returncode == 0
    assert read(tmp_path / "c.mcptape").records == read(path).records


@pytest.mark.parametrize("change, message", [
    ({"status": "200"}, "record 1: http.response field status must be an integer, not a string (\"200\")"),
    ({"session": 123}, "record 1: http.response field session must be a string or null, not a number (123)"),
    ({"kind": "http.reply"}, 'record 1: unknown kind "http.reply" (kinds: header, capture.start'),
    ({"exchange": None}, "record 1: http.response field exchange must be an integer, not null"),
    ({"headers": [["a"]]}, "record 1: http.response field headers must be a list of [name, value] pairs"),
    ({"dir": "up"}, "record 1: http.response field dir must be c2s or s2c"),
    ({"t": True}, "record 1: http.response field t must be"),
])
def test_import_names_the_bad_record_and_field(tmp_path, change, message):
    path = tmp_path / "a.mcptape"
    sample(path, 1)
    doc = jsonrpc.loads(run_mcptape("show", str(path), "--format", "json").stdout)  # exact numbers
    doc["records"][1].update(change)
    (tmp_path / "bad.json").write_text(json_form.dumps(doc))
    result = run_mcptape("import", str(tmp_path / "bad.json"), "-o", str(tmp_path / "out.mcptape"))
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out.mcptape").exists()


def test_import_says_what_a_tape_or_a_cut_off_file_is(tmp_path):
    path = tmp_path / "a.mcptape"
    sample(path)
    result = run_mcptape("import", str(path), "-o", str(tmp_path / "out.mcptape"))
    assert result.returncode == 2 and "is already a tape" in result.stderr
    for fmt in ("json", "jsonl"):
        text = run_mcptape("show", str(path), "--format", fmt).stdout
        (tmp_path / f"cut.{fmt}").write_text(text[: len(text) * 2 // 3])
        result = run_mcptape("import", str(tmp_path / f"cut.{fmt}"), "-o", str(tmp_path / "out.mcptape"))
        assert result.returncode == 2 and "cut off" in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.mcptape").exists()


@pytest.mark.parametrize("content, message", [
    ("", "empty"), ("{\"mcptape\": 9, \"header\": {}, \"records\": []}", "format 9"),
    ("[1, 2]", "expected"), ('{"mcptape": 1, "header": {"kind": "header", "format": 1}, "records": [{"kind": "x", "raw_b64": "!!"}]}', "base64"),
])
def test_import_rejects_bad_input_with_one_line(tmp_path, content, message):
    (tmp_path / "bad.json").write_text(content)
    result = run_mcptape("import", str(tmp_path / "bad.json"), "-o", str(tmp_path / "out.mcptape"))
    assert result.returncode == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "out.mcptape").exists()


def test_show_on_a_damaged_tape(tmp_path):
    path = tmp_path / "a.mcptape"
    sample(path)
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    result = run_mcptape("show", str(path))
    assert result.returncode == 0 and "truncated" in result.stderr
    broken = bytearray(data)
    broken[len(data) // 2] ^= 1
    path.write_bytes(bytes(broken))
    result = run_mcptape("show", str(path))
    assert result.returncode == 2 and "corrupt record at byte" in result.stderr
    assert "Traceback" not in result.stderr
