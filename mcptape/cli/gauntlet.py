"""`mcptape gauntlet`: a client run once per fault and position against the tape's replay."""

from __future__ import annotations

import signal

import click

from .app import Failure, exit_with, main
from .options import LIST, POINTER, VERDICTS, guard_options


@main.command()
@click.argument("tape", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CLIENT [ARGS]...")
@click.option("--faults", type=LIST, metavar="LIST",
              help="Comma-separated faults to run (default: every one that applies): expire-session, "
                   "session-not-found-401, restart-server, status-429, status-503, drop, delay, close-stream, "
                   "reset, malformed, duplicate; where the client probed (docs/negotiation.md): probe-400, "
                   "probe-400-32600, probe-400-32602, probe-404, probe-405, probe-32601, probe-silent, probe-exit.")
@click.option("--at", "at", type=LIST, metavar="LIST",
              help="Comma-separated positions, any selector of the edit language (default: each request after "
                   "the handshake), e.g. tools/call#2.")
@click.option("--timeout", default=30.0, show_default=True, type=click.FloatRange(0, min_open=True), metavar="S",
              help="Seconds each run may take; a client still running then is killed with its children (hung).")
@click.option("--max-runs", default=50, show_default=True, type=click.IntRange(min=1), metavar="N",
              help="Cap on the runs: positions past it are left out (and the scorecard says so).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), metavar="N", help="Runs at a time (default: the CPU count).")
@click.option("--stdio", is_flag=True, help="The client spawns its server from $MCPTAPE_SERVER (implied by {server}).")
@click.option("--logs", metavar="DIR", type=click.Path(file_okay=False),
              help="Keep each run's replay log and client output under DIR (default: thrown away).")
@click.option("--ignore", multiple=True, metavar="POINTER", type=POINTER,
              help="Ignore this part of requests when the replay matches them (JSON pointer, e.g. "
                   "/params/arguments/threadId), as `mcptape replay --ignore`.")
@click.option("--match-meta", is_flag=True, help="Compare every params._meta key when the replay matches requests "
                                                 "(default: only those with protocol meaning).")
@click.option("--format", "fmt", type=click.Choice(["text", "md", "json"]), default="text", show_default=True)
@click.option("--fail-on", type=VERDICTS, default="failed,hung", show_default=True, metavar="LIST",
              help="Verdicts that make the exit status 1: comma-separated from surfaced, failed, hung, "
                   "not-reached; or never.")
@guard_options
def gauntlet(tape, command, faults, at, timeout, max_runs, jobs, stdio, logs, ignore, match_meta, fmt, fail_on,
             allow_hosts, allow_origins):
    """Run a client once per fault and position against the tape's replay; score how it recovers.

    The client reaches each run's replay through {url} in its arguments (and $MCPTAPE_URL), or spawns it through
    {server}, which becomes the stdio replay command's arguments (and $MCPTAPE_SERVER, shell-quoted). The client
    first runs once with no fault (its baseline); each run is then recovered, surfaced, failed (a protocol fault the
    fault caused) or hung; `mcptape gauntlet --format md` renders on GitHub. Exit 2 when a client or replay could
    not start (error); stopped by Ctrl-C, SIGTERM or SIGHUP it prints the runs done and exits 130, 143 or 129.

    \b
    Examples:
      mcptape gauntlet run.mcptape -- python client.py {url}
      mcptape gauntlet run.mcptape --faults expire-session,drop --at tools/call#1 --timeout 5 -- python client.py {url}
      mcptape gauntlet run.mcptape --format json -j 4 -- python stdio_client.py {server}
    """
    from ..gauntlet import Gauntlet, Stopped, scorecard
    from ..tape.file import TapeError

    if not command:
        raise Failure("give the client command after --, with {url} (or {server}) where the replay goes, e.g. "
                      "mcptape gauntlet run.mcptape -- python client.py {url}")
    try:
        runner = Gauntlet(tape, list(command), faults, at, timeout, max_runs, stdio or None, logs,
                          list(ignore), match_meta, {"allow_hosts": allow_hosts, "allow_origins": allow_origins})
    except TapeError as e:
        raise Failure(str(e)) from None
    except ValueError as e:  # an unknown fault, a bad selector (EditError is one)
        raise Failure(str(e)) from None
    for warning in runner.warnings:
        click.echo(f"mcptape: warning: {warning}", err=True)
    if not runner.stdio and not any("{url}" in arg for arg in command):
        click.echo("mcptape: note: the client command has no {url}: it must read $MCPTAPE_URL", err=True)
    stopped_by: list[int] = []

    def stop(signum, frame) -> None:  # the first signal stops the runs; the scorecard of those done still prints
        if not stopped_by:
            stopped_by.append(128 + signum)
            raise Stopped(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        result = runner.run(jobs)
    except Stopped:  # between the runs and the scorecard: nothing finished to show
        result = None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if result is None:
        raise SystemExit(stopped_by[0] if stopped_by else 130)
    code = exit_with(stopped_by[0] if stopped_by else 2 if result.errors else 1 if result.failing(fail_on) else 0)
    try:
        click.echo(scorecard.FORMATS[fmt](result, fail_on), nl=False)
        if result.errors:
            click.echo(f"mcptape: {len(result.errors)} run(s) could not be judged: {result.errors[0].why}", err=True)
    except OSError:
        pass  # the terminal is gone (SIGHUP): the exit status still says how it ended
    raise SystemExit(code)
