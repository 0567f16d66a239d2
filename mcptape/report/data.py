"""The report's data: one pass of `check` over the tapes, with a watcher beside the rules that keeps what a reader
of the report needs (sessions and their life, each call's outcome and duration, statuses, edits), then a second
read that fetches only the records the findings are about, for their excerpts. Everything the page shows is in
this one JSON-able dict; the formats only lay it out."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..check import check
from ..facts import Outcome
from ..model import Call, Model, Observer, Seen, Session
from ..show import describe
from ..tape import json_form, records
from ..tape.file import Reader
from ..wire import jsonrpc
from .calls import CallList

FORMAT = 1
EXCERPT_CHARS = 4000  # a message longer than this is cut in an excerpt (the tape keeps it whole)
_KEPT = frozenset({records.HTTP_RESPONSE, records.END, records.EDIT, records.STDIO_EXIT})  # records counted or listed


class _Watch(Observer):
    """Sees every record (for times and statuses) and every settled call; keeps small dicts, never messages."""

    def __init__(self, called: dict[str, str]) -> None:
        self.called = called  # a bundle's tape paths -> their names in the bundle
        self.tapes: dict[str, dict] = {}
        self.calls = CallList()
        self.per_session: Counter = Counter()
        self.edits: list[dict] = []
        self.statuses: Counter = Counter()
        self.ends: Counter = Counter()
        self.exits: list[dict] = []
        self.exchanges: list[dict] = []  # refused or DELETE HTTP exchanges that carried no JSON-RPC call
        self._refused_at: dict[int, int] = {}  # an exchange refused by its status -> that response's record
        self.peers: dict[str, str] = {}
        self.sessions: list[Session] = []
        self.now = 0.0  # the time of the record being read: a call settled now was answered now
        self._tape: str | None = None  # the tape being read, and its last record's number
        self._seq = 0

    def record(self, seen: Seen, model: Model) -> None:
        # runs for every record: the common case costs a comparison or two
        t = seen.t if type(seen.t) is float else json_form.seconds(seen.t, self.now)
        if seen.tape != self._tape:
            self._end_tape()
            self._tape = seen.tape
            self.tapes[seen.tape] = {"path": seen.tape, "records": 0, "start": t, "end": t}
        self.now = t
        self._seq = seen.seq
        kind = seen.kind
        if kind not in _KEPT:
            return None
        record = seen.record
        if kind == records.HTTP_RESPONSE:
            self.statuses[str(record.get("status"))] += 1
            self._exchange(seen, record)
        elif kind == records.END:
            self.ends[str(record.get("reason"))] += 1
        elif kind == records.EDIT:
            self.edits.append({"tape": seen.tape, "record": seen.seq, "t": t, "edits": record.get("edits") or [],
                               "detail": record.get("detail"), "session": seen.session.label if seen.session else None})
        else:
            self.exits.append({"tape": seen.tape, "record": seen.seq, "code": record.get("code"),
                               "signal": record.get("signal"), "error": record.get("error")})
        return None

    def _exchange(self, seen: Seen, response: dict) -> None:
        """A GET or DELETE (no call of its own) that was refused or ended a session: a session's life and the
        findings rest on it, so the diagram draws it."""
        ex, status = seen.exchange, response.get("status")
        if ex is None or not isinstance(status, int):
            return
        if isinstance(ex.msg, (dict, list)):
            if status >= 400 and jsonrpc.kind(ex.msg) == "request":  # a call refused by status: its answer is
                self._refused_at[ex.number] = seen.seq  # this record (taken when the call settles)
            return
        if status >= 400 or ex.method == "DELETE":
            self.exchanges.append({"tape": seen.tape, "record": ex.seq, "response_record": seen.seq,
                                   "method": ex.method, "status": status, "injected": bool(response.get("injected"))})

    def _end_tape(self) -> None:
        if self._tape is not None:
            self.tapes[self._tape].update(records=self._seq + 1, end=self.now)

    def call(self, call: Call, model: Model) -> None:
        response = call.response
        outcome = f"HTTP {call.rejected_status}" if call.outcome is Outcome.REJECTED else _WORDS[call.outcome]
        error, status = None, call.exchange.status if call.exchange is not None else None
        if call.outcome is Outcome.ERROR:
            err = response.get("error")
            error = {"code": err.get("code"), "message": str(err.get("message"))[:200]} \
                if isinstance(err, dict) else {"code": None, "message": str(err)[:200]}
        refused_at = self._refused_at.pop(call.exchange.number, None) if call.exchange is not None else None
        self._peers(call, response)
        t = json_form.seconds(call.t, self.now)
        self.per_session[call.session.label] += 1
        self.calls.add({
            "tape": self.called.get(call.tape, call.tape), "session": call.session.label, "dir": call.dir, "id": call.id, "method": call.method,
            "name": _name(call.request), "record": call.seq, "t": t,
            "response_record": call.response_seq if call.response_seq is not None else refused_at,
            "duration_ms": round((self.now - t) * 1000, 3) if call.outcome.answered else None,
            "outcome": outcome, "error": error, "status": status, "progress": len(call.progress),
            "injected": call.injected or (call.exchange is not None and call.exchange.injected),
        })
        return None

    def finish(self, model: Model) -> tuple:
        self._end_tape()
        self.sessions = list(model.sessions.values())
        return ()

    def _peers(self, call: Call, response: dict | None) -> None:
        if call.method not in ("initialize", "server/discover"):
            return
        params = call.request.get("params") if isinstance(call.request, dict) else None
        result = response.get("result") if isinstance(response, dict) else None
        for side, info in (("client", params), ("server", result)):
            info = info.get(f"{side}Info") if isinstance(info, dict) else None
            if isinstance(info, dict) and side not in self.peers and isinstance(info.get("name"), str):
                self.peers[side] = " ".join(str(x) for x in (info.get("name"), info.get("version")) if x)


# How the report says an outcome (its JSON's words; a refusal says "HTTP <status>")
_WORDS = {Outcome.RESULT: "result", Outcome.TOOL_ERROR: "tool error", Outcome.ERROR: "error",
          Outcome.CANCELLED: "cancelled", Outcome.UNANSWERED: "no answer"}


def _name(request: dict | None) -> str | None:
    """What a call is about beyond its method: the tool, prompt or resource named."""
    params = request.get("params") if isinstance(request, dict) else None
    if not isinstance(params, dict):
        return None
    for key in ("name", "uri"):
        if isinstance(params.get(key), str):
            return params[key][:100]
    return None


def _session(session: Session, calls: Counter) -> dict:
    def step(transition):
        return None if transition is None else {**transition.to_json(), "t": json_form.seconds(transition.t, 0.0)}

    return {"label": session.label, "tape": session.tape, "transport": session.transport, "version": session.version,
            "opened": step(session.opened), "dead": step(session.dead), "ended": step(session.ended),
            "superseded": step(session.superseded), "refused_with": session.refused_with,
            "unknown": session.unknown, "midway": session.midway, "calls": calls.get(session.label, 0)}


def build(paths: list[str], names: list[str] | None = None) -> dict:
    """The report of tapes read as one history (as `check` reads them), each tape called by its path or by its
    name in `names`. Raises TapeError for an unreadable tape. Its "calls" is a CallList (report/calls.py): the
    calls kept in memory, with every call in its spool for the JSON report."""
    called = dict(zip(paths, names)) if names is not None else {}  # a bundle's tapes are read from a work folder,
    watch = _Watch(called)  # and called by their names in the bundle
    findings = [f.to_json() for f in check(paths, [watch])]
    def call_of(f: dict) -> tuple:
        return called.get(f["tape"], f["tape"]), f["record"], f["dir"], jsonrpc.id_key(f["request_id"])

    calls_by_where = watch.calls.where({call_of(f) for f in findings})
    wanted: dict[str, set[int]] = {}
    for f in findings:
        call = calls_by_where.get(call_of(f))
        f["call"] = None if call is None else {k: call[k] for k in ("method", "name", "outcome", "duration_ms")}
        where = [f["record"], (f.get("transition") or {}).get("record"), call and call["response_record"]]
        f["excerpt_records"] = sorted({seq for seq in where if isinstance(seq, int)})
        wanted.setdefault(f["tape"], set()).update(f["excerpt_records"])
    excerpts = _excerpts(wanted)
    for f in findings:
        f["excerpts"] = [excerpts[(f["tape"], seq)] for seq in f.pop("excerpt_records") if (f["tape"], seq) in excerpts]
    sessions = [_session(s, watch.per_session) for s in watch.sessions]
    start = min((t["start"] for t in watch.tapes.values()), default=None)
    if names is not None:
        for item in (*watch.tapes.values(), *sessions, *watch.edits, *watch.exits, *watch.exchanges, *findings):
            key = "path" if "path" in item else "tape"
            item[key] = called.get(item[key], item[key])
        paths = names
    methods = watch.calls.methods()
    return {
        "mcptape_report": FORMAT, "start": start,
        "tapes": [watch.tapes.get(p, {"path": p, "records": 0, "start": None, "end": None}) for p in paths],
        "peers": watch.peers, "sessions": sessions, "calls": watch.calls, "methods": methods,
        "statuses": dict(sorted(watch.statuses.items())), "ends": dict(sorted(watch.ends.items())),
        "exits": watch.exits, "edits": watch.edits, "exchanges": watch.exchanges, "findings": findings,
        "summary": {"tapes": len(paths), **_counts(findings), "sessions": len(sessions),
                    "calls": watch.calls.total, "edits": len(watch.edits),
                    "failed_calls": sum(m["count"] - m["outcomes"].get("result", 0) for m in methods)},
    }


def _counts(findings: list[dict]) -> dict:
    severities = Counter(f["severity"] for f in findings)
    return {"error": severities["error"], "warning": severities["warning"], "info": severities["info"],
            "rules": dict(sorted(Counter(f["rule"] for f in findings).items()))}


def _excerpts(wanted: dict[str, set[int]]) -> dict[tuple[str, int], dict]:
    """The records the findings are about, read again (only those are kept), each as a short excerpt."""
    out: dict[tuple[str, int], dict] = {}
    for path, seqs in wanted.items():
        last = max(seqs)
        for seq, record in enumerate(Reader(path)):
            if seq in seqs:
                out[(path, seq)] = excerpt(seq, record)
            if seq >= last:
                break
    return out


def excerpt(seq: int, record: dict) -> dict:
    """One record as a reader wants to see it: what kind, where, and its message as indented JSON (cut short)."""
    body: Any = record.get("msg")
    if body is not None:
        text = json_form.dumps(body, indent=2)
    elif isinstance(record.get("raw"), bytes):
        text = record["raw"][:EXCERPT_CHARS].decode("utf-8", "replace")
    else:
        # (data or text of a kind that has neither, from a stranger's tape, may be anything: text only)
        text = next((v for v in (record.get("data"), record.get("text")) if isinstance(v, str) and v), "")
    cut = len(text) > EXCERPT_CHARS
    return {"record": seq, "kind": records.kind_of(record), "dir": record.get("dir"), "t": record.get("t"),
            "what": describe(record)[0], "status": record.get("status"), "method": record.get("method"),
            "body": text[:EXCERPT_CHARS] + ("\n…" if cut else ""), "cut": cut}
