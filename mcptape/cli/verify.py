"""`mcptape verify`: a live server re-driven from a tape, and what changed."""

from __future__ import annotations

import os

import click

from .app import Failure, exit_with, main
from .options import POINTER, SECRET, UPSTREAM
from .printing import print_differences


@main.command()
@click.argument("tape", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD ARGS…]")
@click.option("--upstream", type=UPSTREAM, metavar="URL",
              help="The live server's MCP endpoint (http:// or https://).")
@click.option("--ignore", multiple=True, metavar="POINTER", type=POINTER,
              help="Do not compare this part of every message (JSON pointer, e.g. /result/content/0/text).")
@click.option("--log", metavar="FILE", help="Write the new conversation into this tape (then `mcptape check FILE`).")
@click.option("--update", is_flag=True,
              help="Replace TAPE by the new conversation; the old one is kept beside it (run.old.mcptape).")
@click.option("--timeout", default=10.0, show_default=True, metavar="SECONDS", type=click.FloatRange(0, min_open=True),
              help="How long to wait for each answer the tape says came back before going on without it.")
@click.option("--secret", multiple=True, metavar="POINTER=ENVVAR", type=SECRET,
              help="Fill a redacted value from an environment variable: /headers/NAME, /query/NAME, or a pointer "
                   "into the message (/params/arguments/api_key).")
@click.option("--insecure", is_flag=True, help="Do not check the https upstream's certificate.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def verify(tape, command, upstream, ignore, log, update, timeout, secret, insecure, fmt):
    """Drive a live server with the client side of TAPE and say what changed: exit 0 when the new conversation
    agrees with the tape, 1 when it differs (the call and the JSON pointer are named) or an answer never came
    within --timeout, 2 when the server cannot be reached or started, or the tape cannot be read.

    \b
    Examples:
      mcptape verify run.mcptape --upstream http://127.0.0.1:8000/mcp
      mcptape verify run.mcptape --upstream http://127.0.0.1:8000/mcp --ignore /result/content/0/text --log new.mcptape
      mcptape verify stdio.mcptape -- python -m mcptape.demo.server --stdio
      API_KEY=… mcptape verify redacted.mcptape --upstream URL --secret /headers/authorization=API_KEY
    """
    from ..redrive import VerifyError
    from ..redrive import verify as run_verify
    from ..tape import json_form
    from ..terminal import safe, safe_json

    if log and os.path.exists(log):
        raise Failure(f"{log} already exists (--log writes a new tape)")
    try:
        result = run_verify(tape, upstream=upstream.url if upstream else None, command=list(command) or None,
                            ignore=list(ignore), log=log, update=update, timeout=timeout,
                            secrets={s.where: s.value for s in secret}, verify_tls=not insecure)
    except VerifyError as e:
        raise Failure(str(e)) from None
    code = exit_with(0 if result.ok or update else 1)
    for note in result.notes:
        click.echo(f"mcptape: warning: {safe(note)}", err=True)
    if fmt == "json":
        click.echo(safe_json(json_form.dumps(result.to_json(), indent=1)))
    else:
        for line in result.missed:
            click.echo(safe(line))
        print_differences(result.differences)
        verdict = "agrees with the tape" if result.ok else (
            f"{len(result.differences)} difference(s), {len(result.missed)} missing")
        click.echo(f"verify: {result.calls} call(s) sent; {verdict}")
        if result.updated:
            click.echo(f"verify: {tape} now holds the new conversation; the old one is {result.updated}")
    raise SystemExit(code)
