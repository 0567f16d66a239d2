"""Who may talk to a server mcptape runs: the Host and Origin checks that stop DNS rebinding.

A web page can point a name it controls at 127.0.0.1 and then read whatever a local server answers: a replay serves
a tape's contents, a recorder in front of an SDK server would even switch that server's own protection off (it
presents the upstream's host). The browser cannot hide the name it used (`Host`) nor the page it runs in (`Origin`),
so both are checked, as the official SDK servers do on loopback, before anything is served or forwarded:

- `Host`: a loopback name or address (localhost, 127.0.0.0/8, ::1) on any port, the listen address, or an allowed
  name; else 421 Misdirected Request (the SDK's answer). No `Host` at all is let through: a browser always sends one.
- `Origin`: absent (not a browser), or http(s) on a loopback name, the listen address, or an allowed origin; else
  403. 2025-11-25, Transports: "If the `Origin` header is present and invalid, servers MUST respond with HTTP 403
  Forbidden. The HTTP response body MAY comprise a JSON-RPC error response that has no `id`". `Origin: null` (a
  sandboxed page, a file) is foreign too.

Both are read by URL rules, as the browser wrote them: names and schemes in any case, a default port as no port,
one trailing dot off a name, IPv6 in brackets; userinfo (`evil.example@localhost`, which a lenient parser reads as
localhost), a backslash or a path is malformed, and so refused. Either header given twice is refused too: which one
a server behind us would read, no one can say.

Sans-I/O: the caller hands the request's headers in and sends the Refusal out.
"""

from __future__ import annotations

import ipaddress
import json
import string
from collections.abc import Iterable

import msgspec

ANY = "*"


class Refusal(msgspec.Struct, frozen=True):
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    reason: str  # one line, for a log


_NAME = frozenset(string.ascii_letters + string.digits + "-._~")  # a host name's characters: no userinfo, no path
_SCHEME = frozenset(string.ascii_letters + string.digits + "+-.")
_DEFAULT_PORT = {"http": 80, "https": 443}


def _split_host(value: str) -> tuple[str, int | None] | None:
    """A Host by URL rules: `name`, `name:port`, `[v6]`, `[v6]:port` -> (the name lowercased, one trailing dot off,
    an IPv6 address bare and in its short form; the port or None); None for anything else (userinfo, a backslash, a
    path, a port that is no number)."""
    text = value.strip()
    if text.startswith("["):
        name, closed, port = text[1:].partition("]")
        if not closed or "%" in name or port[:1] not in ("", ":"):  # (a zone id, or something after the brackets)
            return None
        try:
            name = ipaddress.IPv6Address(name).compressed
        except ValueError:
            return None
    else:
        name, _, port = text.partition(":")
        if not _NAME.issuperset(name):
            return None
        name = name.lower().removesuffix(".")
    port = port.removeprefix(":")
    if not port:
        return name, None
    if not (port.isascii() and port.isdigit() and len(port) <= 5) or int(port) > 65535:
        return None
    return name, int(port)


def parse_origin(value: str) -> tuple[str, str | None]:
    """`scheme://host[:port]` by URL rules -> (the origin as a browser writes it: lowercased, without its scheme's
    default port; its host's name). What is no such origin (`null`, a path, userinfo) -> (itself lowercased, None)."""
    scheme, sep, rest = value.strip().partition("://")
    named = sep and scheme[:1].isalpha() and _SCHEME.issuperset(scheme)
    parsed = _split_host(rest.removesuffix("/")) if named else None
    if parsed is None:
        return value.strip().lower(), None
    scheme, (name, port) = scheme.lower(), parsed
    host = f"[{name}]" if ":" in name else name
    at = "" if port is None or port == _DEFAULT_PORT.get(scheme) else f":{port}"
    return f"{scheme}://{host}{at}", name


def _loopback(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):  # RFC 6761: always the loopback
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostList:
    """Host names as an option gives them: `NAME` (any port), `NAME:PORT`, or `*` for any."""

    def __init__(self, values: Iterable[str]) -> None:
        values = list(values)
        self.anything = ANY in values
        self.entries = {parsed for v in values if v != ANY and (parsed := _split_host(v)) is not None}

    def __contains__(self, address: tuple[str, int | None]) -> bool:
        name, port = address[0].strip("[]").lower().removesuffix("."), address[1]
        ports = (None, 80, 443) if port is None else (None, port)  # no port: its scheme's default, whichever it is
        return self.anything or any((name, p) in self.entries for p in ports)


class Guard:
    """`listen`: the address the server listens on (accepted as a Host and Origin name on any port). `hosts`:
    more Host values to accept, `NAME` (any port) or `NAME:PORT`, or `*` for any. `origins`: more Origin values,
    as a browser sends them (`https://app.example:8443`, `null`), or `*` for any."""

    def __init__(self, listen: str | None = None, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> None:
        self.names = {(listen or "").strip("[]").lower()} - {"", "0.0.0.0", "::"}
        self.hosts = HostList(hosts)
        self.any_origin = ANY in origins
        self.origins = {parse_origin(o)[0] for o in origins if o != ANY}
        self._seen: dict[tuple, Refusal | None] = {}  # a client sends the same ones

    def check(self, headers: Iterable[tuple[str, str]]) -> Refusal | None:
        """None when a request with these headers may be served, else what to answer instead."""
        hosts, origins = [], []
        for name, value in headers:
            name = name.lower()
            if name == "host":
                hosts.append(value)
            elif name == "origin":
                origins.append(value)
        key = (tuple(hosts), tuple(origins))
        if key in self._seen:
            return self._seen[key]
        if len(self._seen) > 64:  # a hostile client's every new name costs no memory
            self._seen.clear()
        refusal = self._seen[key] = self._decide(hosts, origins)
        return refusal

    def _decide(self, hosts: list[str], origins: list[str]) -> Refusal | None:
        if len(hosts) > 1:
            return _misdirected(f"mcptape: Host is given {len(hosts)} times, not once")
        if hosts and not self._host_ok(hosts[0]):
            return _misdirected(f"mcptape: Host {hosts[0]!r} is not allowed (a loopback name or the listen address; "
                                f"--allow-host NAME widens it)")
        if not origins or self.any_origin:
            return None
        if len(origins) > 1:
            return _forbidden(f"mcptape: Origin is given {len(origins)} times, not once")
        if not self._origin_ok(origins[0]):
            return _forbidden(f"mcptape: Origin {origins[0]!r} is not allowed (a loopback origin; --allow-origin "
                              f"ORIGIN widens it)")
        return None

    def _host_ok(self, host: str) -> bool:
        parsed = _split_host(host)
        if parsed is None:
            return False
        return _loopback(parsed[0]) or parsed[0] in self.names or parsed in self.hosts

    def _origin_ok(self, origin: str) -> bool:
        written, name = parse_origin(origin)
        return written in self.origins or name is not None and written.startswith(("http://", "https://")) and (
            _loopback(name) or name in self.names)


def _misdirected(text: str) -> Refusal:
    return Refusal(421, [("content-type", "text/plain; charset=utf-8")], text.encode(), text)


def _forbidden(text: str) -> Refusal:
    body = {"jsonrpc": "2.0", "error": {"code": -32000, "message": f"Forbidden: {text}"}}
    return Refusal(403, [("content-type", "application/json")], json.dumps(body).encode(), text)
