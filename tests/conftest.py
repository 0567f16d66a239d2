"""Real peers for the tests: the official SDK demo server as a subprocess, `mcptape record` as a subprocess,
free loopback ports. Nothing here is a mock."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

T = TypeVar("T")

pytest_plugins = ["pytester"]

BIN = Path(sys.executable).parent
MCPTAPE = str(BIN / "mcptape")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def wait_until(predicate: Callable[[], T], timeout: float = 10, what: str = "the condition") -> T:
    """Poll until `predicate()` is true and return its value; fail naming `what` after `timeout` seconds. Tests wait
    on what a tape or a peer shows instead of sleeping a fixed time: that is flaky on a busy machine and, where the
    point is that something did not happen, proves nothing on a slow one."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout}s for {what}")
        time.sleep(0.02)
    return value


async def await_until(predicate: Callable[[], T], timeout: float = 10, what: str = "the condition") -> T:
    """wait_until inside a running client: it sleeps on the event loop, so the client's own tasks go on."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout}s for {what}")
        await anyio.sleep(0.02)
    return value


def records_so_far(path) -> list[dict]:
    """The records a tape that is still being written holds now (none before its recorder has created it)."""
    from mcptape.tape.file import TapeError, read

    try:
        return read(path).records
    except (FileNotFoundError, TapeError):
        return []


async def get_stream_open(tape, timeout: float = 10) -> None:
    """Until the recorder has seen the client's standalone GET stream answered (the server can push on it)."""

    def answered() -> bool:
        records = records_so_far(tape)
        gets = {r["exchange"] for r in records if r["kind"] == "http.request" and r["method"] == "GET"}
        return any(r["kind"] == "http.response" and r["exchange"] in gets for r in records)

    await await_until(answered, timeout, "the client's GET stream to be answered")


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def spawn_demo(port: int, *flags: str) -> subprocess.Popen:
    """The demo SDK server on a given port, listening when this returns."""
    proc = subprocess.Popen([sys.executable, "-m", "mcptape.demo.server", "--port", str(port), *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, proc)
    return proc


@pytest.fixture(scope="session")
def shared_demo_servers() -> Iterator[dict[tuple[str, ...], tuple[subprocess.Popen, int]]]:
    """The demo servers this worker's tests share, by their flags (see demo_server)."""
    servers: dict[tuple[str, ...], tuple[subprocess.Popen, int]] = {}
    yield servers
    for proc, _ in servers.values():
        stop(proc)


@pytest.fixture
def demo_server(shared_demo_servers) -> Iterator:
    """The demo SDK server: `url = demo_server("--event-store")`; `--sse` serves /sse, `--tls` https.

    A server with the same flags is shared by the tests of a worker, one after the other: each of its clients has
    a session of its own, and starting the SDK server costs about a second of CPU. A `--tls` server (its
    certificate is the test's) is the test's own, and stopped with it. A test that needs a server it can stop or
    restart starts its own with spawn_demo."""
    procs: list[subprocess.Popen] = []

    def start(*flags: str) -> str:
        shared = shared_demo_servers.get(flags)
        if shared is not None and shared[0].poll() is None:
            port = shared[1]
        else:
            port = free_port()
            proc = spawn_demo(port, *flags)
            if "--tls" in flags:
                procs.append(proc)
            else:
                shared_demo_servers[flags] = (proc, port)
        return f"{'https' if '--tls' in flags else 'http'}://127.0.0.1:{port}{'/sse' if '--sse' in flags else '/mcp'}"

    yield start
    for proc in procs:
        stop(proc)


@dataclass
class Recording:
    proc: subprocess.Popen
    url: str  # where clients connect
    tape: Path

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str, str]:
        code = stop(self.proc, sig)
        out, err = self.proc.communicate()
        return code, out, err


