"""Keep secrets out of tapes. Before anything is written, credentials are replaced by pseudonyms that are stable
within one recording run (same secret -> same pseudonym), so a reader still sees that two requests used the same
token without learning it: in every field a peer can fill (FIELDS: headers and query strings, names and values;
JSON-RPC messages of every record kind, keys and values, JSON inside strings; bodies that are not JSON; SSE ids,
event names and comments; status reasons, problem texts, stderr lines, URLs, a server's command line) by two kinds
of rule (docs/redaction.md):

- a value under a sensitive key (`token`, `api_key`, `clientSecret`, …; case- and separator-insensitive) is
  replaced whole;
- a secret-shaped string anywhere (bearer tokens, `sk-…` keys, JWTs, cloud, GitHub, GitLab and Slack tokens, PEM
  private keys, credentials in URLs, `password=…` assignments) is replaced where it stands.

Never touched: JSON-RPC ids, schema positions (`inputSchema`, `outputSchema`), progress tokens and pagination
cursors: they carry no credential, and replay, diff and check rely on them. Session ids and SSE event ids change
only when token-shaped, to the one pseudonym that secret gets everywhere in the run.

The pseudonym is an HMAC under a random key that lives only in memory: a tape holds no material to brute-force
a short secret with. A pseudonym stands for "some value was here": `blend` (mcptape/blend.py, beside matching)
makes a recorded pseudonym match any live value at its position (replay matching, diff). `secrets_in` finds what
is still secret-shaped in a tape.

The rooms: names.py (which header, query parameter, key or option names a credential), shapes.py (what a secret
looks like in text), pseudonym.py (what stands in its place), scrub.py (the fields a peer can fill and the one walk
over a record), argv.py (a command line's secrets), redactor.py (the Redactor the recorder holds), tapes.py (a
whole tape: redacted, or told unsafe to share).
"""
