"""The edit language's reference as `mcptape edits --help` and `mcptape help edits` print it: a pip user has no
README. Each action and selector of language.py is described here (a test holds the two together)."""

from .language import LIVE_REFUSED_WHY, STDIO_ACTIONS

REFERENCE = f"""\
The edit language
  An edit is split like a shell line: an action, then key=value pairs (quote values as in a
  shell). at=SELECTOR is required; times=N|all (default 1) says on how many matching messages
  it fires. A `#` that starts a word begins a comment (in --edits FILE, one edit per line).

    expire-session status=401 body="Unauthorized: Session not found" at=post:3
    drop at=tools/call#2 times=all      # every tools/call from the 2nd on

Selectors (counted over the whole run, across sessions, as the client sent its messages)
  post:N          the Nth POST of any kind (requests, notifications, responses)
  METHOD#N        the Nth message with that method (#N defaults to 1): tools/call#2, ping
  id:X            a request with that JSON-RPC id, as the client sent it
  after:DURATION  the first message after that long since the first one (500ms, 30s, 10m, 1h)
  session:N       the first request carrying the Nth session id the client used

Actions                                     what the client gets instead
  expire-session [status=404] [body=TEXT]  from here on every request carrying this session id
                                           gets the status (default 404, the SDK's "Session not
                                           found"), until the client sends a new initialize
  restart-server [status=404] [body=TEXT]  the same for every session alive at that point
  status code=CODE [body=TEXT] [header="NAME: VALUE"]...
                                           that HTTP status (401 gets WWW-Authenticate, 429/503
                                           Retry-After: 1 unless given)
  error [code=C] [message=TEXT]            a JSON-RPC error instead of the answer (default -32603)
  drop                                     never the final response (its stream stays open)
  drop-event n=K                           the response without its Kth SSE event
  close-stream after=K                     the stream ends after K events, without the final
                                           response; a Last-Event-ID resume gets the rest
                                           (replay only)
  delay seconds=S                          the response starts S seconds late
  reset                                    the connection is aborted instead of answered
  malformed kind=truncate|not-json|wrong-id
                                           the final response cut in half, not JSON, or with
                                           another id
  duplicate                                the final response twice
  refuse-discover status=S | code=C | answer=none|exit  [body=TEXT] [message=TEXT]
                                           an older server's answer to a 2026-07-28 client's
                                           server/discover probe (at= defaults to every probe,
                                           times= to all): status=S alone has no body; with
                                           body=TEXT that body; with code=C a JSON-RPC error in
                                           it; code=C alone the error over JSON or a stdio line;
                                           answer=none no answer; answer=exit the server exits
                                           (stdio; an HTTP replay drops the connection; not live
                                           over HTTP). A 2026-only tape then derives the handshake
                                           the fallen-back client asks for (docs/negotiation.md)
  modern-only status=S | code=C  [body=TEXT] [message=TEXT]
                                           a server of 2026-07-28 only, met by an older client:
                                           GET and DELETE get 405, no session is ever minted, and
                                           initialize gets the answer given (status=S with a
                                           JSON-RPC error, -32020 unless code=C, or body=TEXT;
                                           code=C alone: the error over JSON or a stdio line)

Where each action works
  stdio (replay and live): {", ".join(STDIO_ACTIONS)}.
  HTTP: all of them; live, all but {", ".join(LIVE_REFUSED_WHY)}. A wrong edit, or one that cannot run where it is given, is refused
  with one line naming the bad part (exit 2). On a tape (replay, edits, gauntlet, the pytest marker), a method no MCP
  revision has and the tape never carried (tools/cal) is refused naming the closest, and a position past what the
  tape recorded is a warning at the start. Edits that never fired are reported at the end.

Examples
  mcptape replay run.mcptape --edit 'expire-session at=tools/call#2' --log client.mcptape
  mcptape replay run.mcptape --stdio --edit 'drop at=tools/call#1'
  mcptape replay run.mcptape --edit 'refuse-discover status=404 body="Invalid session ID"'
  mcptape replay run.mcptape --stdio --edit 'refuse-discover answer=exit'
  mcptape record --upstream http://127.0.0.1:8000/mcp -o old.mcptape --edit 'modern-only status=400'
  mcptape record --upstream http://127.0.0.1:8000/mcp -o live.mcptape --edit 'delay seconds=2 at=post:2'
  mcptape edits run.mcptape --edits faults.txt       (dry run: where each would fire)
"""