def start_recording(upstream: str | None, tape: Path, *args: str, wrap: tuple[str, ...] = ()) -> Recording:
    """`mcptape record` in front of an upstream, ready when this returns (it announced its URL on its ready
    descriptor). `wrap` goes in front of the command (say, a shell that limits the file size first)."""
    from mcptape.capture.recording import start

    cmd = [MCPTAPE, "record", "--listen", "127.0.0.1:0", "-o", str(tape), *args]
    if upstream:
        cmd[2:2] = ["--upstream", upstream]
    proc, ready = start([*wrap, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if ready is None:
        raise RuntimeError(f"mcptape record exited early: {proc.communicate(timeout=30)[1]}")
    return Recording(proc, ready.url, tape)


@pytest.fixture
def record(tmp_path: Path) -> Iterator:
    """Start `mcptape record` in front of an upstream: `rec = record(upstream_url, "--record-all")`."""
    recordings: list[Recording] = []

    def start(upstream: str | None, *args: str, tape: Path | None = None) -> Recording:
        recording = start_recording(upstream, tape or tmp_path / f"run{len(recordings)}.mcptape", *args)
        recordings.append(recording)
        return recording

    yield start
    for recording in recordings:
        stop(recording.proc, signal.SIGKILL)


def write_tape(path, items: list[dict]) -> str:
    """A tape of synthetic records (made with mcptape.tape.records), for the fast in-process tests."""
    from mcptape.tape import records
    from mcptape.tape.file import Writer

    with Writer(path, records.header(0.0, "test"), "force") as writer:
        for record in items:
            writer.write(record)
    return str(path)


def loud_findings(tape) -> list[tuple[str, str]]:
    """What `check` says of a tape at warning or above, as (rule, message): of a real peer's correct conversation,
    nothing (issue 33: no false alarms on real peers)."""
    from mcptape.check import check

    return [(f.rule, f.message) for f in check([str(tape)]) if f.severity in ("error", "warning")]


def run_mcptape(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([MCPTAPE, *args], capture_output=True, text=True, timeout=60, **kwargs)


def env_without_proxies() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}


def by_exchange(tape) -> dict[int, list[dict]]:
    """A tape's records grouped by HTTP exchange, in tape order."""
    out: dict[int, list[dict]] = {}
    for r in tape.records:
        if "exchange" in r:
            out.setdefault(r["exchange"], []).append(r)
    return out


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(id_, name: str, arguments: dict, token=None) -> dict:
    params = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


class LineClient:
    """A stdio client that reads the server's lines with a deadline (unbuffered: select sees every byte)."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     bufsize=0)
        self.pending = b""

    def send(self, msg: dict) -> None:
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")

    def lines(self, seconds: float, count: int = 100) -> list[bytes]:
        """Up to `count` lines, waiting at most `seconds` for each."""
        import select

        out: list[bytes] = []
        while len(out) < count:
            if b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                out.append(line)
                continue
            if not select.select([self.proc.stdout], [], [], seconds)[0]:
                break
            chunk = self.proc.stdout.read(65536)
            if not chunk:
                break
            self.pending += chunk
        return out

    def receive(self) -> dict:
        return json.loads(self.lines(10, 1)[0])


@pytest.fixture(scope="module")
def stdio_tape(tmp_path_factory) -> str:
    """A real stdio session recorded through the wrapper: the demo client's script against the demo server."""
    from mcp import StdioServerParameters

    from mcptape.demo.client import script

    tape = tmp_path_factory.mktemp("stdio") / "stdio.mcptape"
    argv = [MCPTAPE, "record", "-o", str(tape), "--", sys.executable, "-m", "mcptape.demo.server", "--stdio"]
    anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")
    return str(tape)


@pytest.fixture(scope="session")
def real_tapes(tmp_path_factory) -> dict[str, str]:
    """Real conversations of the demo SDK client and server, recorded once for the tests that read tapes (report,
    export, bundle): `session` (2025-11-25 Streamable HTTP), `stateless` (2026-07-28), `edited` (the session
    tape replayed with the session expired by an edit before the 2nd tools/call, the client's side logged) and
    `stdio` (through the stdio wrapper)."""
    from mcp import StdioServerParameters

    from mcptape.demo.client import script
    from mcptape.replay import replaying

    folder = tmp_path_factory.mktemp("real")
    tapes = {name: str(folder / f"{name}.mcptape") for name in ("session", "stateless", "edited", "stdio")}
    port = free_port()
    server = spawn_demo(port, "--event-store")
    try:
        for name, mode in (("session", "legacy"), ("stateless", "2026-07-28")):
            recording = start_recording(f"http://127.0.0.1:{port}/mcp", Path(tapes[name]))
            anyio.run(script, recording.url, mode)
            assert recording.stop()[0] == 0
    finally:
        stop(server)
    with replaying(tapes["session"], edits=["expire-session at=tools/call#2"], log=tapes["edited"]) as url:
        lines = anyio.run(script, url, "legacy")
    assert "countdown error: Session not found" in lines
    argv = [MCPTAPE, "record", "-o", tapes["stdio"], "--", sys.executable, "-m", "mcptape.demo.server", "--stdio"]
    anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")
    return tapes
