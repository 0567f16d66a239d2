"""The `mcptape` command. Each command parses its options, calls one layer below, and prints.

Exit codes: 0 clean, 1 findings or differences, 2 bad usage or unreadable input. Errors are one line; `--debug`
shows the traceback instead.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from collections.abc import Iterable
from urllib.parse import urlsplit

import click

from . import __version__


class Failure(click.ClickException):
    """Bad usage or unreadable input: one line on stderr, exit 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        from .terminal import safe

        click.echo(f"mcptape: {safe(self.message)}", err=True)


class _Group(click.Group):
    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command's first sentence whole, wrapped, where click would cut it at the line's end."""
        rows = [(name, self.get_command(ctx, name).get_short_help_str(limit=1000)) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl([row for row in rows if not self.get_command(ctx, row[0]).hidden])

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # click's own three lines (usage, try --help, error) as our one
            command = e.ctx.command_path if e.ctx else "mcptape"
            raise Failure(f"{e.format_message().rstrip('.')}, in {command}: see {command} --help") from None
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit):
            raise
        except BrokenPipeError:
            # `mcptape check tape | head -1`: the reader left, nothing more to say; but the exit code is still the
            # one the findings call for (a pipeline with pipefail reads it). Later writes (the interpreter's own
            # flush at exit) go nowhere instead of failing again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit((ctx.obj or {}).get("exit", 0))
        except Exception as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            from .output import OutputError
            from .tape.file import OPENED, TapeError

            if isinstance(e, (TapeError, OutputError)):
                raise Failure(str(e)) from None
            if isinstance(e, (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError)):
                from .tape.records import first_problem

                if found := first_problem(list(OPENED)):  # a stranger's tape broke what its format promises
                    raise Failure(f"{found}; this tape was not written by mcptape as it is") from None
            raise Failure(f"internal error: {type(e).__name__}: {e} (run with --debug for the traceback)") from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcptape")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Record, replay, edit and check MCP (Model Context Protocol) conversations.

    \b
    Example:
      mcptape record --upstream http://127.0.0.1:8000/mcp -o run.mcptape
      mcptape show run.mcptape
    """
    ctx.ensure_object(dict)["debug"] = debug


def _exit_with(code: int) -> int:
    """The exit code a command's results call for, set before it prints them: a reader that leaves early (a
    broken pipe) does not change it."""
    click.get_current_context().find_root().ensure_object(dict)["exit"] = code
    return code


def _colour_option(command):
    return click.option("--color/--no-color", "colour", default=None,
                        help="Colour the output (default: on a terminal, unless NO_COLOR is set).")(command)


def _colour(option: bool | None, err: bool = False) -> bool:
    """Whether to colour: as the option says; else on a terminal, unless NO_COLOR is set (to anything non-empty,
    https://no-color.org)."""
    if option is not None:
        return option
    return not os.environ.get("NO_COLOR") and click.get_text_stream("stderr" if err else "stdout").isatty()


# -- record -------------------------------------------------------------------------------------------------------


def _edit_options(command):
    command = click.option("--edits", "edits_file", metavar="FILE", type=click.Path(dir_okay=False),
                           help="Read edits from FILE, one per line (# comments).")(command)
    return click.option("--edit", multiple=True, metavar="EDIT",
                        help="Inject a fault, e.g. 'expire-session at=tools/call#2' (repeatable; the language: "
                             "mcptape help edits).")(command)


def _redact_options(command):
    command = click.option("--keep-path", multiple=True, metavar="POINTER",
                           help="Never redact this part of a message (JSON pointer, * for any one step, "
                                "e.g. /params/arguments/token_count; repeatable).")(command)
    command = click.option("--redact-path", multiple=True, metavar="POINTER",
                           help="Also redact this part of every message (JSON pointer, * for any one step, "
                                "e.g. /result/content/*/text; repeatable).")(command)
    return click.option("--redact-header", multiple=True, metavar="NAME",
                        help="Also redact this header (repeatable).")(command)


def _guard_options(command):
    command = click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
                           help="Also accept requests from this Origin (e.g. https://app.example:8443, or null); "
                                "loopback origins always are (repeatable).")(command)
    return click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME[:PORT]",
                        help="Also accept this Host (any port unless given); loopback names and the listen "
                             "address always are. Others get 421 (DNS rebinding; repeatable).")(command)


def _redactor(redact_header, redact_path, keep_path, no_redact=False):
    from .redact import Redactor

    try:
        redactor = Redactor(redact_header, not no_redact, keep_path, redact_path)
    except ValueError as e:
        raise Failure(str(e)) from None
    if no_redact:
        click.echo("mcptape: warning: --no-redact: secrets (credentials, tokens, keys in messages) will be written "
                   "into the tape as they are; do not share it", err=True)
    return redactor


def _editor(edit: tuple[str, ...], edits_file: str | None, stdio: bool = False, live: bool = False):
    """The edits given, parsed and checked against where they will run; None when there are none."""
    if not edit and not edits_file:
        return None
    from .edits import EditError, Editor, check_transport, parse, parse_file

    try:
        edits = (parse_file(edits_file) if edits_file else []) + [parse(e) for e in edit]
        check_transport(edits, stdio=stdio, live=live)
    except EditError as e:
        raise Failure(str(e)) from None
    return Editor(edits)


