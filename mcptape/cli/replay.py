"""`mcptape replay` and `mcptape edits`: a tape served back with edits, and the dry run of edits on a tape."""

from __future__ import annotations

import signal
import sys
import time

import click

from ..output import WriteMode
from .app import Command, Failure, main
from .options import LISTEN, PACE, POINTER, check_free, edit_options, guard_options, make_editor, warn_unfired
from .printing import warn_truncated


def _asyncio_without_ssl() -> None:
    """A replay serves plain HTTP (--listen is HOST:PORT) or stdio, never TLS, but asyncio imports the ssl module
    all the same, and OpenSSL starts with it: 3 to 5 ms of the 60-odd `mcptape replay` takes to its first answer
    (docs/benchmarks.md). A None in sys.modules makes that import fail as if this Python had been built
    without ssl, which asyncio supports; the None is taken out again at once, so whatever imports ssl later gets
    it (asyncio alone goes on without TLS, which this process never asks of it)."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    sys.modules["ssl"] = None  # type: ignore[assignment]
    try:
        import asyncio  # noqa: F401
    finally:
        del sys.modules["ssl"]


class _Serving(Command):
    """`mcptape replay`: asyncio is imported without ssl before the options are read (--pace's already needs it)."""

    def make_context(self, info_name, args, parent=None, **extra):
        _asyncio_without_ssl()
        return super().make_context(info_name, args, parent, **extra)


@main.command(cls=_Serving)
@click.argument("tape", type=click.Path(dir_okay=False))
@click.option("--listen", type=LISTEN, default="127.0.0.1:0", show_default=True, metavar="HOST:PORT",
              help="Where to serve over HTTP; port 0 picks a free port.")
@click.option("--stdio", is_flag=True, help="Serve on stdin/stdout: use this as a client's server command.")
@click.option("--log", metavar="FILE", help="Record what the client did into this tape (with --stdio, FILE may hold "
                                            "{n}: each start takes the first free number).")
@click.option("--force", is_flag=True, help="Replace the --log FILE if it exists.")
@click.option("--ignore", multiple=True, metavar="POINTER", type=POINTER,
              help="Ignore this part of requests when matching (JSON pointer, e.g. /params/arguments/now).")
@click.option("--match-meta", is_flag=True, help="Compare every params._meta key when matching (default: only those "
                                                 "with protocol meaning; docs/matching.md).")
@click.option("--pace", type=PACE, default="fast", show_default=True, help="fast, recorded, or xN: SSE event timing.")
@click.option("--strict", is_flag=True, help="Exit 1 if a request went unmatched or a recorded one unused.")
@guard_options
@edit_options
def replay(tape, listen, stdio, log, force, ignore, match_meta, pace, strict, allow_hosts, allow_origins, edit,
           edits_file, edits_json):
    """Serve a tape back as the MCP server it recorded, offline.

    \b
    Examples:
      mcptape replay run.mcptape --listen 127.0.0.1:8765
      mcptape replay run.mcptape --stdio          (as a client's server command)
      mcptape replay run.mcptape --log what-the-client-did.mcptape --strict
      mcptape replay run.mcptape --edit 'expire-session at=tools/call#2' --log client.mcptape
    """
    from ..replay.recorded import load
    from ..replay.serve import Replayer

    editor = make_editor(edits_file, edit, edits_json, stdio=stdio)
    try:
        replayer = Replayer(load(tape), list(ignore), editor, match_meta)
    except ValueError as e:
        raise Failure(str(e)) from None
    for warning in replayer.warnings:
        click.echo(f"mcptape: warning: {warning}", err=True)
    warn_truncated(tape, replayer.recording.truncated, replayer.recording.count, "replaying")
    if log and "{" not in log:
        from ..output import Output

        Output(log, force)  # refused before serving, as every output file is (output.py)
    log_mode = WriteMode.FORCE if force else WriteMode.NEW
    if stdio:
        from .. import TOOL
        from ..replay import stdio as stdio_replay
        from ..tape import records
        from ..tape.file import TapeError, create_from_template

        try:  # a client may start its server several times: `--log 'client-{n}.mcptape'` gives each its own
            writer = create_from_template(log, records.header(time.time(), TOOL), mode=log_mode) if log else None
        except TapeError as e:
            raise Failure(str(e)) from None
        code = 0
        try:
            code = stdio_replay.serve(replayer, sys.stdin.buffer, sys.stdout.buffer, writer, pace)
        except KeyboardInterrupt:
            pass
        finally:
            if writer is not None:
                writer.close()
        if code:  # an edit made the server exit on a request (refuse-discover answer=exit)
            _replay_summary(replayer, strict=False)
            sys.exit(code)
    else:
        _replay_http(tape, listen, ignore, log, log_mode, pace, replayer,
                     {"allow_hosts": allow_hosts, "allow_origins": allow_origins})
    _replay_summary(replayer, strict)


def _replay_http(tape, listen, ignore, log, log_mode, pace, replayer, allow: dict) -> None:
    import asyncio

    from ..replay import serving

    host, port = listen.host, listen.port
    check_free(host, port)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with serving(tape, host, port, tuple(ignore), log, pace, replayer, log_mode=log_mode,
                           **allow) as replay:
            click.echo(f"mcptape: replaying {tape} at {replay.url} (Ctrl-C stops)")
            sys.stdout.flush()
            await stop.wait()

    asyncio.run(main())


def _replay_summary(replayer, strict: bool) -> None:
    from ..terminal import safe

    warn_unfired(replayer.editor)
    unused = replayer.unused()
    click.echo(f"mcptape: replay done: {len(replayer.unmatched)} request(s) unmatched, {len(unused)} recorded "
               f"request(s) never used", err=True)
    for what in replayer.unmatched[:10]:
        click.echo(f"mcptape:   unmatched: {safe(what)}", err=True)
    if strict and (replayer.unmatched or unused):
        raise SystemExit(1)


def _reach(editor, tape: str) -> list[str]:
    """The edits checked against the tape before they run (edits.reach): one that cannot fire is refused."""
    from ..edits import EditError, reach
    from ..replay.recorded import load
    from ..replay.serve import sent

    try:
        return reach(editor.edits, sent(load(tape)))
    except EditError as e:
        raise Failure(str(e)) from None


class _WithEditReference(Command):
    """A command whose help ends with the whole edit language, as written (a pip user has no README)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from ..edits.reference import REFERENCE

        formatter.write("\n" + REFERENCE)


@main.command(name="edits", cls=_WithEditReference)
@click.argument("tape", type=click.Path(dir_okay=False))
@edit_options
def edits_(tape, edit, edits_file, edits_json):
    """Dry run: where each edit would fire on a recorded tape, as if its client ran again.

    \b
    Examples:
      mcptape edits run.mcptape --edit 'expire-session status=401 at=post:3'
      mcptape edits run.mcptape --edits faults.txt
    """
    from ..edits import describe, dry_run
    from ..tape import records
    from ..tape.file import Reader, TapeError
    from ..terminal import safe
    from ..wire import jsonrpc

    if not edit and not edits_file and not edits_json:
        raise Failure("give the edits to try: --edit EDIT (repeatable) or --edits FILE")
    try:
        reader = Reader(tape)
        stdio = any(records.is_stdio_line(r) for r in Reader(tape))
        editor = make_editor(edits_file, edit, edits_json, stdio=stdio)
        for warning in _reach(editor, tape):
            click.echo(f"mcptape: warning: {warning}", err=True)
        for seq, record, plan in dry_run(editor, reader):
            where = record.get("method", "") + " " if records.is_http_request(record) else ""
            what = jsonrpc.describe(record["msg"]) if isinstance(record.get("msg"), dict) else ""
            session = f"  [session {record['session'][:8]}]" if record.get("session") else ""
            click.echo(safe(f"record {seq:>6}  {where}{what}{session}"))
            for fired in plan.fired:
                click.echo(safe(f"    {fired.text}"))
            click.echo(f"    -> {describe(plan)}")
    except TapeError as e:
        raise Failure(str(e)) from None
    warn_truncated(tape, reader.truncated, reader.count, "tried the edits on")
    warn_unfired(editor)
