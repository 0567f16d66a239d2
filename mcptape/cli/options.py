"""Options several commands share, and the click types that parse a value once, where the option is read: listen
addresses, upstream URLs, edits (text, a file, or JSON from another process of mcptape's), JSON pointers, --pace,
--secret, the gauntlet's lists; the command gets the object. Also the edits, redaction, Host and Origin checks
built from them."""

from __future__ import annotations

import os
import socket
from urllib.parse import SplitResult, urlsplit

import click
import msgspec

from .app import Failure


def edit_options(command):
    command = click.option("--edits-json", "edits_json", type=EDITS_JSON, hidden=True,
                           help="Parsed edits as JSON (Edit.to_json), from another process of mcptape's: what the "
                                "library and the pytest plugin pass their recorder and stdio replays.")(command)
    command = click.option("--edits", "edits_file", metavar="FILE", type=EDITS_FILE,
                           help="Read edits from FILE, one per line (# comments).")(command)
    return click.option("--edit", multiple=True, metavar="EDIT", type=EDIT,
                        help="Inject a fault, e.g. 'expire-session at=tools/call#2' (repeatable; the language: "
                             "mcptape help edits).")(command)


def redact_options(command):
    command = click.option("--keep-path", multiple=True, metavar="POINTER", type=POINTER,
                           help="Never redact this part of a message (JSON pointer, * for any one step, "
                                "e.g. /params/arguments/token_count; repeatable).")(command)
    command = click.option("--redact-path", multiple=True, metavar="POINTER", type=POINTER,
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


def make_editor(*given, stdio: bool = False, live: bool = False):
    """The edits of edit_options (each already parsed at its option), checked against where they will run; None
    when there are none."""
    edits = [edit for group in given if group for edit in group]
    if not edits:
        return None
    from ..edits import EditError, Editor, check_transport

    try:
        check_transport(edits, stdio=stdio, live=live)
    except EditError as e:
        raise Failure(str(e)) from None
    return Editor(edits)


def warn_unfired(editor) -> None:
    for warning in editor.unfired() if editor is not None else []:
        click.echo(f"mcptape: warning: {warning}", err=True)


class Listen(msgspec.Struct, frozen=True):
    """Where a server of mcptape's listens, parsed once at the option."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class Upstream(msgspec.Struct, frozen=True):
    """An http(s) URL of a real server, parsed once at the option: the URL as given, its parts and its port."""

    url: str
    split: SplitResult
    port: int

    def __str__(self) -> str:
        return self.url


def parse_listen(value: str, option: str = "--listen") -> Listen:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise Failure(f"{option} {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765 (port 0 picks a free one)")
    return Listen(host.strip("[]") or "127.0.0.1", int(port))


def parse_upstream(url: str, option: str = "--upstream") -> Upstream:
    split = urlsplit(url)
    if split.scheme not in ("http", "https") or not split.hostname:
        raise Failure(f"{option} {url!r}: expected an http:// or https:// URL, e.g. http://127.0.0.1:8000/mcp")
    try:
        port = split.port or (443 if split.scheme == "https" else 80)
    except ValueError:
        raise Failure(f"{option} {url!r}: the port is not a number from 0 to 65535") from None
    return Upstream(url, split, port)


def _edit(text: str, option: str):
    from ..edits import EditError, language

    try:
        return language.parse(text)
    except EditError as e:
        raise Failure(str(e)) from None


def _edits_file(path: str, option: str) -> list:
    from ..edits import EditError, language

    try:
        return language.parse_file(path)
    except EditError as e:
        raise Failure(str(e)) from None


def _edits_json(text: str, option: str) -> list:
    from ..edits import EditError, language

    try:
        return language.loads(text)
    except EditError as e:
        raise Failure(str(e)) from None


def _pointer(text: str, option: str):
    from ..wire.pointer import Pointer

    if isinstance(text, Pointer):
        return text
    try:
        return Pointer(text, option)
    except ValueError as e:
        raise Failure(str(e)) from None


def _pace(spec: str, option: str):
    """fast, recorded or xN, as the function the replay paces SSE events with (None: fast)."""
    from ..replay import pace_function

    try:
        return pace_function(spec)
    except ValueError as e:
        raise Failure(str(e)) from None


class Secret(msgspec.Struct, frozen=True):
    """--secret POINTER=ENVVAR: where a redacted value goes, and the value, read from the environment once."""

    where: str
    value: str


def _secret(text: str, option: str) -> Secret:
    where, sep, name = text.partition("=")
    if not sep or not where or not name:
        raise Failure(f"{option} {text!r}: write POINTER=ENVVAR (e.g. /headers/authorization=API_TOKEN)")
    if name not in os.environ:
        raise Failure(f"{option} {text}: the environment variable {name} is not set")
    return Secret(where, os.environ[name])


def _verdicts(text: str, option: str) -> tuple[str, ...]:
    """The gauntlet's verdicts that fail a run, comma-separated; `never`: none."""
    from ..gauntlet.runner import FAILED, HUNG, NOT_REACHED, SURFACED

    verdicts = [v.strip() for v in text.split(",") if v.strip()]
    allowed = (SURFACED, FAILED, HUNG, NOT_REACHED)
    if verdicts == ["never"]:
        return ()
    if any(v not in allowed for v in verdicts):
        raise Failure(f"{option} {text!r}: choose from {', '.join(allowed)} (comma-separated), or never")
    return tuple(verdicts)


def _list(text: str, option: str) -> list[str] | None:
    """A comma-separated list; None when it names nothing (the command's default)."""
    return [v.strip() for v in text.split(",") if v.strip()] or None


class _Parsed(click.ParamType):
    """A click type that parses its value once, where the option is read (httpx's `callback=validate_json`), with
    mcptape's one-line error; the command gets the object."""

    def __init__(self, name: str, parse) -> None:
        self.name, self._parse = name, parse

    def convert(self, value, param, ctx):
        if not isinstance(value, str):  # already parsed (click converts a default, and a value passed in, again)
            return value
        return self._parse(value, param.opts[0] if param is not None else self.name)


LISTEN = _Parsed("host:port", parse_listen)
UPSTREAM = _Parsed("url", parse_upstream)
EDIT = _Parsed("edit", _edit)
EDITS_FILE = _Parsed("file", _edits_file)
EDITS_JSON = _Parsed("json", _edits_json)
POINTER = _Parsed("pointer", _pointer)
PACE = _Parsed("pace", _pace)
SECRET = _Parsed("pointer=envvar", _secret)
VERDICTS = _Parsed("list", _verdicts)
LIST = _Parsed("list", _list)


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
