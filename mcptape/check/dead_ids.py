"""`dead-id-reuse`: an id the server handed out in one session (a thread, conversation or job id), sent again in a
later session or tape and refused as not found: it died with the session or process that issued it.

Issued: every server-to-client message is read for ids, wherever the server put them: results of any method
(structuredContent, content text, resource contents), notification params (a log line's data, progress, a
server's own notifications), the params of its requests, the data of an error. So an id handed out only in a log
line of a call that was then cancelled is remembered too. An id is the string value of an id-named key (`id`,
`*_id`, `*Id`, `*ID`) that has an id's shape (a UUID, a ULID, any token of 16 to 256 characters without spaces),
or a UUID in free text (`text`, `message`, a log line's string data), or an id-named key with such a value in
JSON text (a tool's structured output serialized into its text, a JSON resource). Never the protocol's own ids:
see _NOT_ID. An id is remembered with where it was issued first (tape, session, record) and the session that
issued it last, the last 20,000 to 40,000 of them (model.Recent): memory stays flat in tape size.

Refused: a client request (any method) answered with a JSON-RPC error (but "Method not found", -32601) or an
`isError` result, or met by an error-level `notifications/message` tied to it (see DeadIds._tie), whose text says
not found, unknown, expired, no such or does not exist. Then the first string of its params (or UUID in one) that
was issued in another session (or tape), and not in this one before the request, gives the finding, once per call.

The hot loop: `record` runs for every server message of a tape; most hold no id, so the walk is plain loops and
recursion over dicts and lists, rejecting every string shorter than 16 characters before anything else, and the
costlier work (regexes, the refusal's text, remembering) runs only when a candidate was found.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import LEGACY_SSE, Call, Model, Observer, Recent, Seen
from ..tape import records
from . import spec
from .finding import Finding, about_call

_C2S, _S2C = records.C2S, records.S2C

# The protocol's own ids, which this rule never takes for an application's: the protocol says how long each lives
# and what refusing it means (other rules judge JSON-RPC ids and session ids), and a client that sends one again
# does not reuse a thread or conversation the server handed out.
# - The JSON-RPC `id` at a message's top level: never read (only result, params and error data are walked); an `id`
#   deeper down (a resource's, an item's, a thread's) counts.
# - `requestId` (notifications/cancelled), `taskId` (tasks, which expire by their ttl), `elicitationId` (URL-mode
#   elicitation), `toolUseId` (sampling's tool use: the model's id, not the server's): the id-named keys of the
#   schema (2025-11-25 and the 2026 drafts).
# - `_meta` objects are skipped whole: progressToken, related task, subscription id, the 2026 protocol version live
#   there. progressToken, cursor and nextCursor are not id-named, so they are never taken anyway.
# - Session ids: the MCP session id travels in the Mcp-Session-Id header (or the legacy endpoint's query), never as
#   a body key; so `sessionId` and `session_id` keys are counted like any other (a browser, shell or database
#   session a tool opened is exactly the kind of handle that dies with a server process), and the MCP session id
#   is excluded by its value instead: a value that is the id of a session the tapes know is never remembered.
_NOT_ID = frozenset({"requestId", "taskId", "elicitationId", "toolUseId"})
_SHORTEST = 16  # an id's length: 16 to 256 characters (shorter is a count or a name, "42"; longer, a blob)
_DEEPEST = 32  # ids live near the top; a message nested deeper is not walked further (nor can it overflow the stack)
_ID_SHAPE = re.compile(r"\S{16,256}")  # without spaces
# UUIDs as whole words. A pattern that starts with one character is searched for it at C speed, where one that
# starts with a class is tried at every position: so a text is searched for a UUID's tail, from its first hyphen
# (twenty to forty times faster on prose), and only a text that has one is read for whole UUIDs. Hex digits spelled
# out: IGNORECASE makes every character cost more.
_HEX = "[0-9a-fA-F]"
_UUID_WORD = re.compile(rf"\b{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}\b")
_UUID_TAIL = re.compile(rf"-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}\b")
_UUID_HEAD = re.compile(rf"(?<!\w){_HEX}{{8}}")
_TEXT_READ = 16_384  # of a long free text (a file, a page, a table) only the start is read for ids
_JSON_ID = re.compile(r'"(id|\w*(?:_id|Id|ID))"\s*:\s*"([^"\\\s]{16,256})"')  # an id-named key in JSON text
_NOT_FOUND = re.compile(r"not found|unknown|no such|expired|does not exist", re.IGNORECASE)
_METHOD_NOT_FOUND = -32601
_ERROR_LEVELS = frozenset({"error", "critical", "alert", "emergency"})  # notifications/message levels of an error
_LOG, _PROGRESS = "notifications/message", "notifications/progress"
_PROGRESS_FIELDS = frozenset({"progressToken", "progress", "total", "message"})  # its message: free text
_ISSUED_KEPT = 20_000


def _is_id_key(key: Any) -> bool:
    """id, thread_id, conversationId, jobID: a key that names an id, and not one of the protocol's own."""
    return type(key) is str and (key == "id" or key.endswith(("_id", "Id", "ID"))) and key not in _NOT_ID


