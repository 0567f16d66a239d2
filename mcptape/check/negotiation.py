"""Version negotiation between eras (2026-07-28's Backward Compatibility): a dual-era client probes with
`server/discover` (stdio), or sends a modern request first (HTTP), and reads the answer. A recognized modern error
means the server is modern: stay modern. Anything else (another error, a 400/404/405 without a modern body, no
answer) means a legacy server: fall back to `initialize`. Three findings:

- `no-fallback` (info, client): the client met a legacy server's answer and never sent `initialize`. A tape
  cannot tell a dual-era client from a 2026-only one, which rightly stops there: so it is said, not blamed.
- `fallback-on-modern-error` (warning, client): the client fell back although the answer was a modern error.
- `discover-refused` (error, server): a server the tape shows answering 2026-07-28 requests refused
  `server/discover` as a legacy server would, which sends dual-era clients back to the old era.

Judged only from what the spec says; an injected refusal is the client's to react to, never the server's fault.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..model import STATELESS, Call, Model, Observer, Seen, refusal_text
from ..tape import records
from .finding import Finding, about_call, about_record
from . import spec

MODERN_ERRORS = {-32020: "HeaderMismatch", -32021: "MissingRequiredClientCapability",
                 -32022: "UnsupportedProtocolVersion"}
LEGACY_STATUSES = (400, 404, 405)  # what the spec's HTTP detection reads as a legacy server, without a modern body
_KEPT = 10_000  # probes and handshakes remembered per check (bounded: a hostile tape may hold millions)


@dataclass
class Probe:
    finding: Finding  # where it is, as a finding would cite it (rule and message filled in later)
    modern_error: int | None  # the modern error code it got, or None: a legacy answer
    said: str  # the answer, in a few words


class Negotiation(Observer):
    kinds = frozenset({records.HTTP_RESPONSE})

    def __init__(self) -> None:
        self.probes: list[Probe] = []
        self.initialize: dict[str, list[int]] = {}  # tape -> the records where the client sent initialize
        self.modern_served: set[str] = set()  # tapes whose server answered a 2026-07-28 request (not the probe)
        self.refused_discover: list[Finding] = []

    def record(self, seen: Seen, model: Model) -> None:
        """A probe refused by HTTP status: its body says which era refused it."""
        ex, r = seen.exchange, seen.record
        request = ex.msg if ex is not None else None
        if not (isinstance(request, dict) and request.get("method") == "server/discover"):
            return None
        status = r.get("status") or 0
        if status < 400 or len(self.probes) >= _KEPT:
            return None
        code = _error_code(r.get("msg"))
        said = f"HTTP {status}" + (f" ({refusal_text(r)[:60]!r})" if refusal_text(r) else " with no body")
        where = about_record("no-fallback", "info", seen, "", spec.FALLBACK_HTTP, "server/discover",
                             request.get("id"), records.C2S)
        self._probe(where, code, said, status in LEGACY_STATUSES or code in MODERN_ERRORS)
        return None

    def call(self, call: Call, model: Model) -> None:
        if call.dir != records.C2S:
            return
        if call.method == "initialize":
            seqs = self.initialize.setdefault(call.tape, [])
            if len(seqs) < _KEPT:
                seqs.append(call.seq)
            return
        if call.method != "server/discover":
            if (call.session.transport == STATELESS and _result(call.response) and not call.injected
                    and not (call.exchange is not None and call.exchange.injected)):
                self.modern_served.add(call.tape)
            return
        if call.rejected_status is not None or len(self.probes) >= _KEPT:
            return  # refused by status: record() read it
        if _result(call.response):
            return  # a modern server: nothing to fall back from
        if call.response is None and call.exchange is not None and call.exchange.end in (None, records.PROXY_STOPPED):
            return  # the recording stopped while the probe waited: whether it timed out is not in the tape
        clause = spec.FALLBACK_HTTP if call.exchange is not None else spec.FALLBACK_STDIO
        code = _error_code(call.response)
        error = call.response.get("error") if call.response is not None else None
        message = error.get("message", "") if isinstance(error, dict) else ""
        said = "no answer" if call.response is None else f"JSON-RPC error {code} ({str(message)[:60]!r})"
        self._probe(about_call("no-fallback", "info", call, "", clause), code, said, True)

    def _probe(self, where: Finding, code: int | None, said: str, counts: bool) -> None:
        if not counts:
            return  # (an HTTP status the detection does not name: the spec says nothing of it)
        self.probes.append(Probe(where, code if code in MODERN_ERRORS else None, said))
        if code not in MODERN_ERRORS and not where.injected:
            self.refused_discover.append(where)

    def finish(self, model: Model) -> Iterator[Finding]:
        for probe in self.probes:
            f = probe.finding
            fell_back = any(seq > f.record for seq in self.initialize.get(f.tape, ()))
            if probe.modern_error is None and not fell_back:
                yield _as(f, "no-fallback", "info", f"server/discover got {probe.said}, a legacy server's answer, "
                          "and the client never sent initialize: a dual-era client falls back (a 2026-only client "
                          "rightly stops)")
            elif probe.modern_error is not None and fell_back:
                yield _as(f, "fallback-on-modern-error", "warning",
                          f"server/discover got {probe.said}, a modern error "
                          f"({MODERN_ERRORS[probe.modern_error]}), yet the client fell back to initialize: the "
                          f"server speaks 2026-07-28", spec.STAY_MODERN)
        for f in self.refused_discover:
            if f.tape in self.modern_served:
                yield _as(f, "discover-refused", "error",
                          f"the server answers 2026-07-28 requests in this tape but refused server/discover "
                          f"({next(p.said for p in self.probes if p.finding is f)}), as a legacy server would: "
                          f"dual-era clients fall back to the old era", spec.DISCOVER)


def _as(where: Finding, rule: str, severity: str, message: str, clause: str | None = None) -> Finding:
    return Finding(rule, severity, where.tape, where.session, where.dir, where.request_id, where.method, message,
                   clause or where.spec, where.record, where.t, where.injected)


def _error_code(msg: Any) -> int | None:
    error = msg.get("error") if isinstance(msg, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _result(msg: Any) -> bool:
    return isinstance(msg, dict) and "result" in msg
