"""`mcptape show`: a tape as a timeline, a selection of it, or one record whole."""

from __future__ import annotations

import os

import click

from .app import Failure, colour_option, main, use_colour
from .printing import json_document, warn_truncated


def _tape_and_record(tape: str, record: int | None) -> tuple[str, int | None]:
    """`TAPE#N`, as check cites a record, is TAPE with --record N (unless a file has that very name)."""
    name, sep, number = tape.rpartition("#")
    if sep and number.isdigit() and not os.path.exists(tape):
        if record is not None and record != int(number):
            raise Failure(f"{tape} names record {number} but --record says {record}: give one")
        return name, int(number)
    return tape, record


@main.command()
@click.argument("tape", metavar="TAPE[#RECORD]", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "jsonl"]), default="text", show_default=True)
@click.option("--record", "record_number", type=click.IntRange(min=0), metavar="N",
              help="Print record N whole, its message pretty-printed (as `TAPE#N`, the way check cites records).")
@click.option("--session", "sessions", multiple=True, metavar="ID",
              help="Only this session: its id, or its start as the timeline shows it (stdio#1, stateless).")
@click.option("--method", "methods", multiple=True, metavar="METHOD",
              help="Only records about this JSON-RPC method (requests, their answers and streams) or HTTP method; "
                   "wildcards: 'tools/*'.")
@click.option("--exchange", "exchanges", multiple=True, type=click.IntRange(min=0), metavar="N",
              help="Only this HTTP exchange (the ex column).")
@click.option("--status", "statuses", multiple=True, metavar="CODE",
              help="Only HTTP exchanges answered with this status (404) or class (4xx), their requests included.")
@click.option("--grep", metavar="REGEX",
              help="Only records whose JSON (as --format jsonl prints it) matches this regular expression; "
                   "(?i) ignores case.")
@click.option("--around", metavar="RECORD[:N]", help="Only the N records either side of RECORD (default 5).")
@click.option("-f", "--follow", is_flag=True,
              help="Print records as they are recorded (a tape another mcptape is writing); stops when the "
                   "recording ends, or with Ctrl-C.")
@colour_option
def show(tape, fmt, record_number, sessions, methods, exchanges, statuses, grep, around, follow, colour):
    """Print a tape: a timeline, one record whole, or the records as JSON.

    Filters combine: a record is shown when it matches every filter given; a filter given twice matches either
    value. The first column is the record number that check cites and --record, --around take.

    \b
    Examples:
      mcptape show run.mcptape
      mcptape show run.mcptape --status 4xx         # the refused requests, and their sessions
      mcptape show run.mcptape --session 1a3084d6 --method tools/call
      mcptape show run.mcptape --grep 'Session not found'
      mcptape show run.mcptape --around 26:3        # records 23 to 29
      mcptape show run.mcptape#26                   # record 26 whole, as check cites it
      mcptape show run.mcptape --record 26 --format json
      mcptape show --follow run.mcptape             # a recording as it happens; ends with it
      mcptape show big.mcptape --method 'tools/*' --format jsonl > calls.jsonl
    """
    import re

    from .. import show as timeline
    from ..tape import json_form
    from ..tape.file import Reader
    from ..terminal import safe_json

    tape, record_number = _tape_and_record(tape, record_number)
    try:
        selection = timeline.Selection(
            tuple(sessions), tuple(methods), tuple(exchanges), tuple(timeline.parse_status(s) for s in statuses),
            re.compile(grep) if grep is not None else None, timeline.parse_around(around) if around else None)
    except ValueError as e:
        raise Failure(str(e)) from None
    except re.error as e:
        raise Failure(f"--grep {grep!r}: not a regular expression: {e}") from None
    if record_number is not None and (selection or follow):
        raise Failure("--record prints one record: it takes no filters and no --follow")
    if follow and fmt == "json":
        raise Failure("--follow prints records as they come: use --format text or jsonl")
    colour = use_colour(colour)
    if follow and not os.path.exists(tape):
        click.echo(f"mcptape: waiting for {tape} to be created (Ctrl-C stops)", err=True)
    try:
        reader = Reader(tape, follow=follow)
        if record_number is not None:
            _show_record(reader, record_number, fmt, colour)
            return
        matched = 0

        def picked():
            nonlocal matched
            for row in selection.select(timeline.rows(reader.path, reader, bool(selection.methods))):
                matched += 1
                yield row

        if fmt == "text":
            click.echo(timeline.paint(timeline.HEADING, "dim", colour), color=colour)
            lines = (line for row in picked() for line in timeline.lines(row, colour))
        elif not selection:
            lines = (json_form.lines if fmt == "jsonl" else json_document)(reader.header, reader)
        else:
            lines = (json_form.lines if fmt == "jsonl" else json_document)(
                reader.header, ((row.record, row.seq) for row in picked()), numbered=True)
        if fmt != "text":
            lines = map(safe_json, lines)
        for line in lines:
            click.echo(line, color=colour, nl=fmt != "json")
        if selection and not matched:
            click.echo("mcptape: no record matches the filters", err=True)
    except KeyboardInterrupt:  # the way to stop following a recording that goes on
        return
    warn_truncated(tape, reader.truncated, reader.count, "showed")


def _show_record(reader, number: int, fmt: str, colour: bool) -> None:
    from .. import show as timeline
    from ..tape import json_form
    from ..terminal import safe_json

    for row in timeline.rows(reader.path, reader):
        if row.seq == number:
            if fmt == "text":
                for line in timeline.whole(row, colour):
                    click.echo(line, color=colour)
            else:
                click.echo(safe_json(json_form.dumps(json_form.record_to_json(row.record, row.seq),
                                                     indent=1 if fmt == "json" else None)))
            return
    torn = f" before it is torn ({reader.truncated})" if reader.truncated else ""
    raise Failure(f"{reader.path} has no record {number}: its records are 0 to {reader.count - 1}{torn}"
                  if reader.count else f"{reader.path} has no records{torn}")
