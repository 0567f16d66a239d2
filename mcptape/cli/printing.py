"""Output several commands share: tape lists, JSON documents, output files, differences, truncation warnings."""

from __future__ import annotations

from collections.abc import Iterable

import click

from .app import Failure


def tape_paths(paths) -> list[str]:
    """The tapes named, a bundle standing for the tapes it holds (commands that read several tapes)."""
    from ..tape.bundled import BundleError, expand

    try:
        return expand(list(paths))
    except BundleError as e:
        raise Failure(str(e)) from None


def warn_truncated(tape: str, truncated: str | None, count: int, done: str) -> None:
    """A tape cut short (a recorder killed mid-write) is read up to its tear: say so, whatever reads it."""
    if truncated:
        from ..terminal import safe

        click.echo(f"mcptape: {safe(tape)}: tape is truncated ({truncated}); {done} the {count} complete records "
                   f"before it", err=True)


def json_document(header, items, numbered: bool = False):
    """The JSON document in pieces as the records are read (pieces, not lines: printed without newlines)."""
    from ..tape import json_form

    yield from json_form.document_text(header, items, numbered)
    yield "\n"


def write_output(chunks: Iterable[str | bytes], output: str | None, force: bool = False) -> None:
    """To -o FILE (as output.py writes every file: whole, or in place for a device or FIFO), else to stdout.
    Chunks are all text or all bytes."""
    if output is None:
        for chunk in chunks:
            click.echo(chunk, nl=False)
        return
    from ..output import opened

    chunks = iter(chunks)
    first = next(chunks, "")
    with opened(output, force, text=isinstance(first, str)) as f:
        f.write(first)
        for chunk in chunks:
            f.write(chunk)
    click.echo(f"mcptape: wrote {output}", err=True)


def print_differences(differences) -> None:
    from ..terminal import safe

    for d in differences:
        where = f" at {d.path}" if d.path else ""
        if d.kind in ("only-in-a", "only-in-b"):  # the outcome it had in the one tape that holds it
            mine, other = ("a", "b") if d.kind == "only-in-a" else ("b", "a")
            change = f": {d.a if mine == 'a' else d.b} in {mine}, no such call in {other}"
        else:
            change = "" if d.a is None and d.b is None else f": {_short(d.a)} -> {_short(d.b)}"
        click.echo(safe(f"{d.kind:20} {d.call}{where}{change}"))


def _short(value, width: int = 60) -> str:
    from ..tape import json_form

    text = value if isinstance(value, str) else json_form.dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"