def _reach(editor, tape: str) -> list[str]:
    """The edits checked against the tape before they run (edits.reach): one that cannot fire is refused."""
    from .edits import EditError, reach
    from .replay.recorded import load
    from .replay.serve import sent

    try:
        return reach(editor.edits, sent(load(tape)))
    except EditError as e:
        raise Failure(str(e)) from None


def _warn_unfired(editor) -> None:
    for warning in editor.unfired() if editor is not None else []:
        click.echo(f"mcptape: warning: {warning}", err=True)


def _parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise Failure(f"--listen {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765 (port 0 picks a free one)")
    return host.strip("[]") or "127.0.0.1", int(port)


def _parse_upstream(url: str):
    split = urlsplit(url)
    if split.scheme not in ("http", "https") or not split.hostname:
        raise Failure(f"--upstream {url!r}: expected an http:// or https:// URL, e.g. http://127.0.0.1:8000/mcp")
    try:
        port = split.port or (443 if split.scheme == "https" else 80)
    except ValueError:
        raise Failure(f"--upstream {url!r}: the port is not a number from 0 to 65535") from None
    return split, port


def _check_reachable(host: str, port: int, url: str) -> None:
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise Failure(f"cannot reach upstream {url}: {reason.lower()} (is the server running?)") from None


def _check_free(host: str, port: int) -> None:
    """Fail early and plainly on a busy port, before a tape is created (mitmproxy re-checks for real)."""
    if port == 0:
        return
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as e:
        if e.errno == 98:
            raise Failure(f"{host}:{port} is already in use (pick another --listen port, or port 0 for a free one)")
        raise Failure(f"cannot listen on {host}:{port}: {e.strerror}") from None


def _host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@main.command(context_settings={"allow_interspersed_args": False})
@click.option("--upstream", metavar="URL", help="The real MCP server's URL (reverse proxy mode).")
@click.option("--listen", default="127.0.0.1:8765", show_default=True, metavar="HOST:PORT",
              help="Where clients connect; port 0 picks a free port.")
@click.option("-o", "--output", metavar="FILE",
              help="The tape to write (.mcptape). May hold {date} {time} {pid} {n}; a relative name goes into "
                   "$MCPTAPE_DIR when that is set. Default with $MCPTAPE_DIR: {date}-{time}-{n}.mcptape.")
@click.option("--append", is_flag=True, help="Add to FILE if it exists.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@click.option("--mode", type=click.Choice(["reverse", "regular"]),
              help="reverse (default with --upstream): clients use our URL. regular: an explicit HTTP(S) proxy "
                   "for clients that can only be pointed at a proxy.")
@click.option("--record-all", is_flag=True, help="Also record bodies of non-MCP requests (OAuth, discovery…).")
@click.option("--allow-dest", "allow_dests", multiple=True, metavar="HOST[:PORT]",
              help="Regular mode: forward only to these destinations (repeatable; default: anywhere).")
@_redact_options
@click.option("--no-redact", is_flag=True, help="Record everything as it is, secrets included (unsafe; warns).")
@click.option("--insecure", is_flag=True, help="Do not verify an https:// upstream's certificate.")
@click.option("--verbose", is_flag=True, help="Also print mitmproxy's own log (connections, streams) on stderr.")
@click.option("-q", "--quiet", is_flag=True,
              help="No live view (on a terminal, one line per call on stderr as it is answered; HTTP only).")
@click.option("--ready-fd", type=click.IntRange(min=3), metavar="N",
              help="For programs that start the recorder: once it listens, write one JSON line to file descriptor "
                   "N ({\"url\": …, \"mode\": …, \"listen\": …, \"tape\": …}) and close it. HTTP only.")
@_colour_option
@_guard_options
@_edit_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD [ARGS]...]")
def record(upstream, listen, output, append, force, mode, record_all, allow_dests, redact_header, redact_path,
           keep_path, no_redact, insecure, verbose, quiet, ready_fd, colour, allow_hosts, allow_origins, edit,
           edits_file, command):
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
    write_mode = "append" if append else "force" if force else "new"
    redactor = _redactor(redact_header, redact_path, keep_path, no_redact)
    if command:
        if upstream or mode:
            raise Failure("a stdio server (-- CMD) takes no --upstream or --mode")
        _record_stdio(list(command), output, write_mode, _editor(edit, edits_file, stdio=True, live=True), redactor)
        return
    if output is None:
        raise Failure("-o FILE is required: where should the tape go?")
    mode = mode or ("reverse" if upstream else None)
    if mode is None:
        raise Failure("give --upstream URL (reverse proxy), --mode regular (HTTP proxy), or -- CMD (a stdio server)")
    if mode == "reverse" and not upstream:
        raise Failure("--mode reverse needs --upstream URL")
    if mode == "regular" and upstream:
        raise Failure("--mode regular takes no --upstream: the client says where it goes")
    if mode == "reverse" and allow_dests:
        raise Failure("--allow-dest is for regular mode (in reverse mode every request goes to --upstream)")
    if mode == "regular" and (allow_hosts or allow_origins):
        raise Failure("--allow-host and --allow-origin are for reverse mode (a regular proxy's Host names where "
                      "the request goes)")
    editor = _editor(edit, edits_file, live=True)
    live = not quiet and click.get_text_stream("stderr").isatty()
    _record_http(upstream, listen, output, write_mode, mode, record_all, redactor, insecure, verbose,
                 [e.text for e in editor.edits] if editor else [], _colour(colour, err=True) if live else None,
                 {"mcptape_allow_host": list(allow_hosts), "mcptape_allow_origin": list(allow_origins),
                  "mcptape_allow_dest": list(allow_dests)}, ready_fd)


