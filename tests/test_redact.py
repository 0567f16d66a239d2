import pytest

from mcptape.redact.redactor import Redactor


def test_credentials_become_stable_pseudonyms_and_the_rest_stays():
    r = Redactor(extra_headers=["X-Tenant"])
    headers = r.headers([("Authorization", "Bearer sk-123"), ("authorization", "Bearer sk-123"),
                         ("Cookie", "a=b"), ("X-Tenant", "acme"), ("Mcp-Session-Id", "abc"),
                         ("X-Custom-Token", "t0k"), ("WWW-Authenticate", 'Bearer realm="x"'), ("Accept", "*/*")])
    values = dict((k, v) for k, v in headers)
    assert headers[0][1].startswith("Bearer <redacted:") and "sk-123" not in headers[0][1]
    assert headers[0][1] == headers[1][1]  # same secret, same pseudonym
    assert values["Cookie"].startswith("<redacted:") and values["X-Tenant"].startswith("<redacted:")
    assert values["X-Custom-Token"].startswith("<redacted:")
    assert values["Mcp-Session-Id"] == "abc" and values["Accept"] == "*/*"
    assert values["WWW-Authenticate"] == 'Bearer realm="x"'
    query = dict(r.query([("api_key", "k1"), ("session_id", "s1"), ("access_token", "t"), ("page", "2")]))
    assert query["api_key"].startswith("<redacted:") and query["access_token"].startswith("<redacted:")
    assert query["session_id"] == "s1" and query["page"] == "2"


def test_pseudonyms_differ_between_runs_and_redaction_can_be_turned_off():
    assert Redactor().pseudonym("s") != Redactor().pseudonym("s")  # the key never leaves memory
    off = Redactor(enabled=False)
    assert off.headers([("Authorization", "Bearer x")]) == [["Authorization", "Bearer x"]]
    assert off.describe()["enabled"] is False


# -- the detector: what a tape still holds -----------------------------------------------------------------------
from mcptape.redact.pseudonym import is_pseudonym  # noqa: E402
from mcptape.redact.scrub import secrets_in  # noqa: E402
from mcptape.redact.shapes import shapes_in  # noqa: E402

GITHUB = "ghp_" + "A1b2C3d4" * 5
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


def test_secrets_in_names_record_pointer_and_rule():
    tape = [
        {"kind": "capture.start", "t": 0},
        {"kind": "http.request", "t": 1, "exchange": 0, "method": "POST", "path": "/mcp",
         "headers": [["Authorization", "Bearer abcdefghijklmnop"], ["Mcp-Session-Id", JWT]],
         "query": [["api_key", "k"], ["session_id", "s"]],
         "msg": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "n", "arguments": {"clientSecret": "x", "maxTokens": 5, "note": f"use {GITHUB}"},
                            "_meta": {"progressToken": "token-abc"}}}},
        {"kind": "stdio.stderr", "t": 2, "text": f"login with {JWT}"},
        {"kind": "stdio.line", "t": 3, "dir": "s2c", "raw": b"password=hunter22 \xff"},
    ]
    assert sorted(secrets_in(tape)) == [
        (1, "/headers/0/1", "sensitive-header"),
        (1, "/headers/1/1", "jwt"),  # a session id that is token-shaped is a secret too
        (1, "/msg/params/arguments/clientSecret", "sensitive-key"),
        (1, "/msg/params/arguments/note", "github-token"),
        (1, "/query/0/1", "sensitive-query"),
        (2, "/text", "jwt"),
        (3, "/raw", "assignment"),
    ]
    redacted = [Redactor().record(r) for r in tape]
    assert list(secrets_in(redacted)) == []


def test_pseudonyms_are_recognised_alone_and_behind_a_scheme():
    r = Redactor()
    assert is_pseudonym(r.pseudonym("x")) and is_pseudonym("Bearer " + r.pseudonym("x"))
    assert not is_pseudonym("x <redacted:0123456789ab>") and not is_pseudonym("<redacted:xyz>") and not is_pseudonym(3)


# -- what redaction never touches, whatever it holds (hypothesis) -------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mcptape.blend import blend  # noqa: E402

SECRETISH = st.sampled_from([JWT, GITHUB, "sk-" + "x" * 30, "Bearer abcdefghijklmnop", "password=hunter22",
                             "AKIAIOSFODNN7EXAMPLE", "https://u:pw@host/cb?code=abc", "xoxb-1234567890-ab"]) | st.text()
IDENT = st.integers() | SECRETISH
KEYS = st.sampled_from(["token", "apiKey", "password", "client_secret", "data", "text", "cursor", "progressToken",
                        "maxTokens", "id"]) | st.text(max_size=6)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | SECRETISH,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(ident=IDENT, token=IDENT, cursor=SECRETISH, schema=JSON, session=SECRETISH, arguments=JSON, result=JSON)