def _harvest(node: dict, out: list[str], depth: int) -> None:
    """Append to `out` the ids in an object: id-named keys with id-shaped values, ids in free text. Runs for every
    server message: plain loops, the cheapest test (a string's length) first, and the objects one level down (the
    structuredContent, content items, resource contents) read in place rather than by a call each; deeper ones by
    a call each, at most _DEEPEST calls deep."""
    for key, value in node.items():
        kind = type(value)
        if kind is str:
            if len(value) >= _SHORTEST:
                _string(key, value, out)
        elif kind is list:
            if depth < _DEEPEST:
                for item in value:
                    kind = type(item)
                    if kind is dict:
                        if len(item) == 2 and type(value := item.get("text")) is str and item.get("type") == "text":
                            if len(value) >= _SHORTEST:  # text content, the most common item: {type, text}
                                _free_text(value, out)
                            continue
                        for key, value in item.items():
                            kind = type(value)
                            if kind is str:
                                if len(value) >= _SHORTEST:
                                    _string(key, value, out)
                            elif kind is dict or kind is list:
                                _harvest({key: value}, out, depth + 1)
                    elif kind is list:
                        _harvest({"": item}, out, depth + 1)
        elif kind is dict:
            if key != "_meta" and depth < _DEEPEST:
                for key, value in value.items():  # read in place too (structuredContent): deeper, a call
                    kind = type(value)
                    if kind is str:
                        if len(value) >= _SHORTEST:
                            _string(key, value, out)
                    elif kind is dict or kind is list:
                        _harvest({key: value}, out, depth + 1)


def _string(key: Any, value: str, out: list[str]) -> None:
    """A string of 16 characters or more: free text, or an id-named key's value."""
    if key == "text" or key == "message":
        _free_text(value, out)
    elif _is_id_key(key) and _ID_SHAPE.fullmatch(value):
        out.append(value)


def _free_text(text: str, out: list[str]) -> None:
    """UUIDs in prose; id-named keys with id-shaped values in JSON text. The first _TEXT_READ characters: an id
    handed out is near the top of what the server says, and the regexes cost far more than reading the text."""
    if len(text) > _TEXT_READ:
        text = text[:_TEXT_READ]
    if "-" in text:
        _uuids(text, out)
    if '"' in text and ('d"' in text or 'D"' in text):
        for key, value in _JSON_ID.findall(text):
            if key not in _NOT_ID:
                out.append(value)


def _uuids(text: str, out: list[str]) -> None:
    """Append the UUIDs in a text (whole words)."""
    match = _UUID_TAIL.search(text)
    if match is None:
        return
    if len(text) <= 512:
        out += _UUID_WORD.findall(text)  # short: one pass over it costs less than a search per UUID
        return
    search, head = _UUID_TAIL.search, _UUID_HEAD.match
    while match is not None:
        end = match.end()
        start = match.start() - 8
        if start >= 0 and head(text, start, start + 8):
            out.append(text[start:end])
        match = search(text, end)