def _record_stdio(argv: list[str], output: str | None, write_mode: str, editor=None, redactor=None) -> None:
    """Stand in for a stdio server. Nothing but the server's own bytes may reach stdout."""
    from . import TOOL
    from .capture.stdio import StartError, StdioRecorder
    from .tape import records
    from .tape.file import TapeError, create_from_template

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
    _warn_unfired(editor)
    if code < 0:  # die of the same signal, so the client sees exactly what the server did
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    raise SystemExit(code)


def _record_http(upstream, listen, output, write_mode, mode, record_all, redactor, insecure, verbose,
                 edits: list[str], live_colour: bool | None, allow: dict, ready_fd: int | None = None):
    """live_colour: None for no live view, else whether it is coloured. ready_fd: where a program that started
    the recorder learns its address (the lines printed for people may change wording at any time). `allow`: the
    Host, Origin and destination options (guard.py)."""
    from .output import Output, OutputError

    host, port = _parse_listen(listen)
    try:
        target = Output(output, write_mode != "new")
    except OutputError as e:
        if "already exists" in str(e):
            raise Failure(f"{output} already exists (use --append to add to it or --force to replace it)") from None
        raise
    settings: dict = {
        "listen_host": host, "listen_port": port, "mcptape_tape": output, "mcptape_append": write_mode == "append",
        "mcptape_force": write_mode == "force", "mcptape_redact_header": sorted(redactor.extra_headers),
        "mcptape_no_redact": not redactor.enabled, "mcptape_redact_path": redactor.redact_paths,
        "mcptape_keep_path": redactor.keep_paths, "mcptape_record_all": record_all, "ssl_insecure": insecure,
        "mcptape_edit": edits, **allow,
    }
    path = ""
    if mode == "reverse":
        split, up_port = _parse_upstream(upstream)
        _check_reachable(split.hostname, up_port, upstream)
        settings["mode"] = [f"reverse:{split.scheme}://{_host_for_url(split.hostname)}:{up_port}"]
        # the request is read (and recorded) before the upstream is connected: if it is down, the tape still holds
        # what the client asked, with an upstream-unreachable end
        settings["connection_strategy"] = "lazy"
        path = split.path + (f"?{split.query}" if split.query else "")
        if split.path not in ("", "/"):
            settings["mcptape_endpoint"] = [split.path]
    else:
        settings["mode"] = ["regular"]
    _check_free(host, port)

    import asyncio

    from .capture import proxy
    from .capture.mitm import Recorder

    existed = target.exists
    view = None
    if live_colour is not None:
        from .live import LiveView
        from .tape.file import Reader

        first = sum(1 for _ in Reader(output)) if existed and write_mode == "append" else 0
        view = LiveView(lambda line: click.echo(line, err=True, color=live_colour), live_colour, first)
    recorder = Recorder(watch=view.write if view is not None else None)

    def ready(addrs: list[tuple[str, int]]) -> None:
        bound = f"http://{_host_for_url(host)}:{addrs[0][1]}"
        if ready_fd is not None:
            _announce(ready_fd, {"url": f"{bound}{path or '/'}" if mode == "reverse" else bound, "mode": mode,
                                 "listen": bound, "tape": output})
        if mode == "reverse":
            click.echo(f"mcptape: recording {upstream} into {output}")
            click.echo(f"mcptape: point your MCP client at {bound}{path or '/'}")
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
    _warn_unfired(recorder.editor)


def _announce(fd: int, ready: dict) -> None:
    """One JSON line on a descriptor the parent passed, then closed: its reader sees the line, or EOF when the
    recorder failed before listening."""
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as channel:
            channel.write(json.dumps(ready) + "\n")
    except OSError as e:
        raise Failure(f"--ready-fd {fd}: {e.strerror or e}: pass a descriptor open for writing") from None


# -- show / import / addons ---------------------------------------------------------------------------------------


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
@_colour_option
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

    from . import show as timeline
    from .tape import json_form
    from .tape.file import Reader
    from .terminal import safe_json

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
    colour = _colour(colour)
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
            lines = (json_form.lines if fmt == "jsonl" else _document)(reader.header, reader)
        else:
            lines = (json_form.lines if fmt == "jsonl" else _document)(
                reader.header, ((row.record, row.seq) for row in picked()), numbered=True)
        if fmt != "text":
            lines = map(safe_json, lines)
        for line in lines:
            click.echo(line, color=colour, nl=fmt != "json")
        if selection and not matched:
            click.echo("mcptape: no record matches the filters", err=True)
    except KeyboardInterrupt:  # the way to stop following a recording that goes on
        return
    _warn_truncated(tape, reader.truncated, reader.count, "showed")


