"""`mcptape import` and `mcptape redact`: HAR, mitmproxy flows and JSON into tapes; a tape redacted after the fact."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable

import click

from ..output import WriteMode
from .app import Failure, main
from .options import make_redactor, redact_options


@main.command(name="import")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, metavar="FILE", help="The tape to write.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
def import_(source, output, force):
    """Turn a capture into a tape: `mcptape show --format json|jsonl` output (losslessly), a mitmproxy flow file
    (`mitmdump -w`), or a HAR (browser devtools, `mcptape export --format har`). The kind is read from the file.

    A flow file or HAR goes through the recorder's own capture: MCP exchanges become records, SSE bodies are split
    into events, other traffic is kept as request line, status and headers, and credentials are redacted. What the
    capture lacks (per-event times, SSE bodies mitmproxy did not keep) is printed and written into the tape.

    \b
    Examples:
      mcptape import run.json -o run.mcptape
      mcptape import capture.flows -o capture.mcptape && mcptape check capture.mcptape
      mcptape import devtools.har -o browser.mcptape
    """
    try:
        _import(source, output, force)
    except RecursionError:  # json and mitmproxy's tnetstring parse nesting by recursion
        raise Failure(f"{source}: nested too deeply to read (Python's recursion limit, "
                      f"{sys.getrecursionlimit()}); not a capture mcptape imports") from None


def _import(source: str, output: str, force: bool) -> None:
    from ..tape import json_form
    from ..tape.file import MAGIC

    try:
        with open(source, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Failure(f"cannot read {source}: {e.strerror}") from None
    kinds = "a tape's JSON (mcptape show --format json|jsonl), a HAR or a mitmproxy flow file"
    if data.startswith(MAGIC[:7]):
        raise Failure(f"{source} is already a tape: use it as it is (mcptape show {source}); import reads {kinds}")
    from ..output import Output

    Output(output, force)  # refused before the work, not after
    if _is_flow_file(data):
        _import_capture(source, output, force, data, "flows")
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Failure(f"{source}: not UTF-8 text (byte {e.start}) and not a flow file; import reads {kinds}") from None
    if (har := _har_document(text)) is not None:
        _import_capture(source, output, force, har, "har")
        return
    try:
        header, items = json_form.parse_document(text)
    except ValueError as e:
        raise Failure(f"{source}: {e}; import reads {kinds}") from None
    _write_tape(output, force, header, items)
    click.echo(f"mcptape: wrote {len(items)} records to {output}", err=True)


def _is_flow_file(data: bytes) -> bool:
    """mitmproxy's flow files are tnetstrings: a length, a colon, then the first flow's dict."""
    length, colon, _ = data[:12].partition(b":")
    return bool(colon) and length.isdigit()


def _har_document(text: str) -> dict | None:
    """The HAR a file holds (JSON with a top-level "log" object), or None."""
    from ..wire import jsonrpc

    head = text.lstrip()[:4096]
    if not head.startswith("{") or '"log"' not in head:
        return None
    try:
        doc = jsonrpc.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("log"), dict) else None


def _write_tape(output: str, force: bool, header: dict, items: Iterable[dict]) -> int:
    """A whole tape (output.py); returns how many records it holds."""
    from ..tape.file import Writer

    count = 0
    try:
        with Writer(output, header, WriteMode.FORCE if force else WriteMode.NEW, whole=True) as writer:
            for item in items:
                writer.write(item)
                count += 1
    except OSError as e:
        raise Failure(f"cannot write {output}: {e.strerror}") from None
    return count


def _import_capture(source: str, output: str, force: bool, data: bytes | dict, kind: str) -> None:
    """A flow file's bytes or a HAR document, through the recorder's capture, into a tape."""
    from .. import TOOL
    from ..formats import imported
    from ..redact.redactor import Redactor
    from ..tape import records
    from ..terminal import safe

    redactor = Redactor()
    items = imported.Records()
    try:
        if kind == "flows":
            from io import BytesIO

            from mitmproxy import exceptions, io

            try:
                flows = list(io.FlowReader(BytesIO(data)).stream())
            except exceptions.FlowReadException as e:
                raise Failure(f"{source}: not a readable mitmproxy flow file: {e}") from None
            result = imported.from_flows(flows, items, source, redactor)
        else:
            result = imported.from_har(data, items, source, redactor)
    except imported.HarError as e:
        raise Failure(f"{source}: {e}") from None
    _write_tape(output, force, records.header(time.time(), TOOL, redactor.describe()), items)
    for line in result.missing:
        click.echo(f"mcptape: {source}: {safe(line)}", err=True)
    click.echo(f"mcptape: wrote {result.exchanges} exchanges ({len(items)} records) to {output}", err=True)


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, metavar="FILE", help="The redacted tape to write.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@redact_options
def redact(source, output, force, redact_header, redact_path, keep_path):
    """Write a redacted copy of a tape (one recorded with --no-redact, or before redaction covered bodies).

    What recording redacts by default is redacted here too, under a new pseudonym key; what is already a
    pseudonym stays as it is. The copy replays, diffs and checks like the original.

    \b
    Examples:
      mcptape redact run.mcptape -o run.redacted.mcptape
      mcptape redact run.mcptape -o shared.mcptape --redact-path /result/structuredContent/email
      mcptape check shared.mcptape --require-redacted
    """
    from ..output import Output
    from ..redact.tapes import redacted_tape
    from ..tape.file import Reader

    if os.path.exists(source) and os.path.exists(output) and os.path.samefile(source, output):
        raise Failure(f"-o {output} is the tape being read; write the redacted copy elsewhere")
    Output(output, force)  # refused before the work, not after
    redactor = make_redactor(redact_header, redact_path, keep_path)
    reader = Reader(source)
    header, redacted = redacted_tape(reader.header, reader, redactor)
    count = _write_tape(output, force, header, redacted)
    if reader.truncated:
        click.echo(f"mcptape: {source}: tape is truncated ({reader.truncated}); redacted the {count} complete "
                   f"records before it", err=True)
    click.echo(f"mcptape: wrote {count} redacted records to {output}", err=True)
