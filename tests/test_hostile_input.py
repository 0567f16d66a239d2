"""Hostile and random input: a tape from a stranger, bytes off the wire, an edit typed by hand. Each reader either
takes it or says one clear line; none crashes, hangs, or allocates what a length field claims."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptape.edits import EditError, parse
from mcptape.tape import records
from mcptape.tape.codec import decode_payload, pack
from mcptape.tape.file import MAGIC, Reader, TapeError, Writer, encode
from mcptape.wire import jsonrpc, sse

from .conftest import MCPTAPE, write_tape

FRAME = struct.Struct(">III")


def frame(payload: bytes) -> bytes:
    return FRAME.pack(len(payload), len(payload) ^ 0xFFFFFFFF, zlib.crc32(payload)) + payload


def tape_with(path: Path, *payloads: bytes) -> Path:
    path.write_bytes(MAGIC + encode(records.header(0.0, "test")) + b"".join(frame(p) for p in payloads))
    return path


def mcptape(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([MCPTAPE, *args], capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})


def one_line_error(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcptape: "), result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


# -- hostile tapes -------------------------------------------------------------------------------------------------

def test_a_frame_claiming_gigabytes_is_refused_without_reading_them(tmp_path):
    path = tmp_path / "huge.mcptape"
    with path.open("wb") as f:  # a sparse file: 4 GB on paper, nothing on disk
        f.write(MAGIC + encode(records.header(0.0, "test")))
        length = 0xFFFFFFF0
        f.write(FRAME.pack(length, length ^ 0xFFFFFFFF, 0))
        f.truncate(f.tell() + length)
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    for command in ("show", "check"):
        run = subprocess.run([sys.executable, "-c", probe, MCPTAPE, command, str(path)], capture_output=True,
                             text=True, timeout=60)
        assert "over the 64.0 MB limit" in run.stderr and "MCPTAPE_MAX_RECORD_MB" in run.stderr, run.stderr
        assert int(run.stdout.split()[-1]) < 200_000, f"{command} peaked at {run.stdout.split()[-1]} KB"


def test_a_ten_megabyte_message_reads_and_the_limit_can_be_lowered_or_raised(tmp_path):
    big = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "x" * 10_000_000}]}}
    path = tmp_path / "big.mcptape"
    with Writer(path, records.header(0.0, "test")) as writer:
        writer.write(records.stdio_line(1.0, records.S2C, json.dumps(big).encode()))
    assert list(Reader(path))[0]["msg"] == big
    assert mcptape("check", str(path)).returncode == 0
    one_line_error(mcptape("show", str(path), env={"MCPTAPE_MAX_RECORD_MB": "5"}), "over the 5.0 MB limit")
    assert mcptape("check", str(path), env={"MCPTAPE_MAX_RECORD_MB": "20"}).returncode == 0
    one_line_error(mcptape("check", str(path), env={"MCPTAPE_MAX_RECORD_MB": "lots"}), "not a number of megabytes")


@pytest.mark.parametrize("payload, needle", [
    (b"\x81\xa4kind" + b"\x91" * 5000 + b"\xc0", "nested too deeply"),
    (msgpack.packb({"kind": "stdio.line", "msg": msgpack.ExtType(7, b"abc")}), "unknown extension type 7"),
    (b"\xc1", "not valid msgpack"),
    (msgpack.packb([1, 2]), "not a map"),
    (b"\xdb\xff\xff\xff\xf0", "not valid msgpack"),  # a str32 claiming 4 GB inside a short payload
])
def test_undecodable_records_get_one_line_naming_the_byte(tmp_path, payload, needle):
    path = tape_with(tmp_path / "bad.mcptape", msgpack.packb({"kind": "stdio.stderr", "t": 1.0, "text": "ok"}),
                     payload)
    for args in (["show"], ["check"], ["diff", str(path)], ["edits", "--edit", "drop at=post:1"], ["replay", "--stdio"]):
        result = subprocess.run([MCPTAPE, args[0], str(path), *args[1:]], capture_output=True, text=True,
                                timeout=60, stdin=subprocess.DEVNULL)
        one_line_error(result, needle, "byte")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_after_the_signature_read_or_fail_cleanly(tmp_path_factory, tail):
    path = tmp_path_factory.mktemp("fuzz") / "t.mcptape"
    path.write_bytes(MAGIC + encode(records.header(0.0, "test")) + tail)
    try:
        reader = Reader(path)
        for record in reader:
            assert type(record) is dict
    except TapeError as e:
        assert "\n" not in str(e)


@pytest.mark.parametrize("value", [float("nan"), b"\xff"], ids=["nan", "bytes"])
def test_verify_names_a_recorded_answer_json_cannot_write(tmp_path, value):
    from .core.test_hostile_records import stdio_tape

    hostile = stdio_tape(tmp_path / "hostile.mcptape", {"jsonrpc": "2.0", "id": 1, "result": {"x": value}})
    live = stdio_tape(tmp_path / "live.mcptape", {"jsonrpc": "2.0", "id": 1, "result": {"x": 1}})
    for fmt in ("text", "json"):
        one_line_error(mcptape("verify", hostile, "--format", fmt, "--", MCPTAPE, "replay", "--stdio", live),
                       f"{hostile}#3: the record does not fit the tape format: stdio.line field msg holds")


# -- the writer and the parsers on any value -----------------------------------------------------------------------

json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(1 << 80), max_value=1 << 80), st.text(max_size=20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.decimals(allow_nan=False, allow_infinity=False))
any_json = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(any_json)
def test_any_json_value_round_trips_through_a_record_exactly(value):
    back = decode_payload(pack({"kind": "stdio.line", "msg": value}))["msg"]
    assert json.dumps(back, sort_keys=True, default=str) == json.dumps(value, sort_keys=True, default=str)
    assert type(back) is type(value)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), any_json.map(lambda v: json.dumps(v, default=str).encode())))
def test_the_jsonrpc_reader_takes_any_bytes(data):
    body = jsonrpc.parse(data)
    assert body.is_json or body.msg is None
    if body.is_json:
        for message in jsonrpc.messages(body.msg) if isinstance(body.msg, list) else [body.msg]:
            jsonrpc.kind(message)
            jsonrpc.describe(message)


@pytest.mark.parametrize("text", ["1E999999999999999999999", '{"id":1,"result":{"x":-1e-99999999999999999999}}'])
def test_a_number_no_decimal_can_hold_is_not_json_not_a_crash(text):
    # found by scripts/fuzz.py: decimal.InvalidOperation escaped the reader, and the recorder lost the message
    body = jsonrpc.parse(text.encode())
    assert not body.is_json and "out of range" in body.problem
    assert records.body(text.encode())["raw"] == text.encode()


def test_json_nested_past_what_a_tape_stores_is_kept_raw_and_recording_goes_on():
    deep = ("[" * 600 + "]" * 600).encode()
    fields = records.body(deep)
    assert fields["raw"] == deep and "nested deeper than 500" in fields["problem"]
    encode(records.stdio_line(1.0, records.C2S, deep))  # storable
    shallow = ("[" * 400 + "]" * 400).encode()
    assert "msg" in records.body(shallow)
    encode(records.stdio_line(1.0, records.C2S, shallow))


sse_lines = st.sampled_from([b"data: {\"jsonrpc\":\"2.0\"}", b"id: 7", b"event: message", b"retry: 10", b"retry: x",
                             b": comment", b"data:", b"", b"\xff\xfe", b"id: a\x00b", b"data: two\rdata: three"])
sse_streams = st.lists(st.one_of(sse_lines, st.binary(max_size=12)), max_size=12).map(
    lambda lines: b"".join(line + nl for line, nl in zip(lines, [b"\n", b"\r\n", b"\r"] * 12)))


def _events(stream: bytes, cuts: list[int]) -> list:
    parser, out, last = sse.Parser(), [], 0
    for cut in sorted(set(cuts)) + [len(stream)]:
        out += parser.feed(stream[last:cut])
        last = cut
    return out + parser.close()


@settings(max_examples=300, deadline=None)
@given(sse_streams, st.lists(st.integers(0, 200), max_size=6))
def test_the_sse_parser_takes_any_bytes_and_any_chunking_gives_the_same_events(stream, cuts):
    whole = _events(stream, [])
    assert _events(stream, [c for c in cuts if c <= len(stream)]) == whole


@settings(max_examples=100, deadline=None)
@given(st.builds(sse.Event, id=st.one_of(st.none(), st.text(alphabet="abc123-", max_size=5)),
                 event=st.one_of(st.none(), st.sampled_from(["message", "endpoint"])),
                 data=st.one_of(st.none(), st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"),
                                                   max_size=20))))
def test_an_encoded_event_parses_back_to_itself(event):
    parsed = _events(sse.encode(event), [])
    if event.data is None and event.id is None and event.event is None:
        return
    assert [(e.id, e.event, e.data) for e in parsed] == [(event.id, event.event, event.data)]


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=60), st.lists(st.sampled_from(
    ["drop", "error", "status", "delay", "expire-session", "at=", "call:", "post:", "1", "-1", "code=", "=",
     "ms=", "x", " ", "'", '"', "tools/call", "method=", "after=", "times=", "#"]), max_size=8).map("".join)))
def test_the_edit_language_parses_or_says_why(text):
    try:
        parse(text)
    except EditError as e:
        assert str(e) and "\n" not in str(e)


# -- the replay's HTTP front: garbage on one connection, service as usual on another -------------------------------

def _session_tape(path: Path) -> str:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "0"}}}
    result = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                     "serverInfo": {"name": "s", "version": "0"}}}
    json_headers = [("content-type", "application/json")]
    return write_tape(path, [
        records.capture_start(0.0, "test", {}, {}),
        records.http_request(1.0, 0, 0, "POST", "/mcp", [], json_headers, None, None, True,
                             records.body(json.dumps(init).encode())),
        records.http_response(1.1, 0, 200, "OK", [*json_headers, ("mcp-session-id", "s1")], "s1",
                              records.body(json.dumps(result).encode())),
        records.end(1.1, 0, "complete"),
    ])


class _KeepAlive:
    """A client on one kept-alive connection: each request waits for its whole answer."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.file = self.sock.makefile("rb")

    def post(self, message: dict, session: str | None = None) -> tuple[int, dict, bytes]:
        body = json.dumps(message).encode()
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
                + (f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n" if session else "") + "\r\n")
        self.sock.sendall(head.encode() + body)
        status = int(self.file.readline().split()[1])
        headers = {}
        while (line := self.file.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        return status, headers, self.file.read(int(headers.get("content-length", 0)))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from mcptape.replay import replaying

    with replaying(_session_tape(tmp_path_factory.mktemp("front") / "t.mcptape")) as url:
        port = int(url.split(":")[2].split("/")[0])
        client = _KeepAlive(port)
        status, headers, _ = client.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "0"}}})
        assert status == 200
        yield port, client, headers["mcp-session-id"]