def _warn_truncated(tape: str, truncated: str | None, count: int, done: str) -> None:
    """A tape cut short (a recorder killed mid-write) is read up to its tear: say so, whatever reads it."""
    if truncated:
        from .terminal import safe

        click.echo(f"mcptape: {safe(tape)}: tape is truncated ({truncated}); {done} the {count} complete records "
                   f"before it", err=True)


def _document(header, items, numbered: bool = False):
    """The JSON document in pieces as the records are read (pieces, not lines: printed without newlines)."""
    from .tape import json_form

    yield from json_form.document_text(header, items, numbered)
    yield "\n"


def _show_record(reader, number: int, fmt: str, colour: bool) -> None:
    from . import show as timeline
    from .tape import json_form
    from .terminal import safe_json

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
    from .tape import json_form
    from .tape.file import Reader

    from . import har

    reader = Reader(tape)
    if fmt in ("har", "mitm"):
        try:
            if fmt == "har":
                chunks = [json_form.dumps(har.document(reader), indent=1) + "\n"]
            else:
                from io import BytesIO

                from . import flowfile

                out = BytesIO()  # whole before anything is written: a stdio tape is refused first
                flowfile.write(reader, out)
                chunks = [out.getvalue()]
        except har.NotHttp as e:
            where = "a HAR" if fmt == "har" else "a mitmproxy flow file"
            raise Failure(f"{tape}: {e} for {where}; export it as json or jsonl") from None
    elif fmt == "json":  # written as it is read, as jsonl is
        chunks = _document(reader.header, reader)
    else:
        chunks = (line + "\n" for line in json_form.lines(reader.header, reader))
    if output is None and fmt in ("json", "jsonl"):
        from .terminal import safe_json

        chunks = map(safe_json, chunks)
    _write_output(chunks, output, force)
    _warn_truncated(tape, reader.truncated, reader.count, "exported")




@main.command()
@click.argument("tapes", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "junit"]), default="text",
              show_default=True, help="junit: one test case per requirement per tape (implies --requirements).")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default=None,
              help="Exit 1 when a finding is at or above this severity  [default: error, or fail-on in the "
                   "project's settings]")
@click.option("--requirements", is_flag=True,
              help="A verdict per requirement per tape: fail, warn, pass, not-observed, not-applicable.")
@click.option("--baseline", metavar="FILE", help="Findings this baseline holds do not fail the run.")
@click.option("--write-baseline", metavar="FILE", help="Write the findings into FILE as the baseline, and exit 0.")
@click.option("--require-redacted", is_flag=True,
              help="Exit 1 when a tape was recorded without redaction or still holds a secret (named by record "
                   "and JSON pointer).")
@_colour_option
def check(tapes, fmt, fail_on, requirements, baseline, write_baseline, require_redacted, colour):
    """Flag protocol faults in tapes, each with the spec clause it rests on.

    Several tapes are checked together as one history, in the order given. Severities per rule, fail-on and the
    baseline can be set in [tool.mcptape] of pyproject.toml or in mcptape.toml (docs/rules.md).

    \b
    Examples:
      mcptape check run.mcptape
      mcptape check yesterday.mcptape today.mcptape --format json
      mcptape check run.mcptape --format sarif > mcptape.sarif
      mcptape check run.mcptape --requirements          # the table: a verdict per requirement
      mcptape check run.mcptape --format junit > mcptape.xml
      mcptape check *.mcptape --write-baseline base.json && mcptape check *.mcptape --baseline base.json
      mcptape check run.mcptape --require-redacted     # before attaching it to a bug report
    """
    from .check import at_or_above, config, run
    from .check import baseline as baselines
    from .check import report
    from .terminal import safe, safe_json

    tapes = _tapes(tapes)
    try:
        settings = config.load()
        outcome = run(tapes, requirements or fmt == "junit", settings,
                      None if write_baseline else baseline or settings.baseline)
    except (config.ConfigError, baselines.BaselineError) as e:
        raise Failure(str(e)) from None
    findings = outcome.findings
    if write_baseline:
        _write_output([baselines.dumps(findings)], write_baseline)
        raise SystemExit(_exit_with(0))
    fail_on = fail_on or settings.fail_on or "error"
    unredacted = [(tape, *problem) for tape in tapes for problem in _unredacted(tape)] if require_redacted else []
    failed = unredacted or any(at_or_above(f.severity, fail_on) for f in outcome.failing)
    code = _exit_with(1 if failed else 0)
    if fmt == "junit":
        from .check.verdicts import Verdict

        failing = tuple(v.value for v, severity in ((Verdict.FAIL, "error"), (Verdict.WARN, "warning"))
                        if at_or_above(severity, fail_on))
        click.echo(report.junit(outcome.rows, outcome.failing, failing), nl=False)
    elif fmt == "text":
        from .show import ERROR, WARNING, paint

        colour = _colour(colour)
        lines = report.text(findings, list(tapes))
        if outcome.rows is not None:  # the findings, then the table
            from itertools import chain

            from .check import verdicts

            lines = chain(lines, [""], verdicts.text(outcome.rows))
        for line in lines:  # a finding's first line starts with its severity, a verdict's with the verdict
            tone = {"error": ERROR, "warning": WARNING, "fail": ERROR, "warn": WARNING}.get(
                line.split(maxsplit=1)[0] if line.strip() else "")
            click.echo(paint(line, tone, colour), color=colour)
        for tape, number, where, rule in unredacted:
            click.echo(safe(_unredacted_line(tape, number, where, rule)))
    else:
        from .tape import json_form

        doc = report.as_json(findings, list(tapes)) if fmt == "json" else report.sarif(findings, list(tapes))
        if fmt == "json" and outcome.rows is not None:
            from .check import verdicts

            doc.update(verdicts.as_json(outcome.rows))
        if fmt == "json" and require_redacted:
            # `pointer` is always a JSON pointer: a tape whose header says it was not redacted points at the
            # header's /redaction (record null), with the reason in words under `detail`
            doc["unredacted"] = [{"tape": tape, "record": number, "rule": rule,
                                  **({"pointer": where} if where.startswith("/") else
                                     {"pointer": "/redaction", "detail": where})}
                                 for tape, number, where, rule in unredacted]
        elif unredacted:
            for tape, number, where, rule in unredacted:
                click.echo(safe(_unredacted_line(tape, number, where, rule)), err=True)
        click.echo(safe_json(json_form.dumps(doc, indent=1)))
    raise SystemExit(code)


