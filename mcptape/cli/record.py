"""`mcptape record`: in front of an HTTP server (mitmproxy, in process) or around a stdio server."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time

import click

from ..capture.recording import ProxyKind, Ready
from ..output import WriteMode
from .app import Failure, colour_option, main, use_colour
from .options import (
    LISTEN,
    UPSTREAM,
    check_free,
    edit_options,
    guard_options,
    make_editor,
    make_redactor,
    redact_options,
    warn_unfired,
)


@main.command(context_settings={"allow_interspersed_args": False})
@click.option("--upstream", type=UPSTREAM, metavar="URL", help="The real MCP server's URL (reverse proxy mode).")
@click.option("--listen", type=LISTEN, default="127.0.0.1:8765", show_default=True, metavar="HOST:PORT",
              help="Where clients connect; port 0 picks a free port.")
@click.option("-o", "--output", metavar="FILE",
              help="The tape to write (.mcptape). May hold {date} {time} {pid} {n}; a relative name goes into "
                   "$MCPTAPE_DIR when that is set. Default with $MCPTAPE_DIR: {date}-{time}-{n}.mcptape.")
@click.option("--append", is_flag=True, help="Add to FILE if it exists.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@click.option("--mode", type=click.Choice(ProxyKind, case_sensitive=False),
              help="reverse (default with --upstream): clients use our URL. regular: an explicit HTTP(S) proxy "
                   "for clients that can only be pointed at a proxy.")
@click.option("--record-all", is_flag=True, help="Also record bodies of non-MCP requests (OAuth, discovery…).")
@click.option("--allow-dest", "allow_dests", multiple=True, metavar="HOST[:PORT]",
              help="Regular mode: forward only to these destinations (repeatable; default: anywhere).")
@redact_options
@click.option("--no-redact", is_flag=True, help="Record everything as it is, secrets included (unsafe; warns).")
@click.option("--insecure", is_flag=True, help="Do not verify an https:// upstream's certificate.")
@click.option("--verbose", is_flag=True, help="Also print mitmproxy's own log (connections, streams) on stderr.")
@click.option("-q", "--quiet", is_flag=True,
              help="No live view (on a terminal, one line per call on stderr as it is answered; HTTP only).")
@click.option("--ready-fd", type=click.IntRange(min=3), metavar="N",
              help="For programs that start the recorder: once it listens, write one JSON line to file descriptor "
                   "N ({\"url\": …, \"mode\": …, \"listen\": …, \"tape\": …}) and close it. HTTP only.")
@colour_option
@guard_options
@edit_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD [ARGS]...]")
def record(upstream, listen, output, append, force, mode, record_all, allow_dests, redact_header, redact_path,
           keep_path, no_redact, insecure, verbose, quiet, ready_fd, colour, allow_hosts, allow_origins, edit,
           edits_file, edits_json, command):
    """Record MCP traffic between a client and a server into a tape.

    \b
    Examples:
    Reverse proxy (point the client at the printed URL):
      mcptape record --upstream http://127.0.0.1:8000/mcp --listen 127.0.0.1:8765 -o run.mcptape
    Explicit proxy (set HTTP_PROXY/HTTPS_PROXY as printed):
      mcptape record --mode regular -o run.mcptape
    A stdio server (put this in the client's config in place of the server command):
      mcptape record -o 'server-{date}-{n}.mcptape' -- npx -y @modelcontextprotocol/server-everything

    \b
    Live edits (the real server stays behind; mcptape changes what the client sees):
      mcptape record --upstream http://127.0.0.1:8000/mcp -o run.mcptape \\
        --edit 'expire-session status=401 body="Unauthorized: Session not found" at=post:3'
    The edit language: mcptape help edits

    On a terminal, each call is printed on stderr as it is answered (time, record number, session, method and
    tool, status, outcome, duration, the edits that fired on it); not with --quiet, not when stderr is not a
    terminal, and never for a stdio server, whose stderr is its own. To watch from another terminal: mcptape
    show --follow FILE.

    Secrets are redacted before anything is written: credentials in headers and query strings, values under
    sensitive keys (token, password, api_key…) and secret-shaped strings (bearer tokens, sk-… keys, JWTs…)
    in every message, stderr line and body. JSON-RPC ids, schemas, progress tokens, cursors and session ids are
    never touched. Keep a field as it is, or redact one more:

    \b
      mcptape record --upstream http://127.0.0.1:8000/mcp -o run.mcptape \\
        --keep-path /params/arguments/token_count --redact-path /result/structuredContent/email

    Stop with Ctrl-C; exchanges still open are recorded as "proxy-stopped". A stdio recording ends when the
    server exits, and exits with the server's status.
    """
    if append and force:
        raise Failure("--append and --force contradict each other; give one")
    write_mode = WriteMode.APPEND if append else WriteMode.FORCE if force else WriteMode.NEW
    redactor = make_redactor(redact_header, redact_path, keep_path, no_redact)
    if command:
        if upstream or mode:
            raise Failure("a stdio server (-- CMD) takes no --upstream or --mode")
        editor = make_editor(edits_file, edit, edits_json, stdio=True, live=True)
        _record_stdio(list(command), output, write_mode, editor, redactor)
        return
    if output is None:
        raise Failure("-o FILE is required: where should the tape go?")
    mode = mode or (ProxyKind.REVERSE if upstream else None)
    if mode is None:
        raise Failure("give --upstream URL (reverse proxy), --mode regular (HTTP proxy), or -- CMD (a stdio server)")
    if mode is ProxyKind.REVERSE and not upstream:
        raise Failure("--mode reverse needs --upstream URL")
    if mode is ProxyKind.REGULAR and upstream:
        raise Failure("--mode regular takes no --upstream: the client says where it goes")
    if mode is ProxyKind.REVERSE and allow_dests:
        raise Failure("--allow-dest is for regular mode (in reverse mode every request goes to --upstream)")
    if mode is ProxyKind.REGULAR and (allow_hosts or allow_origins):
        raise Failure("--allow-host and --allow-origin are for reverse mode (a regular proxy's Host names where "
                      "the request goes)")
    editor = make_editor(edits_file, edit, edits_json, live=True)
    live = not quiet and sys.stderr.isatty()
    _record_http(upstream, listen, output, write_mode, mode, record_all, redactor, insecure, verbose,
                 editor, use_colour(colour, err=True) if live else None,
                 {"mcptape_allow_host": list(allow_hosts), "mcptape_allow_origin": list(allow_origins),
                  "mcptape_allow_dest": list(allow_dests)}, ready_fd)


def _record_stdio(argv: list[str], output: str | None, write_mode: WriteMode, editor=None, redactor=None) -> None:
    """Stand in for a stdio server. Nothing but the server's own bytes may reach stdout."""
    from .. import TOOL
    from ..capture.stdio import StartError, StdioRecorder
    from ..tape import records
    from ..tape.file import TapeError, create_from_template

    directory = os.environ.get("MCPTAPE_DIR") or None
    if output is None and directory is None:
        raise Failure("-o FILE is required (or set MCPTAPE_DIR to record into that directory)")
    if directory and not os.path.isdir(directory):
        raise Failure(f"MCPTAPE_DIR={directory} is not a directory")
    try:
        header = records.header(time.time(), TOOL, redactor.describe() if redactor else None)
        writer = create_from_template(output or "{date}-{time}-{n}.mcptape", header, directory, write_mode)
    except TapeError as e:
        raise Failure(str(e)) from None
    with writer:
        try:
            code = StdioRecorder(argv, writer, editor, redactor).run()
        except StartError as e:
            click.echo(f"mcptape: {e}", err=True)
            raise SystemExit(e.code) from None
    warn_unfired(editor)
    if code < 0:  # die of the same signal, so the client sees exactly what the server did
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    raise SystemExit(code)


def _record_http(upstream, listen, output, write_mode, mode, record_all, redactor, insecure, verbose,
                 editor, live_colour: bool | None, allow: dict, ready_fd: int | None = None):
    """live_colour: None for no live view, else whether it is coloured. ready_fd: where a program that started
    the recorder learns its address (the lines printed for people may change wording at any time). `allow`: the
    Host, Origin and destination options (guard.py)."""
    from ..output import Output, OutputError

    host, port = listen.host, listen.port
    try:
        target = Output(output, write_mode is not WriteMode.NEW)
    except OutputError as e:
        if "already exists" in str(e):
            raise Failure(f"{output} already exists (use --append to add to it or --force to replace it)") from None
        raise
    reverse = mode is ProxyKind.REVERSE
    if reverse:
        _check_reachable(upstream.split.hostname, upstream.port, upstream)
    from ..capture.mitm import proxy

    settings, path = proxy.settings(
        host, port, output, append=write_mode is WriteMode.APPEND, force=write_mode is WriteMode.FORCE,
        record_all=record_all, insecure=insecure, allow=allow, upstream=upstream.split if reverse else None,
        upstream_port=upstream.port if reverse else None)
    check_free(host, port)

    import asyncio

    from ..capture.mitm import Recorder

    existed = target.exists
    view = None
    if live_colour is not None:
        from ..live import LiveView
        from ..tape.file import Reader

        first = sum(1 for _ in Reader(output)) if existed and write_mode is WriteMode.APPEND else 0
        view = LiveView(lambda line: click.echo(line, err=True, color=live_colour), live_colour, first)
    recorder = Recorder(watch=view.write if view is not None else None, editor=editor, redactor=redactor)

    def ready(addrs: list[tuple[str, int]]) -> None:
        bound = f"http://{proxy.url_host(host)}:{addrs[0][1]}"
        announced = Ready(f"{bound}{path or '/'}" if mode is ProxyKind.REVERSE else bound, mode, bound, output)
        if ready_fd is not None:
            _announce(ready_fd, announced)
        if mode is ProxyKind.REVERSE:
            click.echo(f"mcptape: recording {upstream} into {output}")
            click.echo(f"mcptape: point your MCP client at {announced.url}")
        else:
            ca = os.path.join(os.path.expanduser("~/.mitmproxy"), "mitmproxy-ca-cert.pem")
            click.echo(f"mcptape: recording MCP traffic into {output} through the HTTP proxy at {bound}")
            click.echo(f"mcptape: set HTTP_PROXY={bound} HTTPS_PROXY={bound} (and NO_PROXY= so loopback is proxied)")
            click.echo(f"mcptape: for https, trust {ca} (SSL_CERT_FILE, REQUESTS_CA_BUNDLE or NODE_EXTRA_CA_CERTS)")
            dests = allow.get("mcptape_allow_dest")
            click.echo(f"mcptape: it forwards only to {', '.join(dests)}" if dests else
                       "mcptape: it forwards to any host:port a client names (--allow-dest HOST[:PORT] limits it)")
        click.echo("mcptape: Ctrl-C stops", err=True)
        sys.stdout.flush()

    try:
        asyncio.run(proxy.serve(settings, recorder, ready, verbose=verbose))
    except proxy.StartupError as e:
        if not existed and os.path.exists(output) and not recorder.exchanges:
            os.remove(output)
        raise Failure(str(e)) from None
    finally:
        if view is not None:
            view.close()
    if recorder.failure:
        click.echo(f"mcptape: {output} holds the {recorder.exchanges} exchanges recorded before that "
                   f"({recorder.failure})", err=True)
    else:
        click.echo(f"mcptape: wrote {recorder.exchanges} exchanges to {output}", err=True)
    warn_unfired(recorder.editor)


def _announce(fd: int, ready: Ready) -> None:
    """One JSON line on a descriptor the parent passed, then closed: its reader sees the line, or EOF when the
    recorder failed before listening."""
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as channel:
            channel.write(json.dumps(ready.to_json()) + "\n")
    except OSError as e:
        raise Failure(f"--ready-fd {fd}: {e.strerror or e}: pass a descriptor open for writing") from None


def _check_reachable(host: str, port: int, url: str) -> None:
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise Failure(f"cannot reach upstream {url}: {reason.lower()} (is the server running?)") from None
