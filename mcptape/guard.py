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

Sans-I/O: the caller hands the two header values in and sends the Refusal out.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from urllib.parse import urlsplit

import msgspec

from .wire import http

ANY = "*"


class Refusal(msgspec.Struct, frozen=True):
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    reason: str  # one line, for a log


def _split_host(value: str) -> tuple[str, int | None] | None:
    """`name`, `name:port`, `[v6]`, `[v6]:port` -> (lowercased name without brackets, port); None when malformed."""
    try:
        parts = urlsplit(f"//{value.strip()}")
        return (parts.hostname or "").rstrip("."), parts.port
    except ValueError:
        return None


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
        name, port = address[0].strip("[]").lower().rstrip("."), address[1]
        return self.anything or (name, None) in self.entries or (name, port) in self.entries


class Guard:
    """`listen`: the address the server listens on (accepted as a Host and Origin name on any port). `hosts`:
    more Host values to accept, `NAME` (any port) or `NAME:PORT`, or `*` for any. `origins`: more Origin values,
    exactly as a browser sends them (`https://app.example:8443`, `null`), or `*` for any."""

    def __init__(self, listen: str | None = None, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> None:
        self.names = {(listen or "").strip("[]").lower()} - {"", "0.0.0.0", "::"}
        self.hosts = HostList(hosts)
        self.any_origin = ANY in origins
        self.origins = {o.strip().rstrip("/").lower() for o in origins if o != ANY}
        self._seen: dict[tuple[str | None, str | None], Refusal | None] = {}  # a client sends the same two

    def check(self, headers: Iterable[tuple[str, str]]) -> Refusal | None:
        """None when a request with these headers may be served, else what to answer instead."""
        key = (http.get(headers, "host"), http.get(headers, "origin"))
        if key in self._seen:
            return self._seen[key]
        if len(self._seen) > 64:  # a hostile client's every new name costs no memory
            self._seen.clear()
        refusal = self._seen[key] = self._decide(*key)
        return refusal

    def _decide(self, host: str | None, origin: str | None) -> Refusal | None:
        if host is not None and not self._host_ok(host):
            text = f"mcptape: Host {host!r} is not allowed (a loopback name or the listen address; --allow-host " \
                   f"NAME widens it)"
            return Refusal(421, [("content-type", "text/plain; charset=utf-8")], text.encode(), text)
        if origin is not None and not self.any_origin and not self._origin_ok(origin):
            text = f"mcptape: Origin {origin!r} is not allowed (a loopback origin; --allow-origin ORIGIN widens it)"
            body = {"jsonrpc": "2.0", "error": {"code": -32000, "message": f"Forbidden: {text}"}}
            return Refusal(403, [("content-type", "application/json")], json.dumps(body).encode(), text)
        return None

    def _host_ok(self, host: str) -> bool:
        parsed = _split_host(host)
        if parsed is None:
            return False
        return _loopback(parsed[0]) or parsed[0] in self.names or parsed in self.hosts

    def _origin_ok(self, origin: str) -> bool:
        value = origin.strip().rstrip("/").lower()
        if value in self.origins:
            return True
        try:
            parts = urlsplit(value)
            name = (parts.hostname or "").rstrip(".")
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and (_loopback(name) or name in self.names)