def _unredacted(tape: str):
    from .redact import unredacted
    from .tape.file import Reader

    reader = Reader(tape)
    return unredacted(reader.header, reader)


def _unredacted_line(tape: str, number: int | None, where: str, rule: str) -> str:
    fix = f"run: mcptape redact {tape} -o REDACTED.mcptape"
    if number is None:
        return f"{tape}: not redacted ({where}); {fix}"
    if rule == "not-redacted":
        return f"{tape}#{number} {where}: not redacted (a recording run without body redaction); {fix}"
    return f"{tape}#{number} {where}: still holds a secret ({rule}); {fix}"


def _write_output(chunks: Iterable[str | bytes], output: str | None, force: bool = False) -> None:
    """To -o FILE (as output.py writes every file: whole, or in place for a device or FIFO), else to stdout.
    Chunks are all text or all bytes."""
    if output is None:
        for chunk in chunks:
            click.echo(chunk, nl=False)
        return
    from .output import opened

    chunks = iter(chunks)
    first = next(chunks, "")
    with opened(output, force, text=isinstance(first, str)) as f:
        f.write(first)
        for chunk in chunks:
            f.write(chunk)
    click.echo(f"mcptape: wrote {output}", err=True)


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
    from .report import build, render

    if output is not None:
        from .output import Output

        Output(output, force)  # refused before the work, not after
    _write_output([render(build(_tapes(tapes)), fmt)], output, force)


def _tapes(paths) -> list[str]:
    """The tapes named, a bundle standing for the tapes it holds (commands that read several tapes)."""
    from .tape.bundled import BundleError, expand

    try:
        return expand(list(paths))
    except BundleError as e:
        raise Failure(str(e)) from None


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
    from .bundle import Refused, make
    from .output import Output

    Output(output, force)  # refused before the work, not after
    tapes = _tapes(tapes)
    try:
        names = make(tapes, output, redact=redact, allow_secrets=allow_secrets, force=force)
    except Refused as e:
        raise Failure(str(e)) from None
    if allow_secrets:
        click.echo(f"mcptape: warning: --allow-secrets: {output} may hold credentials; look before you share it",
                   err=True)
    from .terminal import safe

    click.echo(safe(f"mcptape: wrote {output}: {', '.join(names)}"), err=True)


@main.command()
@click.argument("tape", type=click.Path(dir_okay=False))
@click.option("--listen", default="127.0.0.1:0", show_default=True, metavar="HOST:PORT",
              help="Where to serve over HTTP; port 0 picks a free port.")
@click.option("--stdio", is_flag=True, help="Serve on stdin/stdout: use this as a client's server command.")
@click.option("--log", metavar="FILE", help="Record what the client did into this tape (with --stdio, FILE may hold "
                                            "{n}: each start takes the first free number).")
@click.option("--force", is_flag=True, help="Replace the --log FILE if it exists.")
@click.option("--ignore", multiple=True, metavar="POINTER",
              help="Ignore this part of requests when matching (JSON pointer, e.g. /params/arguments/now).")
@click.option("--match-meta", is_flag=True, help="Compare every params._meta key when matching (default: only those "
                                                 "with protocol meaning; docs/matching.md).")
