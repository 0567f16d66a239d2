"""Redaction's name rules and its one table of fields (redact/scrub.py, FIELDS), in memory."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptape.blend import blend
from mcptape.redact.names import key_is_sensitive
from mcptape.redact.pseudonym import is_pseudonym
from mcptape.redact.redactor import Redactor
from mcptape.redact.scrub import FIELDS, secrets_in
from mcptape.tape import records
from mcptape.wire import jsonrpc

SK = "sk-" + "a1B2" * 8


@pytest.mark.parametrize("key", ["auth", "pass", "pin", "sessionKey", "session_key", "authKey", "accessToken",
                                 "clientSecret", "x_password", "userPin"])
def test_credential_keys_are_sensitive(key):
    assert key_is_sensitive(key)


@pytest.mark.parametrize("key", ["token_count", "maxTokens", "tokenType", "authUrl", "passwordMinLength", "pinned",
                                 "author", "passes", "spinner", "inputSchema", "id", "sessionId", "keys"])
def test_counts_types_and_lookalikes_are_not(key):
    assert not key_is_sensitive(key)


def test_header_and_query_name_rules():
    r = Redactor()
    headers = r.headers([("X-Custom-Auth", "v1"), ("Authentication", "v2"), ("WWW-Authenticate", 'Bearer realm="x"'),
                         ("Content-Length", "12"), ("Mcp-Session-Id", "plain-session-1")])
    assert [is_pseudonym(v) for _, v in headers] == [True, True, False, False, False]
    query = r.query([("session_key", "q"), ("sessionId", "plain-session-1"), ("page", "2")])
    assert [is_pseudonym(v) for _, v in query] == [True, False, False]


def test_ids_schemas_and_protocol_keys_are_never_touched_even_when_token_shaped():
    msg = {"jsonrpc": "2.0", "id": SK, "method": "tools/list", "result": {
        "tools": [{"name": "t", "inputSchema": {"properties": {"password": {"type": "string"}}}}], "nextCursor": SK}}
    assert Redactor().json(msg) == msg


def test_a_session_id_and_an_event_id_change_only_when_token_shaped_and_to_one_pseudonym():
    r = Redactor()
    plain = records.sse_event(1.0, 0, type("E", (), {"id": "42", "event": None, "retry": None, "comments": [],
                                                      "data": None, "problems": [], "incomplete": False})())
    assert r.record(plain)["id"] == "42"
    request = {"kind": "http.request", "t": 1.0, "exchange": 0, "method": "GET", "path": "/mcp", "session": SK,
               "headers": [["Mcp-Session-Id", SK], ["Last-Event-ID", SK]]}
    event = {"kind": "sse.event", "t": 1.0, "exchange": 0, "id": SK}
    out, out_event = r.record(request), r.record(event)
    assert is_pseudonym(out["session"])
    assert out["session"] == out["headers"][0][1] == out["headers"][1][1] == out_event["id"]


def test_every_field_of_the_table_is_read_by_the_detector_and_the_redactor():
    for field, how in FIELDS.items():
        value = {"text": f"x {SK}", "json": {"note": SK}, "raw": f"x {SK}".encode(), "pairs": [["X-Note", SK]],
                 "texts": [SK], "source": {"stdio": ["srv", SK]}}[how]
        record = {"kind": "any", "t": 0.0, field: value}
        assert [rule for _, _, rule in secrets_in([record])] == ["sk-key"], field
        redacted = Redactor().record(record)
        assert SK not in repr(redacted) and list(secrets_in([redacted])) == [], field


def test_keys_redacted_in_a_recording_still_match_the_live_key():
    r = Redactor()
    recorded = r.json({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {SK: 1, "b": 2}})
    assert SK not in repr(recorded)
    live = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"sk-" + "z9" * 16: 1, "b": 2}}
    assert blend(recorded, live) == recorded
    assert blend(recorded, {**live, "params": {"other": 1, "c": 2}}) != recorded  # what is not redacted still counts


def test_headers_and_query_redacted_once_are_what_a_second_pass_makes_of_them():
    # the HTTP capture redacts them as it reads the session, then asks the record's pass to leave them (done=...):
    # the tape must be the same as if they had been read twice
    r = Redactor(extra_headers=["X-Team"])
    pairs = [["Authorization", f"Bearer {SK}"], ["Mcp-Session-Id", SK], ["X-Team", "blue"], ["X-Note", f"k={SK}"],
             ["Cookie", "sid=abc; theme=dark"], ["Accept", "application/json"]]
    query = [["api_key", SK], ["page", "2"], ["q", f"find {SK}"]]
    request = records.http_request(1.0, 0, 0, "POST", "/mcp", r.query(query), r.headers(pairs), None, None, True,
                                   records.body(b'{"jsonrpc":"2.0","id":1,"method":"ping"}'))
    once = r.record(request, frozenset({"headers", "query"}))
    assert once == r.record(request)
    assert SK not in repr(once) and list(secrets_in([once])) == []


# -- a body found clean is not walked (Redactor.clean): it must hold nothing the walk would replace ----------------
SECRETISH = st.sampled_from([
    SK, "Bearer abcdefghijklmnop", "password=hunter22", "AKIAIOSFODNN7EXAMPLE", "https://u:pw@host/cb?code=abc",
    "toKen", "xoxb-1234567890-ab", "ghp_" + "a1" * 18, "\u017fecret=abcdef", "?\u212aey=abcdef", '{"token": "abc"}',
    '[{"pin": 1234}]', "eyJhbGciOi.eyJzdWIiOi.sig"])
FOLDING = "\u0130\u0131\u017f\u212a"  # letters that fold to ASCII ones
TEXT = SECRETISH | st.text(max_size=12) | st.text(alphabet="akeyinpstox-_:/=?{}[]\"\\" + FOLDING, max_size=16)
KEY = st.sampled_from(["token", "apiKey", "PIN", "pass", "sessionKey", "name", "arguments", "text"]) | TEXT
BODY = st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEY, inner, max_size=3), max_leaves=10)


@settings(max_examples=400, deadline=None)
@given(body=BODY, ascii_only=st.booleans(), escaped_slashes=st.booleans())
def test_a_body_whose_text_is_found_clean_holds_nothing_to_redact(body, ascii_only, escaped_slashes):
    """JSON written every way a peer may (\\u escapes, \\/, letters that fold to ASCII, JSON inside strings): when
    its text is clean, walking the message it holds replaces nothing."""
    text = json.dumps(body, ensure_ascii=ascii_only)
    if escaped_slashes:
        text = text.replace("/", "\\/")
    for form in (text, text.encode()):
        r = Redactor()
        if r.clean(form):
            message = jsonrpc.loads(form)
            assert r.json(message) == message, form


@pytest.mark.parametrize("text", [
    '{"\\u0074oken": "abc"}', '{"u": "https:\\/\\/u:pw@host\\/x"}', '{"q": "?\u212aey=abcdefgh"}',
    '{"a": "\u017fecret=abcdefgh"}', '{"t": "{\\"\\\\u0074oken\\": 1}"}', '{"PIN": 1234}',
    '{"a": "Bearer abcdefghijklmnop"}'])
def test_a_secret_however_it_is_spelled_keeps_its_body_from_being_clean(text):
    r = Redactor()
    assert not r.clean(text) and not r.clean(text.encode("utf-8"))


def test_a_plain_call_and_its_answer_are_clean_unless_a_path_is_redacted_whole():
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}'
    answer = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"3"}],"isError":false}}'
    assert Redactor().clean(call) and Redactor().clean(answer)
    assert not Redactor(redact_paths=["/params/arguments/a"]).clean(call)
    assert Redactor(enabled=False).clean('{"token": "abc"}')  # nothing is redacted at all


def test_a_key_after_a_hyphen_or_underscore_is_found_in_a_header_name_a_value_and_any_text():
    """`X-sk-…` is a header a peer may name; a word's start is after any character but a letter or a digit."""
    r, jwt = Redactor(), "eyJhbGciOiJIUzI1.eyJzdWIiOiIx.c2ln"
    [(name, value), (other, with_key)] = r.headers([("X-" + SK, "v"), ("X-Note", "token-" + SK)])
    assert name == "X-" + r.pseudonym(SK) and value == "v"
    assert other == "X-Note" and with_key == "token-" + r.pseudonym(SK)
    assert r.text(f"key_{jwt} x-{SK}") == f"key_{r.pseudonym(jwt)} x-{r.pseudonym(SK)}"
    named = {"kind": "http.request", "headers": [["X-" + SK, "v"]]}
    assert list(secrets_in([named])) == [(0, "/headers/0/0", "sk-key")]
    assert r.text("disk-" + SK[3:]) == "disk-" + SK[3:]  # inside a word: not a key


def test_a_header_seen_before_is_redacted_as_the_first_time():
    """The recorder's redactor keeps each (name, value) it redacted: a client's headers repeat on every request."""
    r = Redactor()
    headers = [("Authorization", "Bearer abcdefghijklmnop"), ("X-" + SK, "v"), ("Accept", "application/json")]
    first = r.headers(headers)
    assert first[0][1] == "Bearer " + r.pseudonym("abcdefghijklmnop") and first[2] == ["Accept", "application/json"]
    for n in range(5000):  # past the cache's bound: it starts again, and still answers alike
        assert r.headers([*headers, ("Date", f"{n}")]) == [*first, ["Date", f"{n}"]]
