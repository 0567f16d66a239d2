from mcptape.redact import Redactor


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
from mcptape.redact import is_pseudonym, secrets_in  # noqa: E402

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