http_garbage = st.one_of(
    st.binary(max_size=200),
    st.builds(lambda method, target, headers, body: f"{method} {target} HTTP/1.1\r\n".encode() + headers + b"\r\n" + body,
              st.sampled_from(["POST", "GET", "DELETE", "PUT", "BREW", ""]), st.sampled_from(["/mcp", "/x", "*", "", "/mcp?a=%zz"]),
              st.lists(st.sampled_from([b"Content-Length: 5\r\n", b"Content-Length: -1\r\n", b"Content-Length: 99999999999\r\n",
                                        b"Transfer-Encoding: chunked\r\n", b"Mcp-Session-Id: s1\r\n", b"Mcp-Session-Id: \xff\r\n",
                                        b"Last-Event-ID: 1\r\n", b"Content-Type: application/json\r\n", b"X: " + b"y" * 100 + b"\r\n",
                                        b"bad header\r\n"]), max_size=5).map(b"".join),
              st.one_of(st.binary(max_size=60), st.sampled_from([b"{}", b"[]", b"null", b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                                                                b"0\r\n\r\n", b"5\r\nhello\r\n0\r\n\r\n"]))))


@settings(max_examples=120, deadline=None)
@given(garbage=http_garbage, ping_id=st.integers(1, 10**6))
def test_garbage_on_one_connection_never_disturbs_another(served, garbage, ping_id):
    port, client, session = served
    with socket.create_connection(("127.0.0.1", port), timeout=10) as bad:
        bad.sendall(garbage)
        bad.shutdown(socket.SHUT_WR)
        bad.settimeout(10)
        while bad.recv(65536):  # the replay answers or closes; it never leaves the connection hanging
            pass
    status, _, body = client.post({"jsonrpc": "2.0", "id": ping_id, "method": "ping"}, session)
    assert status == 200 and json.loads(body) == {"jsonrpc": "2.0", "id": ping_id, "result": {}}
