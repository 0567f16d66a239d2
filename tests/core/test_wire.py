from decimal import Decimal

import pytest

from mcptape.wire import http, jsonrpc, sse


def feed_in_pieces(data: bytes, size: int) -> list[sse.Event]:
    parser = sse.Parser()
    events = []
    for i in range(0, len(data), size):
        events += parser.feed(data[i:i + size])
    return events + parser.close()


STREAM = (
    b"\xef\xbb\xbf: ping - 2026-11-22\r\n\r\n"
    b"id: 7\r\ndata:\r\nretry: 100\r\n\r\n"
    b"event: message\rdata: {\"jsonrpc\":\"2.0\",\r\rdata: \"id\":1}\n\n"
    b"event: message\ndata: line1\ndata: line2\n\n"
)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_sse_parses_the_same_whatever_the_chunking(size):
    events = feed_in_pieces(STREAM, size)
    assert [(e.id, e.event, e.data, e.retry, e.comments, e.incomplete) for e in events] == [
        (None, None, None, None, ["ping - 2026-11-22"], False),
        ("7", None, "", 100, [], False),
        (None, "message", '{"jsonrpc":"2.0",', None, [], False),
        (None, None, '"id":1}', None, [], False),
        (None, "message", "line1\nline2", None, [], False),
    ]


def test_sse_keeps_an_unterminated_event_and_names_bad_fields():
    parser = sse.Parser()
    assert parser.feed(b"retry: soon\nid: a\0b\nbogus\ndata: {\"x\"") == []
    [event] = parser.close()
    assert event.incomplete and event.data == '{"x"'
    assert event.id is None and event.retry is None
    assert len(event.problems) == 3


def test_sse_encode_round_trips():
    event = sse.Event(id="3", event="message", data='{"a":1}\n{"b":2}', retry=50, comments=["hi"])
    [back] = sse.Parser().feed(sse.encode(event))
    assert (back.id, back.event, back.data, back.retry, back.comments) == ("3", "message", event.data, 50, ["hi"])


def test_jsonrpc_numbers_are_exact():
    value = jsonrpc.loads('{"id": 123456789012345678901234567890, "a": 0.1, "b": 1e400, "c": 0.10000000000000000001,'
                          ' "d": -0.0, "e": 1E5}')
    assert value["id"] == 123456789012345678901234567890
    assert value["a"] == 0.1 and isinstance(value["a"], float)
    assert value["b"] == Decimal("1e400")
    assert value["c"] == Decimal("0.10000000000000000001")
    assert str(value["d"]) == "-0.0" and value["e"] == 100000.0


@pytest.mark.parametrize("text, problem", [
    (b"NaN", "not JSON"),
    (b"{not json", "not JSON"),
    (b"\xff\xfe", "not UTF-8"),
    (b'{"jsonrpc":"2.0","id":null,"method":"x"}', "id must be"),
    (b'{"jsonrpc":"1.0","id":1,"method":"x"}', '"jsonrpc": "2.0"'),
    (b'{"jsonrpc":"2.0","id":1}', "neither"),
    (b"[]", "empty batch"),
    (b'[{"jsonrpc":"2.0","method":"a"}, 3]', "batch item 1"),
    (b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}', "integer code"),
])
def test_jsonrpc_problems_are_named(text, problem):
    assert problem in jsonrpc.parse(text).problem


def test_jsonrpc_kinds_and_descriptions():
    assert jsonrpc.kind({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}) == "request"
    assert jsonrpc.kind({"jsonrpc": "2.0", "method": "notifications/initialized"}) == "notification"
    assert jsonrpc.describe({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}) \
        == "error #null -32600 Session not found"
    assert jsonrpc.parse(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}').problem is None
    assert jsonrpc.parse(b"  ") == jsonrpc.Body()


def test_http_helpers_and_streaming_decoders():
    import gzip
    import zlib

    import brotli

    headers = [("Content-Type", "text/event-stream; charset=utf-8"), ("Accept", "application/json, text/event-stream")]
    assert http.media_type(http.get(headers, "content-type")) == http.SSE
    assert http.accepts(headers, http.SSE) and not http.accepts(headers, "text/html")
    payload = b"data: hello\n\n" * 1000
    for encoding, packed in [("gzip", gzip.compress(payload)), ("deflate", zlib.compress(payload)),
                             ("br", brotli.compress(payload)), (None, payload)]:
        decoder = http.Decoder(encoding)
        assert b"".join(decoder.decode(packed[i:i + 100]) for i in range(0, len(packed), 100)) == payload
    with pytest.raises(ValueError, match="unsupported"):
        http.Decoder("compress")


def test_json_pointers_drop_without_touching_the_original():
    from mcptape.wire import pointer

    value = {"params": {"arguments": {"now": 1, "a": 2}, "list": [1, 2, 3]}, "a/b": {"~": 1}}
    assert pointer.without(value, pointer.parse("/params/arguments/now")) == {
        "params": {"arguments": {"a": 2}, "list": [1, 2, 3]}, "a/b": {"~": 1}}
    assert pointer.without(value, pointer.parse("/params/list/1"))["params"]["list"] == [1, None, 3]
    assert pointer.without(value, pointer.parse("/a~1b/~0")) == {**value, "a/b": {}}
    assert pointer.without(value, pointer.parse("/missing/x")) == value
    assert value["params"]["arguments"] == {"now": 1, "a": 2}
    with pytest.raises(ValueError, match="starts with /"):
        pointer.parse("params")
    assert jsonrpc.id_key(1) != jsonrpc.id_key("1") and jsonrpc.id_key(True) != jsonrpc.id_key(1)