def test_redaction_never_changes_ids_schemas_progress_tokens_cursors_or_sessions(
        ident, token, cursor, schema, session, arguments, result):
    request = {"kind": "http.request", "t": 1.0, "exchange": 0, "method": "POST", "path": "/mcp", "session": session,
               "headers": [["Mcp-Session-Id", session]], "query": [["session_id", session]],
               "msg": {"jsonrpc": "2.0", "id": ident, "method": "tools/list",
                       "params": {"cursor": cursor, "arguments": arguments, "_meta": {"progressToken": token}}}}
    answer = {"kind": "sse.event", "t": 2.0, "exchange": 0,
              "msg": [{"jsonrpc": "2.0", "id": ident, "result": {
                  "tools": [{"name": "t", "inputSchema": schema, "outputSchema": schema}], "nextCursor": cursor,
                  "structuredContent": result}},
                  {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token}}]}
    r = Redactor()
    out_request, out_answer = r.record(request), r.record(answer)
    # a session id changes only when it is token-shaped, and then to one pseudonym wherever it stands
    assert out_request["session"] == out_request["headers"][0][1] == out_request["query"][0][1] == r.text(session)
    assert (out_request["session"] == session) == (not list(shapes_in(session)))
    msg = out_request["msg"]
    assert msg["id"] == ident and msg["params"]["cursor"] == cursor and msg["params"]["_meta"]["progressToken"] == token
    answered, progress = out_answer["msg"]
    assert answered["id"] == ident and answered["result"]["nextCursor"] == cursor
    assert answered["result"]["tools"][0]["inputSchema"] == schema == answered["result"]["tools"][0]["outputSchema"]
    assert progress["params"]["progressToken"] == token
    # nothing secret is left, and redacting again changes nothing
    assert list(secrets_in([out_request, out_answer])) == []
    assert r.record(out_request) == out_request and r.record(out_answer) == out_answer
    assert request["msg"]["params"]["arguments"] == arguments  # the record handed in is never changed
    # a redacted tape still matches what it was made from, and what another run sent in the secrets' places
    assert blend(out_request["msg"], request["msg"]) == out_request["msg"]
    assert blend(out_request["msg"], Redactor().record(request)["msg"]) == out_request["msg"]


def test_a_pseudonym_matches_any_value_at_its_position_and_nothing_else():
    recorded = {"arguments": {"key": "<redacted:0123456789ab>", "user": "ada", "note": "Bearer <redacted:0123456789ab> ok",
                              "pin": "<redacted:aaaaaaaaaaaa>"}}
    live = {"arguments": {"key": "real", "user": "ada", "note": "Bearer other-token ok", "pin": 1234}}
    assert blend(recorded, live) == recorded
    assert blend(recorded, {**live, "arguments": {**live["arguments"], "user": "bob"}}) != recorded
    assert blend(recorded, {"arguments": {**live["arguments"], "note": "Basic x ok"}}) != recorded  # not the same around it
    assert blend(recorded, {"arguments": {"key": "real"}}) != recorded  # a missing key is still missing
    assert blend({"a": 1}, live) is live  # nothing to blend: the live value itself


def test_keep_and_redact_paths():
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "ada@example.com"},
                                                             {"type": "text", "text": "bob@example.com"}],
                                                 "structuredContent": {"token": "abc-keep-me", "password": "p"}}}
    r = Redactor(keep_paths=["/result/structuredContent/token"], redact_paths=["/result/content/*/text"])
    out = r.json(msg)
    assert [c["text"][:10] for c in out["result"]["content"]] == ["<redacted:"] * 2
    assert out["result"]["structuredContent"] == {"token": "abc-keep-me", "password": r.pseudonym("p")}
    assert r.describe()["keep_paths"] == ["/result/structuredContent/token"]
    with pytest.raises(ValueError, match="--keep-path"):
        Redactor(keep_paths=["result"])


def test_secret_shapes_in_texts_are_replaced_where_they_stand():
    r = Redactor()
    p = r.pseudonym
    assert r.text("export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz") == f"export OPENAI_API_KEY={p('sk-proj-abcdefghijklmnopqrstuvwxyz')}"
    assert r.text("https://u:pass123@host/x?code=abc123&state=s") == f"https://u:{p('pass123')}@host/x?code={p('abc123')}&state=s"
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----"
    assert r.text(pem) == f"-----BEGIN RSA PRIVATE KEY-----{p(chr(10) + 'MIIabc' + chr(10))}-----END RSA PRIVATE KEY-----"
    for plain in ("max_tokens=100", "a tokenizer splits text", "see https://example.com/docs?page=2", "İstanbul token"):
        assert r.text(plain) == plain
    assert r.text("İstanbul password=hunter22") == f"İstanbul password={p('hunter22')}"  # lowering moves İ: the slow way
    assert r.raw(b"\xff password=hunter22") == b"\xff password=" + p("hunter22").encode()


def test_the_header_records_redaction_by_rule_names_and_import_knows_the_field():
    from mcptape.tape import records

    described = Redactor(extra_headers=["X-Tenant"]).describe()
    header = records.header(1.0, "mcptape", described)
    assert records.problem(header) is None and header["redaction"]["extra_headers"] == ["x-tenant"]
    assert set(described["rules"]) >= {"sensitive-key", "sensitive-header", "bearer", "jwt", "private-key"}
    assert records.problem({**header, "redaction": "yes"}) is not None


def test_a_stdio_servers_command_line_keeps_its_flags_and_loses_its_secrets():
    start = {"kind": "capture.start", "t": 0.0, "source": {"stdio": ["srv", "--api-key", "k3y", "--token=abcdef",
                                                                      "--port", "8000"], "cwd": "/srv"}}
    assert [(n, p) for n, p, _ in secrets_in([start])] == [(0, "/source/stdio/2"), (0, "/source/stdio/3")]
    r = Redactor()
    argv = r.record(start)["source"]["stdio"]
    assert argv == ["srv", "--api-key", r.pseudonym("k3y"), "--token=" + r.pseudonym("abcdef"), "--port", "8000"]
    assert start["source"]["stdio"][2] == "k3y" and list(secrets_in([r.record(start)])) == []