@click.option("--pace", default="fast", show_default=True, help="fast, recorded, or xN: SSE event timing.")
@click.option("--strict", is_flag=True, help="Exit 1 if a request went unmatched or a recorded one unused.")
@_guard_options
@_edit_options
def replay(tape, listen, stdio, log, force, ignore, match_meta, pace, strict, allow_hosts, allow_origins, edit,
           edits_file):
    """Serve a tape back as the MCP server it recorded, offline.

    \b
    Examples:
      mcptape replay run.mcptape --listen 127.0.0.1:8765
      mcptape replay run.mcptape --stdio          (as a client's server command)
      mcptape replay run.mcptape --log what-the-client-did.mcptape --strict
      mcptape replay run.mcptape --edit 'expire-session at=tools/call#2' --log client.mcptape
    """
    from .replay import pace_function
    from .replay.recorded import load
    from .replay.serve import Replayer

    editor = _editor(edit, edits_file, stdio=stdio)
    try:
        pace_function(pace)
        replayer = Replayer(load(tape), list(ignore), editor, match_meta)
    except ValueError as e:
        raise Failure(str(e)) from None
    for warning in replayer.warnings:
        click.echo(f"mcptape: warning: {warning}", err=True)
    _warn_truncated(tape, replayer.recording.truncated, replayer.recording.count, "replaying")
    if log and "{" not in log:
        from .output import Output

        Output(log, force)  # refused before serving, as every output file is (output.py)
    log_mode = "force" if force else "new"
    if stdio:
        from . import TOOL
        from .replay import stdio as stdio_replay
        from .tape import records
        from .tape.file import TapeError, create_from_template

        try:  # a client may start its server several times: `--log 'client-{n}.mcptape'` gives each its own
            writer = create_from_template(log, records.header(time.time(), TOOL), mode=log_mode) if log else None
        except TapeError as e:
            raise Failure(str(e)) from None
        code = 0
        try:
            code = stdio_replay.serve(replayer, sys.stdin.buffer, sys.stdout.buffer, writer, pace_function(pace))
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

    from .replay import serving

    host, port = _parse_listen(listen)
    _check_free(host, port)

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
    from .terminal import safe

    _warn_unfired(replayer.editor)
    unused = replayer.unused()
    click.echo(f"mcptape: replay done: {len(replayer.unmatched)} request(s) unmatched, {len(unused)} recorded "
               f"request(s) never used", err=True)
    for what in replayer.unmatched[:10]:
        click.echo(f"mcptape:   unmatched: {safe(what)}", err=True)
    if strict and (replayer.unmatched or unused):
        raise SystemExit(1)


