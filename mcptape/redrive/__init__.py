"""`mcptape verify`: drive a live server with a tape's client side, and say what changed.

Library use (a regression test from a real session):

    import mcptape
    result = mcptape.verify("run.mcptape", upstream="http://127.0.0.1:8000/mcp")   # or command=["python", "srv.py"]
    assert result.ok, result.report()

The client's messages go out in recorded order, each once the server messages it followed in the tape have come
back (script.py); the new conversation is written as a tape (drive.py, over_http.py, over_stdio.py) and compared
with the old one by the engine of `mcptape diff`, so the differences read the same. A redacted tape needs its
secrets back (`secrets`, pointer -> value); redacted values in the server's answers compare equal to anything
(check/diff.py).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from ..check.diff import Difference
from ..redact.pseudonym import PSEUDONYM
from ..wire import jsonrpc
from . import script as scripted


class VerifyError(Exception):
    """Nothing to compare: the tape cannot be read, a secret is missing, the server cannot be reached or started.
    The message is one line meant for a person."""


@dataclass
class Result:
    differences: list[Difference]
    missed: list[str]  # what the server never sent within the timeout, in words
    log: str | None  # the new conversation's tape, when one was kept
    calls: int  # client requests sent
    updated: str | None = None  # with update: where the old tape was kept
    notes: list[str] = field(default_factory=list)  # warnings: a secret given for no redacted value

    @property
    def ok(self) -> bool:
        return not self.differences and not self.missed

    def to_json(self) -> dict:
        """`mcptape verify --format json`'s document."""
        return {"differences": [d.to_json() for d in self.differences], "missed": self.missed, "log": self.log,
                "updated": self.updated, "summary": {"calls": self.calls, "differences": len(self.differences),
                                                     "missed": len(self.missed)}}

    def report(self) -> str:
        lines = list(self.missed)
        for d in self.differences:
            where = f" at {d.path}" if d.path else ""
            lines.append(f"{d.kind} {d.call}{where}: {d.a!r} -> {d.b!r}")
        return "\n".join(lines) or "no differences"


def verify(tape: str | os.PathLike[str], upstream: str | None = None, command: list[str] | None = None,
           ignore: list[str] | tuple[str, ...] = (), log: str | os.PathLike[str] | None = None, update: bool = False,
           timeout: float = 10.0, secrets: dict[str, str] | None = None, verify_tls: bool = True) -> Result:
    """Re-drive `upstream` (an MCP endpoint URL) or `command` (a stdio server) with the tape's client side and
    compare. Raises VerifyError when there is nothing to compare; differences are in the result."""
    return asyncio.run(averify(tape, upstream, command, ignore, log, update, timeout, secrets, verify_tls))


async def averify(tape: str | os.PathLike[str], upstream: str | None = None, command: list[str] | None = None,
                  ignore: list[str] | tuple[str, ...] = (), log: str | os.PathLike[str] | None = None,
                  update: bool = False, timeout: float = 10.0, secrets: dict[str, str] | None = None,
                  verify_tls: bool = True) -> Result:
    """The same, inside a running event loop."""
    from .. import TOOL
    from ..check.diff import diff
    from ..tape import records
    from ..tape.file import TapeError, Writer
    from ..wire import pointer
    from .drive import Unstartable
    from .over_http import HttpRun
    from .over_stdio import StdioRun

    if (upstream is None) == (not command):
        raise VerifyError("give the server to verify: --upstream URL, or -- CMD ARGS… for a stdio server (not both)")
    secrets = dict(secrets or {})
    tape = os.fspath(tape)
    try:
        for p in [*ignore, *secrets]:
            pointer.parse(p)
        script = scripted.build(tape)
    except (TapeError, ValueError) as e:
        raise VerifyError(str(e)) from None
    if not script.steps:
        raise VerifyError(f"{tape}: holds no client messages to send")
    if script.stdio != bool(command):
        raise VerifyError(f"{tape} is a {'stdio' if script.stdio else 'HTTP'} tape: give "
                          f"{'a command (-- CMD …)' if script.stdio else 'an upstream URL (--upstream URL)'}")
    missing, pseudonyms, unused = _missing_secrets(script, secrets)
    if missing:
        raise VerifyError(f"{tape} is redacted where the conversation needs the secret: {'; '.join(missing)}; "
                          f"give each with --secret POINTER=ENVVAR")

    out = os.fspath(log) if log is not None else os.path.join(tempfile.mkdtemp(prefix="mcptape-verify-"),
                                                               "verify.mcptape")
    try:
        writer = Writer(out, records.header(time.time(), TOOL), "force" if log is None else "new")
    except TapeError as e:
        raise VerifyError(str(e)) from None
    try:
        if script.stdio:
            run = StdioRun(script, writer, timeout, secrets, pseudonyms, list(command))
        else:
            run = HttpRun(script, writer, timeout, secrets, pseudonyms, upstream, verify_tls)
        try:
            await run.run()
        except Unstartable as e:
            raise VerifyError(f"{e} (is the server running?)" if not script.stdio else str(e)) from None
        finally:
            writer.close()
        try:
            differences = diff(tape, out, list(ignore))  # a redacted value matches anything (mcptape/blend.py)
        except ValueError as e:
            raise VerifyError(str(e)) from None
        sent = sum(1 for s in script.steps for m in _messages(s) if "id" in m and "method" in m)
        result = Result(differences, run.missed, out if log is not None else None, sent)
        result.notes = [f"--secret {p}: the tape holds no redacted value there; not used" for p in unused]
        if update:
            result.updated = _update(tape, out)
        return result
    finally:
        if log is None:
            shutil.rmtree(os.path.dirname(out), ignore_errors=True)


def _messages(step: scripted.Step) -> list:
    msg = step.body.get("msg")
    return [m for m in jsonrpc.messages(msg) if isinstance(m, dict)]


def _missing_secrets(script: scripted.Script, secrets: dict[str, str]) -> tuple[list[str], dict[str, str], list]:
    """Each redacted position the conversation needs and no secret fills, once, with where it is first needed;
    for each secret given, the pseudonym the tape holds in its place (the new tape gets that back); the secrets'
    pointers that name no redacted value."""
    missing: dict[str, str] = {}
    pseudonyms: dict[str, str] = {}
    unused = dict.fromkeys(secrets)
    for step, where, value in script.redacted():
        position = where if where.startswith(("/headers/", "/query/")) else _in_message(step, where)
        if position in secrets:
            unused.pop(position, None)
            pseudonyms.setdefault(secrets[position], PSEUDONYM.search(value).group())
        elif position not in missing:
            method = next((m.get("method") for m in _messages(step) if m.get("method")), step.kind)
            missing[position] = f"{position} ({method}, record {step.seq})"
    return list(missing.values()), pseudonyms, list(unused)


def _in_message(step: scripted.Step, where: str) -> str:
    """A pointer into a step's body as --secret takes it: into the message (a batch item's index dropped)."""
    if isinstance(step.body.get("msg"), list):
        return "/" + where.split("/", 2)[2]
    return where


def _update(tape: str, new: str) -> str:
    """The tape replaced by the new conversation; the old one kept beside it (run.mcptape -> run.old.mcptape,
    run.old-2.mcptape, … so an older one is never overwritten). Returns where the old one went."""
    stem, ext = os.path.splitext(tape)
    kept, n = f"{stem}.old{ext}", 1
    while os.path.exists(kept):
        n += 1
        kept = f"{stem}.old-{n}{ext}"
    os.replace(tape, kept)
    shutil.copyfile(new, tape)
    return kept
