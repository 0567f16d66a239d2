"""`mcptape bundle TAPE… -o bug.zip`: everything a maintainer needs from a bug report, in one file: the tapes, each
as JSON too, the report (Markdown and HTML), the HAR of the HTTP tapes, the findings as JSON, and a README that
says how to replay and check it. Every command that reads a tape reads the bundle as it is (tape/bundled.py).

A tape that still holds a secret (redact/scrub.py, secrets_in: a credential under a sensitive header, query parameter or key,
or a secret-shaped string anywhere) is refused, naming where, unless the tapes are redacted into the bundle
(`--redact`) or the user says the secrets may go (`--allow-secrets`)."""

from __future__ import annotations

import os
import posixpath
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import replace

from .. import __version__
from ..tape import json_form
from ..tape.bundled import TAPES
from ..tape.file import Reader


class Refused(ValueError):
    """The tapes hold secrets; the message (one line) says how many and where the first is, never what."""


def secrets(paths: list[str]) -> Iterator[tuple[str, int, str, str]]:
    """(tape, record number, JSON pointer, rule) for each secret left in the tapes."""
    from ..redact.scrub import secrets_in

    for path in paths:
        for number, pointer, rule in secrets_in(Reader(path)):
            yield path, number, pointer, rule


def _names(paths: list[str]) -> list[str]:
    """A distinct plain file name in the bundle for each tape."""
    out: list[str] = []
    for path in paths:
        stem = os.path.splitext(os.path.basename(path))[0] or "tape"
        stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem).lstrip(".") or "tape"
        name, n = stem, 1
        while name in out:
            n += 1
            name = f"{stem}-{n}"
        out.append(name)
    return out


def _copy(path: str, target: str, redactor=None) -> None:
    """A tape copied record by record, redacted on the way with a redactor (as `mcptape redact` does)."""
    from ..redact.tapes import redacted_tape
    from ..tape.file import Writer

    reader = Reader(path)
    header, items = (reader.header, reader) if redactor is None else redacted_tape(reader.header, reader, redactor)
    with Writer(target, header, "force") as writer:
        for record in items:
            writer.write(record)


def make(paths: list[str], output: str, redact: bool = False, allow_secrets: bool = False,
         force: bool = False) -> list[str]:
    """Write the bundle (as output.py writes every file); returns its file names. Raises Refused (secrets),
    TapeError (an unreadable tape) or OutputError."""
    from . import har
    from ..check import check
    from ..check import formatting
    from ..report import build, render

    if not redact and not allow_secrets:
        found = list(secrets(paths))
        if found:
            raise Refused(_where(found))
    names = _names(paths)
    with tempfile.TemporaryDirectory(prefix="mcptape-bundle-") as work:
        tapes = [os.path.join(work, f"{name}.mcptape") for name in names]
        redactor = None
        if redact:
            from ..redact.redactor import Redactor

            redactor = Redactor()
        for path, tape in zip(paths, tapes):
            _copy(path, tape, redactor)
        inside = [f"{TAPES}{name}.mcptape" for name in names]  # what the tapes are called in the bundle
        called = dict(zip(tapes, inside))
        if redact and not allow_secrets and (found := list(secrets(tapes))):
            raise Refused(_where([(called[t], n, p, r) for t, n, p, r in found], redacted=True))
        files: dict[str, Iterable[str] | str] = dict(zip(inside, tapes))
        data = build(tapes, inside)
        for name, tape in zip(names, tapes):
            reader = Reader(tape)
            files[f"json/{name}.json"] = [json_form.dumps(json_form.document(reader.header, reader), indent=1), "\n"]
        files["report.md"] = [render(data, "md")]
        files["report.html"] = [render(data, "html")]
        entries: list[dict] = []
        for tape in tapes:
            try:
                entries += har.entries(Reader(tape))
            except har.NotHttp:
                continue
        if entries:
            entries.sort(key=lambda e: e["startedDateTime"])
            files["report.har"] = [json_form.dumps({"log": {**har.document([])["log"], "entries": entries}},
                                                   indent=1), "\n"]
        findings = [replace(f, tape=called[f.tape]) for f in check(tapes)]
        files["findings.json"] = [json_form.dumps(formatting.as_json(findings, inside), indent=1), "\n"]
        files["README.md"] = [_readme(os.path.basename(output), names, data, "report.har" in files, redact)]
        _write(output, files, force)
        return list(files)


def _where(found: list[tuple[str, int, str, str]], redacted: bool = False) -> str:
    path, number, pointer, rule = found[0]
    first = f"{len(found)} secret(s), the first at {path}#{number} {pointer} ({rule})"
    if redacted:
        return f"even redacted, the tapes hold {first}; --allow-secrets bundles them anyway"
    return (f"the tapes still hold {first}; --redact redacts them into the bundle (as mcptape redact does), "
            f"--allow-secrets bundles them as they are")


def _write(output: str, files: dict, force: bool) -> None:
    from ..output import opened

    with opened(output, force) as out, zipfile.ZipFile(_Stream(out), "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            if isinstance(content, str):  # a file in the work folder
                archive.write(content, name)
            else:
                with archive.open(name, "w") as f:
                    for chunk in content:
                        f.write(chunk.encode())


class _Stream:
    """The zip written front to back, never seeking: a device such as /dev/null seeks without moving, which would
    make zipfile's offsets nonsense (the zip is the same either way)."""

    def __init__(self, out) -> None:
        self.write, self.flush = out.write, out.flush

    def tell(self) -> int:
        raise OSError("not seekable")


def _readme(bundle: str, names: list[str], data: dict, har: bool, redacted: bool) -> str:
    s = data["summary"]
    tapes = "\n".join(f"- `{TAPES}{name}.mcptape`" for name in names)
    member = posixpath.join(bundle, TAPES, f"{names[0]}.mcptape")
    return f"""# An MCP conversation, recorded by mcptape {__version__}

{s['sessions']} session(s), {s['calls']} call(s), {s['error']} error(s), {s['warning']} warning(s), {s['info']} info
finding(s), {s['edits']} edit(s) fired.{' The tapes were redacted into this bundle.' if redacted else ''}

## What is here

{tapes}
- `json/`: each tape as JSON (`mcptape import` turns it back into a tape)
- `report.md`, `report.html`: what happened, on one page (the HTML opens offline)
{'- `report.har`: the HTTP exchanges as HAR 1.2, for browser devtools and mitmproxy' + chr(10) if har else ''}\
- `findings.json`: what `mcptape check` found, with the spec clauses

## Install mcptape {__version__}, the version that made this bundle

mcptape is not on PyPI: install it from its source, on Linux or macOS with Python 3.12 or newer. In a checkout of
mcptape's source (its folder holds `pyproject.toml`), at version {__version__}:

```sh
python3 -m venv .venv && . .venv/bin/activate
pip install ./mcptape                     # the checkout's folder; or a wheel built from it: pip install mcptape-{__version__}-py3-none-any.whl
mcptape --version                         # mcptape, version {__version__}
```

## Reproduce (the bundle stays zipped)

```sh
mcptape check {bundle}                   # the findings again
mcptape report {bundle} --format html -o report.html
mcptape show {member}
mcptape replay {member} --listen 127.0.0.1:8765    # a server that answers as the recorded one did
mcptape replay {member} --edit 'expire-session at=tools/call#2'   # with a fault injected
```

Point the MCP client at the URL `replay` prints, or use `mcptape replay {member} --stdio` as its server command.
"""
