"""`mcptape export`, `report` and `bundle`: a tape in other formats, a page for people, one file for a bug report."""

from __future__ import annotations

import click

from .app import Failure, main
from .printing import json_document, tape_paths, warn_truncated, write_output


@main.command()
@click.argument("tape", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["json", "jsonl", "har", "mitm"]), required=True,
              help="json: one document; jsonl: the header line, then one record per line (`mcptape import` reads "
                   "both back); har: HAR 1.2 for browser devtools and mitmproxy (HTTP tapes); mitm: a mitmproxy "
                   "flow file for `mitmweb -r` (HTTP tapes).")
@click.option("-o", "--output", metavar="FILE", help="Write here (default: stdout).")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
def export(tape, fmt, output, force):
    """Write a tape in a format other tools read.

    \b
    Examples:
      mcptape export run.mcptape --format har -o run.har
      mcptape export run.mcptape --format mitm -o run.flows && mitmweb -r run.flows
      mcptape export run.mcptape --format json -o run.json
      mcptape export big.mcptape --format jsonl | grep tools/call
    """
    _export(tape, fmt, output, force)


def _export(tape: str, fmt: str, output: str | None, force: bool = False) -> None:
    from ..formats import har
    from ..tape import json_form
    from ..tape.file import Reader

    reader = Reader(tape)
    if fmt in ("har", "mitm"):
        try:
            if fmt == "har":
                chunks = [json_form.dumps(har.document(reader), indent=1) + "\n"]
            else:
                from io import BytesIO

                from ..formats import flowfile

                out = BytesIO()  # whole before anything is written: a stdio tape is refused first
                flowfile.write(reader, out)
                chunks = [out.getvalue()]
        except har.NotHttp as e:
            where = "a HAR" if fmt == "har" else "a mitmproxy flow file"
            raise Failure(f"{tape}: {e} for {where}; export it as json or jsonl") from None
    elif fmt == "json":  # written as it is read, as jsonl is
        chunks = json_document(reader.header, reader)
    else:
        chunks = (line + "\n" for line in json_form.lines(reader.header, reader))
    if output is None and fmt in ("json", "jsonl"):
        from ..terminal import safe_json

        chunks = map(safe_json, chunks)
    write_output(chunks, output, force)
    warn_truncated(tape, reader.truncated, reader.count, "exported")


@main.command()
@click.argument("tapes", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["md", "html", "mermaid", "json"]), default="md",
              show_default=True, help="md: GitHub Markdown with a Mermaid diagram; html: one self-contained page; "
                                      "mermaid: the diagram alone; json: the report's data.")
@click.option("-o", "--output", metavar="FILE", help="Write the report here (default: stdout).")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
def report(tapes, fmt, output, force):
    """One page that tells what happened: sessions and their life, calls with outcome and duration, statuses,
    findings with their spec clauses and whom they blame, a sequence diagram, and the messages each finding is
    about. Several tapes are one history, in the order given (as check reads them).

    \b
    Examples:
      mcptape report run.mcptape > report.md
      mcptape report run.mcptape --format html -o report.html
      mcptape report run.mcptape --format mermaid
      mcptape report bug.zip --format json
    """
    from ..report import build, chunks

    if output is not None:
        from ..output import Output

        Output(output, force)  # refused before the work, not after
    pages = chunks(build(tape_paths(tapes)), fmt)
    if output is None and fmt == "json":  # as `export` writes JSON to stdout (the pages escape tape text themselves)
        from ..terminal import safe_json

        pages = map(safe_json, pages)
    write_output(pages, output, force)


@main.command()
@click.argument("tapes", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, metavar="FILE", help="The bundle to write (a .zip).")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@click.option("--redact", is_flag=True, help="Redact the tapes into the bundle (as `mcptape redact` does).")
@click.option("--allow-secrets", is_flag=True, help="Bundle tapes that still hold secrets (unsafe; warns).")
def bundle(tapes, output, force, redact, allow_secrets):
    """One file to attach to a bug report: the tapes, each as JSON, report.md and report.html, report.har (HTTP
    tapes), findings.json and a README that says how to replay and check it. Every command that reads a tape
    reads the bundle as it is.

    A tape that still holds a secret (a credential, a secret-shaped string) is refused, naming where, unless
    --redact or --allow-secrets is given.

    \b
    Examples:
      mcptape bundle run.mcptape -o bug.zip
      mcptape bundle before.mcptape after.mcptape -o bug.zip --redact
      mcptape check bug.zip
      mcptape replay bug.zip --listen 127.0.0.1:8765
    """
    from ..formats.bundle import Refused, make
    from ..output import Output

    Output(output, force)  # refused before the work, not after
    tapes = tape_paths(tapes)
    try:
        names = make(tapes, output, redact=redact, allow_secrets=allow_secrets, force=force)
    except Refused as e:
        raise Failure(str(e)) from None
    if allow_secrets:
        click.echo(f"mcptape: warning: --allow-secrets: {output} may hold credentials; look before you share it",
                   err=True)
    from ..terminal import safe

    click.echo(safe(f"mcptape: wrote {output}: {', '.join(names)}"), err=True)
