"""`mcptape show`: a tape as a timeline, one line per message (record number, time, direction, session, exchange,
what), the records a selection picks, or one record whole.

Everything is read through the analysis model, one pass, so sessions are named the way check names them and a
tape that is still being written (`--follow`) reads the same as a finished one.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from .. import terminal
from ..facts import SessionTransition
from ..model import OPENED
from ..tape import json_form, records
from ..tape.records import Record
from ..wire import jsonrpc
from . import what
from .paint import ERROR, INJECTED, paint
from .rows import Row, rows
from .selection import Selection

ARROW = {records.C2S: "→", records.S2C: "←"}
HEADING = f"{'rec':>5}  {'time':>9}  {'':1}  {'session':<8}  {'ex':>4}  what"


def timeline(name: str, items: Iterable[Record], selection: Selection = Selection(), colour: bool = False,
             heading: bool = True) -> Iterator[str]:
    """Lines for a tape (the records a selection picks), read through the analysis model."""
    if heading:
        yield paint(HEADING, "dim", colour)
    for row in selection.select(rows(name, items, bool(selection.methods))):
        yield from lines(row, colour)


def lines(row: Row, colour: bool = False) -> list[str]:
    """The timeline's lines for one record."""
    seen, record = row.seen, row.record
    described = what.described(record)
    if row.answered and record.get("reason") == records.CLIENT_DISCONNECTED:
        described = [(described[0][0] + " (after its answer)", None)]  # the client hung up once it had it
    ex = seen.exchange
    if (seen.kind == records.HTTP_RESPONSE and ex is not None and isinstance(ex.msg, dict)
            and ex.msg.get("method") == "server/discover" and (ex.status or 0) >= 400):
        what.append(described, "  (era probe refused: a 2026-07-28 client falls back to initialize)")
    for fact in seen.notes:
        if isinstance(fact, SessionTransition):  # a step of a session's life (lifecycle.py): opened, refused, …
            changed, step = fact.session, fact.step
            status = f" {step.status}" if step.status is not None and step.kind != OPENED else ""
            by = " by an edit" if step.injected else ""
            what.append(described, f"  [session {changed.short} {step.kind}{status}{by}]")
    t = record.get("t")
    clock = f"{t - row.start:9.3f}" if isinstance(t, (int, float)) and row.start is not None else " " * 9
    direction = record.get("dir")
    arrow = paint(ARROW.get(direction, " "), direction if direction in ARROW else None, colour)
    exchange = "" if record.get("exchange") is None else terminal.safe(str(record.get("exchange")))
    session = terminal.safe(seen.session.short) if seen.session is not None else ""
    injected = record.get("injected") or seen.kind == records.EDIT
    return [f"{row.seq:>5}  {clock}  {arrow}  {session:<8}  {exchange:>4}  "
            f"{paint(what, INJECTED if injected else tone, colour)}" for what, tone in described]


_DIRECTION = {records.C2S: "→ c2s (client to server)", records.S2C: "← s2c (server to client)"}


def whole(row: Row, colour: bool = False) -> list[str]:
    """One record in full: where it sits, every field, its headers, its message pretty-printed. Ids are not
    shortened here."""
    record = row.record
    out = [paint(f"record {row.seq}: {row.kind}", ERROR if what.described(record)[-1][1] == ERROR else None,
                 colour)]

    def field(name: str, value: Any, tone: str | None = None) -> None:
        out.append(f"  {name:<16} {paint(str(value), tone, colour)}")

    t = record.get("t")
    if isinstance(t, (int, float)):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d} UTC"
        field("time", stamp + (f" (+{t - row.start:.3f}s)" if row.start is not None else ""))
    if record.get("dir") in _DIRECTION:
        field("direction", _DIRECTION[record["dir"]], record["dir"])
    if (session := row.session) is not None:
        field("session", f"{session.label} ({session.transport}{', ' + session.version if session.version else ''})")
    if record.get("exchange") is not None:
        field("exchange", record["exchange"])
    for name, value in record.items():
        if name in ("kind", "t", "dir", "session", "exchange", "headers", "msg", "raw") or value == []:
            continue
        text = value if isinstance(value, str) else json_form.dumps(value)
        field(name, text, INJECTED if name == "injected" else ERROR if name == "problem" else None)
    for fact in row.seen.notes:
        if isinstance(fact, SessionTransition):
            changed, step = fact.session, fact.step
            field("session", f"{changed.label} {step.kind}" + (f" {step.status}" if step.status is not None else "")
                  + (" by an edit" if step.injected else ""))
    if record.get("headers"):
        out.append("  headers:")
        out += [terminal.safe(f"    {name}: {value}") for name, value in record["headers"]]
    if "msg" in record:
        described = "; ".join(jsonrpc.describe(m) for m in jsonrpc.messages(record["msg"]))
        out.append(terminal.safe(f"  message: {described}"))
        out += map(terminal.safe_json, json_form.dumps(record["msg"], indent=2).splitlines())
    elif isinstance(record.get("raw"), bytes):
        out.append(f"  body ({len(record['raw'])} bytes, not JSON):")
        # split on newlines only (str.splitlines also splits at C1 and other breaks, which are shown escaped)
        out += map(terminal.safe, record["raw"].decode("utf-8", "backslashreplace").split("\n"))
    return out