@main.command()
@click.argument("tape", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CLIENT [ARGS]...")
@click.option("--faults", metavar="LIST", help="Comma-separated faults to run (default: every one that applies): "
                                               "expire-session, session-not-found-401, restart-server, status-429, "
                                               "status-503, drop, delay, close-stream, reset, malformed, duplicate.")
@click.option("--at", "at", metavar="LIST", help="Comma-separated positions, any selector of the edit language "
                                                 "(default: each request after the handshake), e.g. tools/call#2.")
@click.option("--timeout", default=30.0, show_default=True, type=click.FloatRange(0, min_open=True), metavar="S",
              help="Seconds each run may take; a client still running then is killed with its children (hung).")
@click.option("--max-runs", default=50, show_default=True, type=click.IntRange(min=1), metavar="N",
              help="Cap on the runs: positions past it are left out (and the scorecard says so).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), metavar="N", help="Runs at a time (default: the CPU count).")
@click.option("--stdio", is_flag=True, help="The client spawns its server from $MCPTAPE_SERVER (implied by {server}).")
@click.option("--logs", metavar="DIR", type=click.Path(file_okay=False),
              help="Keep each run's replay log and client output under DIR (default: thrown away).")
@click.option("--ignore", multiple=True, metavar="POINTER",
              help="Ignore this part of requests when the replay matches them (JSON pointer, e.g. "
                   "/params/arguments/threadId), as `mcptape replay --ignore`.")
@click.option("--match-meta", is_flag=True, help="Compare every params._meta key when the replay matches requests "
                                                 "(default: only those with protocol meaning).")
@click.option("--format", "fmt", type=click.Choice(["text", "md", "json"]), default="text", show_default=True)
@click.option("--fail-on", default="failed,hung", show_default=True, metavar="LIST",
              help="Verdicts that make the exit status 1: comma-separated from surfaced, failed, hung, "
                   "not-reached; or never.")
@_guard_options
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
    from .gauntlet import Gauntlet, Stopped, scorecard
    from .gauntlet.runner import FAILED, HUNG, NOT_REACHED, SURFACED
    from .tape.file import TapeError

    def split(value: str | None) -> list[str] | None:
        return [v.strip() for v in value.split(",") if v.strip()] if value else None

    verdicts = split(fail_on) or []
    allowed = (SURFACED, FAILED, HUNG, NOT_REACHED)
    if verdicts != ["never"] and any(v not in allowed for v in verdicts):
        raise Failure(f"--fail-on {fail_on!r}: choose from {', '.join(allowed)} (comma-separated), or never")
    fail_on = () if verdicts == ["never"] else tuple(verdicts)
    if not command:
        raise Failure("give the client command after --, with {url} (or {server}) where the replay goes, e.g. "
                      "mcptape gauntlet run.mcptape -- python client.py {url}")
    try:
        runner = Gauntlet(tape, list(command), split(faults), split(at), timeout, max_runs, stdio or None, logs,
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
    code = _exit_with(stopped_by[0] if stopped_by else 2 if result.errors else 1 if result.failing(fail_on) else 0)
    try:
        click.echo(scorecard.FORMATS[fmt](result, fail_on), nl=False)
        if result.errors:
            click.echo(f"mcptape: {len(result.errors)} run(s) could not be judged: {result.errors[0].why}", err=True)
    except OSError:
        pass  # the terminal is gone (SIGHUP): the exit status still says how it ended
    raise SystemExit(code)


class _WithEditReference(click.Command):
    """A command whose help ends with the whole edit language, as written (a pip user has no README)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from .edits.reference import REFERENCE

        formatter.write("\n" + REFERENCE)


@main.command(name="edits", cls=_WithEditReference)
@click.argument("tape", type=click.Path(dir_okay=False))
@_edit_options
def edits_(tape, edit, edits_file):
    """Dry run: where each edit would fire on a recorded tape, as if its client ran again.

    \b
    Examples:
      mcptape edits run.mcptape --edit 'expire-session status=401 at=post:3'
      mcptape edits run.mcptape --edits faults.txt
    """
    from .edits import describe, dry_run
    from .tape import records
    from .tape.file import Reader, TapeError
    from .terminal import safe
    from .wire import jsonrpc

    if not edit and not edits_file:
        raise Failure("give the edits to try: --edit EDIT (repeatable) or --edits FILE")
    try:
        reader = Reader(tape)
        stdio = any(r.get("kind") == records.STDIO_LINE for r in Reader(tape))
        editor = _editor(edit, edits_file, stdio=stdio)
        for warning in _reach(editor, tape):
            click.echo(f"mcptape: warning: {warning}", err=True)
        for seq, record, plan in dry_run(editor, reader):
            where = record.get("method", "") + " " if record.get("kind") == records.HTTP_REQUEST else ""
            what = jsonrpc.describe(record["msg"]) if isinstance(record.get("msg"), dict) else ""
            session = f"  [session {record['session'][:8]}]" if record.get("session") else ""
            click.echo(safe(f"record {seq:>6}  {where}{what}{session}"))
            for fired in plan.fired:
                click.echo(safe(f"    {fired.text}"))
            click.echo(f"    -> {describe(plan)}")
    except TapeError as e:
        raise Failure(str(e)) from None
    _warn_truncated(tape, reader.truncated, reader.count, "tried the edits on")
    _warn_unfired(editor)


@main.command(name="diff")
@click.argument("tape_a", type=click.Path(dir_okay=False))
@click.argument("tape_b", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--ignore", multiple=True, metavar="POINTER",
              help="Also ignore this part of every message (JSON pointer, e.g. /result/content/0/text).")
def diff_(tape_a, tape_b, fmt, ignore):
    """Compare two tapes in protocol terms: calls answered in one only, changed results, errors and statuses,
    calls only in one tape, findings new in B. Ids, session ids, progress tokens and times are never compared.

    \b
    Examples:
      mcptape diff before.mcptape after.mcptape
      mcptape diff a.mcptape b.mcptape --ignore /result/structuredContent/now --format json
    """
    from .check.diff import diff
    from .tape import json_form
    from .tape.file import Reader
    from .terminal import safe_json

    for tape in (tape_a, tape_b):  # opened here too (diff reads them in other processes): an unreadable one is said
        Reader(tape).close()  # at once, and a record of the wrong shape is named from here (_Group)
    try:
        differences = diff(tape_a, tape_b, list(ignore))
    except ValueError as e:
        raise Failure(str(e)) from None
    code = _exit_with(1 if differences else 0)
    counts: dict[str, int] = {}
    for d in differences:
        counts[d.kind] = counts.get(d.kind, 0) + 1
    if fmt == "json":
        click.echo(safe_json(json_form.dumps({"differences": [d.to_json() for d in differences],
                                              "summary": {"differences": len(differences), "kinds": counts}},
                                             indent=1)))
    else:
        _print_differences(differences)
        click.echo(f"{len(differences)} difference(s)" if differences else "no differences")
    raise SystemExit(code)


def _print_differences(differences) -> None:
    from .terminal import safe

    for d in differences:
        where = f" at {d.path}" if d.path else ""
        if d.kind in ("only-in-a", "only-in-b"):  # the outcome it had in the one tape that holds it
            mine, other = ("a", "b") if d.kind == "only-in-a" else ("b", "a")
            change = f": {d.a if mine == 'a' else d.b} in {mine}, no such call in {other}"
        else:
            change = "" if d.a is None and d.b is None else f": {_short(d.a)} -> {_short(d.b)}"
        click.echo(safe(f"{d.kind:20} {d.call}{where}{change}"))


def _short(value, width: int = 60) -> str:
    from .tape import json_form

    text = value if isinstance(value, str) else json_form.dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"


@main.command()
@click.argument("tape", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD ARGS…]")
@click.option("--upstream", metavar="URL", help="The live server's MCP endpoint (http:// or https://).")
@click.option("--ignore", multiple=True, metavar="POINTER",
              help="Do not compare this part of every message (JSON pointer, e.g. /result/content/0/text).")
@click.option("--log", metavar="FILE", help="Write the new conversation into this tape (then `mcptape check FILE`).")
@click.option("--update", is_flag=True,
              help="Replace TAPE by the new conversation; the old one is kept beside it (run.old.mcptape).")
@click.option("--timeout", default=10.0, show_default=True, metavar="SECONDS", type=click.FloatRange(0, min_open=True),
              help="How long to wait for each answer the tape says came back before going on without it.")
@click.option("--secret", multiple=True, metavar="POINTER=ENVVAR",
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
    from .redrive import VerifyError, verify as run_verify
    from .tape import json_form
    from .terminal import safe, safe_json

    if log and os.path.exists(log):
        raise Failure(f"{log} already exists (--log writes a new tape)")
    if upstream is not None:
        _parse_upstream(upstream)
    secrets = {}
    for item in secret:
        where, sep, name = item.partition("=")
        if not sep or not where or not name:
            raise Failure(f"--secret {item!r}: write POINTER=ENVVAR (e.g. /headers/authorization=API_TOKEN)")
        if name not in os.environ:
            raise Failure(f"--secret {item}: the environment variable {name} is not set")
        secrets[where] = os.environ[name]
    try:
        result = run_verify(tape, upstream=upstream, command=list(command) or None, ignore=list(ignore), log=log,
                            update=update, timeout=timeout, secrets=secrets, verify_tls=not insecure)
    except VerifyError as e:
        raise Failure(str(e)) from None
    code = _exit_with(0 if result.ok or update else 1)
    for note in result.notes:
        click.echo(f"mcptape: warning: {safe(note)}", err=True)
    if fmt == "json":
        click.echo(safe_json(json_form.dumps({"differences": [d.to_json() for d in result.differences],
                                              "missed": result.missed, "log": result.log, "updated": result.updated,
                                              "summary": {"calls": result.calls,
                                                          "differences": len(result.differences),
                                                          "missed": len(result.missed)}}, indent=1)))
    else:
        for line in result.missed:
            click.echo(safe(line))
        _print_differences(result.differences)
        verdict = "agrees with the tape" if result.ok else (
            f"{len(result.differences)} difference(s), {len(result.missed)} missing")
        click.echo(f"verify: {result.calls} call(s) sent; {verdict}")
        if result.updated:
            click.echo(f"verify: {tape} now holds the new conversation; the old one is {result.updated}")
    raise SystemExit(code)


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
    from .tape import json_form
    from .tape.file import MAGIC

    try:
        with open(source, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Failure(f"cannot read {source}: {e.strerror}") from None
    kinds = "a tape's JSON (mcptape show --format json|jsonl), a HAR or a mitmproxy flow file"
    if data.startswith(MAGIC[:7]):
        raise Failure(f"{source} is already a tape: use it as it is (mcptape show {source}); import reads {kinds}")
    from .output import Output

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
    from .wire import jsonrpc

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
    from .tape.file import Writer

    count = 0
    try:
        with Writer(output, header, "force" if force else "new", whole=True) as writer:
            for item in items:
                writer.write(item)
                count += 1
    except OSError as e:
        raise Failure(f"cannot write {output}: {e.strerror}") from None
    return count


def _import_capture(source: str, output: str, force: bool, data: bytes | dict, kind: str) -> None:
    """A flow file's bytes or a HAR document, through the recorder's capture, into a tape."""
    from . import TOOL
    from .capture import imported
    from .redact import Redactor
    from .tape import records
    from .terminal import safe

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
@_redact_options
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
    from .output import Output
    from .redact import redacted_tape
    from .tape.file import Reader

    if os.path.exists(source) and os.path.exists(output) and os.path.samefile(source, output):
        raise Failure(f"-o {output} is the tape being read; write the redacted copy elsewhere")
    Output(output, force)  # refused before the work, not after
    redactor = _redactor(redact_header, redact_path, keep_path)
    reader = Reader(source)
    header, redacted = redacted_tape(reader.header, reader, redactor)
    count = _write_tape(output, force, header, redacted)
    if reader.truncated:
        click.echo(f"mcptape: {source}: tape is truncated ({reader.truncated}); redacted the {count} complete "
                   f"records before it", err=True)
    click.echo(f"mcptape: wrote {count} redacted records to {output}", err=True)


@main.command()
@click.argument("name", required=False)
def addons(name):
    """Print the paths of the mitmproxy addon scripts (all, or the one NAMEd), for mitmdump -s.

    They are the files of the top-level addons/ folder, installed as the package mcptape.addons; from a checkout,
    `mitmdump -s addons/record.py` loads the same file.

    \b
    Example:
      mitmdump --mode reverse:http://127.0.0.1:8000 -s "$(mcptape addons record)" --set mcptape_tape=run.mcptape
    """
    from importlib import resources

    folder = resources.files("mcptape.addons")
    scripts = sorted(p.name[:-3] for p in folder.iterdir() if p.name.endswith(".py") and p.name != "__init__.py")
    if name is not None and name not in scripts:
        raise Failure(f"no addon named {name!r} (there are: {', '.join(scripts)})")
    for script in [name] if name else scripts:
        click.echo(str(folder / f"{script}.py"))


@main.command(name="help")
@click.argument("topic", required=False, metavar="[edits|COMMAND]")
@click.pass_context
def help_(ctx, topic):
    """Print the reference of a topic (edits: the edit language), or a command's help.

    \b
    Examples:
      mcptape help edits
      mcptape help show
    """
    if topic == "edits":
        from .edits.reference import REFERENCE

        click.echo(REFERENCE, nl=False)
        return
    group = ctx.parent.command
    command = group.get_command(ctx, topic) if topic else group
    if command is None:
        raise Failure(f"no command or topic named {topic!r} (topics: edits; commands: "
                      f"{', '.join(group.list_commands(ctx))})")
    with click.Context(command, info_name=topic or "mcptape", parent=ctx.parent if topic else None) as sub:
        click.echo(command.get_help(sub))