def _strings(value: Any, out: list[str], depth: int) -> None:
    """Every string in a value, `_meta` objects left out."""
    kind = type(value)
    if kind is str:
        out.append(value)
    elif depth >= _DEEPEST:
        return
    elif kind is dict:
        for key, item in value.items():
            if key != "_meta":
                _strings(item, out, depth + 1)
    elif kind is list:
        for item in value:
            _strings(item, out, depth + 1)


def _says_not_found(value: Any) -> bool:
    found: list[str] = []
    _strings(value, found, 0)
    return _NOT_FOUND.search(" ".join(found)) is not None


class DeadIds(Observer):
    """Seed 002: a thread or conversation id handed out by the server in one session, sent again in a later
    session (or tape) and refused as not found: the id died with the session or process that issued it."""

    kinds = frozenset({records.HTTP_RESPONSE, records.SSE_EVENT, records.STDIO_LINE})  # what carries server messages

    def __init__(self) -> None:
        # value -> [tape, session label, record, Session] where it was issued first, and [Session, tape, record]
        # where it was issued last (first in that session); the ids issued last, not all: memory stays flat in tape
        # size
        self.issued = Recent(_ISSUED_KEPT)
        self._found: list[str] = []  # one message's candidates, reused (most messages have none)
        self._refused_by_log: dict[int, Call] = {}  # id(call) -> an open call an error log refused; popped when settled

    # -- issued ----------------------------------------------------------------------------------------------------

    def record(self, seen: Seen, model: Model) -> None:
        msg = seen.msg
        if msg is None or seen.session is None:
            return None
        ex = seen.exchange
        if ex is None:
            if seen.record.get("dir") != _S2C:
                return None  # stdio: what the client wrote
        elif not ex.mcp:
            return None  # OAuth, discovery: not MCP (a registration's client_id is no thread id)
        if type(msg) is dict:
            # the most common messages, results and progress, read here without a call more
            result = msg.get("result")
            if type(result) is dict:
                out = self._found
                _harvest(result, out, 0)
                if out:
                    self._issued(seen, model, result.get("isError") and _says_not_found(result))
            elif (msg.get("method") == _PROGRESS and type(params := msg.get("params")) is dict
                  and _PROGRESS_FIELDS.issuperset(params)):  # the protocol's fields only: its message is free text
                message = params.get("message")
                if type(message) is str and len(message) >= _SHORTEST:
                    out = self._found
                    _free_text(message, out)
                    if out:
                        self._issued(seen, model)
            else:
                self._message(msg, seen, model)
        elif type(msg) is list:  # a batch
            for item in msg:
                if type(item) is dict:
                    self._message(item, seen, model)
        return None

    def _message(self, msg: dict, seen: Seen, model: Model) -> None:
        out = self._found
        if type(params := msg.get("params")) is dict:
            _harvest(params, out, 0)
            if msg.get("method") == _LOG:
                self._log(params, seen, model, out)
            if out:
                self._issued(seen, model)
        elif type(result := msg.get("result")) is dict:
            _harvest(result, out, 0)
            if out:
                self._issued(seen, model, result.get("isError") and _says_not_found(result))
        elif type(error := msg.get("error")) is dict:
            data = error.get("data")
            if type(data) is dict:
                _harvest(data, out, 0)
            elif type(data) is list:
                _harvest({"": data}, out, 0)
            if out:
                self._issued(seen, model, _says_not_found(error))

    def _issued(self, seen: Seen, model: Model, refusal: Any = False) -> None:
        """Remember the ids found in a message (self._found), unless it refuses something as not found: a refusal
        names the id it refuses, and issues none."""
        out = self._found
        if not refusal:
            self._remember(out, seen, model)
        out.clear()

    def _log(self, params: dict, seen: Seen, model: Model, out: list[str]) -> None:
        data = params.get("data")
        if type(data) is str and len(data) >= _SHORTEST:
            _free_text(data, out)
        level = params.get("level")
        if type(level) is str and level in _ERROR_LEVELS and _says_not_found(data):
            out.clear()  # a refusal, issuing nothing
            self._tie(seen, model)

    def _remember(self, values: list[str], seen: Seen, model: Model) -> None:
        if seen.record.get("injected"):
            return  # an answer mcptape made up issues nothing
        session, sessions, issued = seen.session, model.sessions, self.issued
        new, old = issued.new, issued.old  # Recent.get, without a call per id
        for value in values:
            if ("", value) in sessions:
                continue  # the MCP session id itself, echoed in a body (see _NOT_ID)
            entry = new.get(value)
            if entry is None:
                entry = old.get(value)
            if entry is None:
                issued.remember(value, [seen.tape, session.label, seen.seq, session, session, seen.tape, seen.seq])
                new, old = issued.new, issued.old  # remember may have begun a generation
            elif entry[4] is not session:  # issued again, in another session: where it was handed out last
                entry[4:] = session, seen.tape, seen.seq

    # -- refused ---------------------------------------------------------------------------------------------------

    def _tie(self, seen: Seen, model: Model) -> None:
        """An error-level log line saying not found refuses the one client request it can be tied to, if any:
        - on Streamable HTTP (sessions or 2026), the request whose POST stream carried it (a log line during a call
          goes on the call's stream); on a GET stream, nothing: the standalone stream carries what is "unrelated to
          any concurrently-running JSON-RPC request", and a resumed one does not say which POST it resumes;
        - on stdio and legacy HTTP+SSE, where every server message shares one channel, the client request in
          flight in that session (and not cancelled) when it came, if there was exactly one; with several it could
          be about any, and it refuses none.
        Sound rather than complete: a log line tied wrongly could make a finding of an unrelated call."""
        session, ex = seen.session, seen.exchange
        on_its_stream = ex is not None and session.transport != LEGACY_SSE
        if on_its_stream and ex.method != "POST":
            return
        tied = None
        for call in model.open_calls():
            if call.dir == _C2S and (call.exchange is ex if on_its_stream
                                     else call.session is session and call.cancel is None):
                if tied is not None:
                    return  # several: not tied
                tied = call
        if tied is not None:
            self._refused_by_log[id(tied)] = tied

    def call(self, call: Call, model: Model) -> list[Finding] | None:
        if call.dir != _C2S:
            return None
        by_log = self._refused_by_log
        if not (by_log and by_log.pop(id(call), None) is call):
            response = call.response
            if response is None:
                return None
            error = response.get("error")
            if error is not None:
                if not _says_not_found(error) or (type(error) is dict and error.get("code") == _METHOD_NOT_FOUND):
                    return None  # what was not found is the method, not an id
            else:
                result = response.get("result")
                if type(result) is not dict or not result.get("isError") or not _says_not_found(result):
                    return None
        return self._refused(call)

    def _refused(self, call: Call) -> list[Finding] | None:
        """The first string of the refused request's params issued in another session and not in this one (before
        this request: a server that echoes the id back while refusing it, in a log line say, has not handed it out
        here)."""
        params = call.request.get("params") if isinstance(call.request, dict) else None
        sent: list[str] = []
        _strings(params, sent, 0)
        session, issued = call.session, self.issued
        for text in sent:
            candidates = [text]
            if len(text) > 36 and "-" in text:
                _uuids(text, candidates)  # a UUID in a URI, a path, a sentence
            for value in candidates:
                entry = issued.get(value)
                if entry is not None and entry[3] is not session and not (
                        entry[4] is session and (entry[5] != call.tape or entry[6] < call.seq)):
                    return [about_call("dead-id-reuse", "warning", call,
                                       f"{value!r} was issued in session {entry[1]} (tape {entry[0]}, record "
                                       f"{entry[2]}) and refused as not found here: it died with that session",
                                       spec.DEAD_ID)]
        return None
