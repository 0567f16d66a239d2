"""Options several commands share, and the values they parse into: edits, redaction, Host and Origin checks,
listen addresses, upstream URLs."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

import click

from .app import Failure


def edit_options(command):
    command = click.option("--edits", "edits_file", metavar="FILE", type=click.Path(dir_okay=False),
                           help="Read edits from FILE, one per line (# comments).")(command)
    return click.option("--edit", multiple=True, metavar="EDIT",
                        help="Inject a fault, e.g. 'expire-session at=tools/call#2' (repeatable; the language: "
                             "mcptape help edits).")(command)


def redact_options(command):
    command = click.option("--keep-path", multiple=True, metavar="POINTER",
                           help="Never redact this part of a message (JSON pointer, * for any one step, "
                                "e.g. /params/arguments/token_count; repeatable).")(command)
    command = click.option("--redact-path", multiple=True, metavar="POINTER",
                           help="Also redact this part of every message (JSON pointer, * for any one step, "
                                "e.g. /result/content/*/text; repeatable).")(command)
    return click.option("--redact-header", multiple=True, metavar="NAME",
                        help="Also redact this header (repeatable).")(command)


def guard_options(command):
    command = click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
                           help="Also accept requests from this Origin (e.g. https://app.example:8443, or null); "
                                "loopback origins always are (repeatable).")(command)
    return click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME[:PORT]",
                        help="Also accept this Host (any port unless given); loopback names and the listen "
                             "address always are. Others get 421 (DNS rebinding; repeatable).")(command)


def make_redactor(redact_header, redact_path, keep_path, no_redact=False):
    from ..redact.redactor import Redactor

    try:
        redactor = Redactor(redact_header, not no_redact, keep_path, redact_path)
    except ValueError as e:
        raise Failure(str(e)) from None
    if no_redact:
        click.echo("mcptape: warning: --no-redact: secrets (credentials, tokens, keys in messages) will be written "
                   "into the tape as they are; do not share it", err=True)
    return redactor


def make_editor(edit: tuple[str, ...], edits_file: str | None, stdio: bool = False, live: bool = False):
    """The edits given, parsed and checked against where they will run; None when there are none."""
    if not edit and not edits_file:
        return None
    from ..edits import EditError, Editor, check_transport, parse, parse_file

    try:
        edits = (parse_file(edits_file) if edits_file else []) + [parse(e) for e in edit]
        check_transport(edits, stdio=stdio, live=live)
    except EditError as e:
        raise Failure(str(e)) from None
    return Editor(edits)


def warn_unfired(editor) -> None:
    for warning in editor.unfired() if editor is not None else []:
        click.echo(f"mcptape: warning: {warning}", err=True)


@dataclass(frozen=True)
class Listen:
    """Where a server of mcptape's listens, parsed once at the option."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Upstream:
    """An http(s) URL of a real server, parsed once at the option: the URL as given, its parts and its port."""

    url: str
    split: SplitResult
    port: int

    def __str__(self) -> str:
        return self.url


def parse_listen(value: str) -> Listen:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise Failure(f"--listen {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765 (port 0 picks a free one)")
    return Listen(host.strip("[]") or "127.0.0.1", int(port))


def parse_upstream(url: str) -> Upstream:
    split = urlsplit(url)
    if split.scheme not in ("http", "https") or not split.hostname:
        raise Failure(f"--upstream {url!r}: expected an http:// or https:// URL, e.g. http://127.0.0.1:8000/mcp")
    try:
        port = split.port or (443 if split.scheme == "https" else 80)
    except ValueError:
        raise Failure(f"--upstream {url!r}: the port is not a number from 0 to 65535") from None
    return Upstream(url, split, port)


class _Parsed(click.ParamType):
    """A click type that parses its value once, where the option is read (httpx's `callback=validate_json`), with
    mcptape's one-line error."""

    def __init__(self, name: str, parse) -> None:
        self.name, self._parse = name, parse

    def convert(self, value, param, ctx):
        return value if isinstance(value, (Listen, Upstream)) else self._parse(value)


LISTEN = _Parsed("host:port", parse_listen)
UPSTREAM = _Parsed("url", parse_upstream)


def check_free(host: str, port: int) -> None:
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
