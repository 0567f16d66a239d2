"""Run mitmproxy in-process with the Recorder addon, for `mcptape record`.

mitmproxy's own start-up error handling prints "Errors logged during startup, exiting..." and calls sys.exit;
we want one line that says what failed and what to do, so this runs a bare Master and watches start-up itself.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import SplitResult

from mitmproxy import addonmanager, exceptions, hooks, master, options
from mitmproxy.addons import default_addons

from .addon import Recorder


def settings(host: str, port: int, tape: str, *, append: bool, force: bool, record_all: bool, insecure: bool,
             allow: dict, upstream: SplitResult | None = None, upstream_port: int | None = None) -> tuple[dict, str]:
    """mitmproxy's options for a recording on host:port, and the path clients ask for: reverse mode in front of
    `upstream` (its URL, split), else a regular proxy. The edits and the redaction go to the Recorder as objects."""
    out: dict = {"listen_host": host, "listen_port": port, "mcptape_tape": tape, "mcptape_append": append,
                 "mcptape_force": force, "mcptape_record_all": record_all, "ssl_insecure": insecure, **allow}
    if upstream is None:
        out["mode"] = ["regular"]
        return out, ""
    out["mode"] = [f"reverse:{upstream.scheme}://{url_host(upstream.hostname)}:{upstream_port}"]
    # the request is read (and recorded) before the upstream is connected: if it is down, the tape still holds what
    # the client asked, with an upstream-unreachable end
    out["connection_strategy"] = "lazy"
    if upstream.path not in ("", "/"):
        out["mcptape_endpoint"] = [upstream.path]
    return out, upstream.path + (f"?{upstream.query}" if upstream.query else "")


def url_host(host: str) -> str:
    """A host as a URL writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


class Addons(addonmanager.AddonManager):
    """mitmproxy's addon manager, each hook handed only to the addons that have it.

    mitmproxy offers every hook to every addon in its chain (35 here), through a context manager and two
    generators each, and follows each flow hook with an `update` hook no addon here has: measured ~60 µs a hook,
    eight hooks a proxied call, more than all the recorder's own work on it. Which addons have a hook is looked up
    once per hook name, again whenever the chain changes; an addon with sub-addons (the script loader) is always
    offered the hook, as its children come and go. What each addon gets, and in what order, is unchanged."""

    def __init__(self, owner: master.Master) -> None:
        super().__init__(owner)
        self._by_hook: dict[str, list] = {}

    def add(self, *addons) -> None:
        try:
            super().add(*addons)
        finally:  # (a chain changed part-way, by an addon that failed to load, is looked up again too)
            self._by_hook.clear()

    def remove(self, addon) -> None:
        try:
            super().remove(addon)
        finally:
            self._by_hook.clear()

    def clear(self) -> None:
        try:
            super().clear()
        finally:
            self._by_hook.clear()

    async def trigger_event(self, event: hooks.Hook) -> None:
        chain = self._by_hook.get(event.name)
        if chain is None:
            chain = self._by_hook[event.name] = [
                a for a in self.chain if hasattr(a, "addons") or getattr(a, event.name, None) is not None]
        for addon in chain:
            try:
                with addonmanager.safecall():
                    await self.invoke_addon(addon, event)
            except exceptions.AddonHalt:
                return


class StartupError(Exception):
    """The proxy could not start; the message is one line for a person."""


class _ErrorLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class _Startup:
    """Addon: once mitmproxy says it is running, check that it really listens and report the address."""

    def __init__(self, errors: _ErrorLog, on_ready: Callable[[list[tuple[str, int]]], None]) -> None:
        self.errors = errors
        self.on_ready = on_ready
        self.failure: str | None = None

    def running(self) -> None:
        from mitmproxy import ctx

        addrs = ctx.master.addons.get("proxyserver").listen_addrs()
        if self.errors.messages or not addrs:
            self.failure = _explain(self.errors.messages)
            ctx.master.shutdown()
            return
        self.on_ready([(a[0], a[1]) for a in addrs])


def _explain(messages: list[str]) -> str:
    text = " ".join(messages) or "the proxy did not start listening"
    lowered = text.lower()
    if "address already in use" in lowered or "errno 98" in lowered:
        return "the listen address is already in use (pick another --listen port, or port 0 for a free one)"
    if "permission denied" in lowered or "errno 13" in lowered:
        return "no permission to listen on that port (use a port above 1023)"
    if "cannot assign requested address" in lowered or "errno 99" in lowered:
        return "cannot listen on that address (is it an address of this machine?)"
    return text.splitlines()[0]


async def serve(
    settings: dict[str, Any], recorder: Recorder, on_ready: Callable[[list[tuple[str, int]]], None],
    verbose: bool = False,
) -> None:
    """Run until SIGINT/SIGTERM. Raises StartupError when the proxy cannot start."""
    errors = _ErrorLog()
    mitm_logger = logging.getLogger("mitmproxy")
    mitm_logger.addHandler(errors)
    mitm_logger.propagate = verbose  # mitmproxy's per-connection chatter only with --verbose
    # The recorder's own warnings (a tape that stopped being written) reach the terminal; under mitmdump, mitmproxy's
    # event log shows them instead.
    ours, to_stderr = logging.getLogger("mcptape"), logging.StreamHandler()
    to_stderr.setLevel(logging.WARNING)
    ours.addHandler(to_stderr)
    ours.propagate = False
    if verbose:  # mitmproxy's own log at info (connections, flows' errors), as mitmdump prints it, on stderr
        mitm_logger.setLevel(logging.INFO)
    startup = _Startup(errors, lambda addrs: (mitm_logger.removeHandler(errors), on_ready(addrs)))
    opts = options.Options()
    m = master.Master(opts)
    m.addons = Addons(m)  # before any addon is added (a bare Master adds none)
    m.addons.add(*default_addons())
    m.addons.add(recorder, startup)
    if verbose:
        from mitmproxy.addons.termlog import TermLog

        m.addons.add(TermLog(sys.stderr))
    try:
        opts.update(**settings)
    except exceptions.OptionsError as e:
        raise StartupError(str(e)) from None

    def stop() -> None:
        recorder.stopping = True
        m.shutdown()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)
    try:
        await m.run()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        mitm_logger.removeHandler(errors)
        ours.removeHandler(to_stderr)
        ours.propagate = True
    if startup.failure:
        raise StartupError(startup.failure)
