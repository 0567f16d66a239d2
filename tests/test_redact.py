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
