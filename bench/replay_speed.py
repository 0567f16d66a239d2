"""Replay speed: requests/s and server CPU per call of `mcptape replay` vs the real SDK server it recorded (and vs
`mcp-cassette serve`, the closest tool on PyPI, when its command is given), plus time from start to first answer.

    .venv/bin/python bench/replay_speed.py [--calls 2000] [--rounds 5] [--cassette auto|/path/to/mcp-cassette]
                                           [--client raw|http.client] [--json]

mcp-cassette is not a dependency: `--cassette auto` installs it into a venv of its own (bench/competitor.py), or
pass the command of one you installed. The same client (HTTP/1.1 keep-alive: initialize, then N identical
tools/call) drives every server, in interleaved shuffled rounds: by default a bare-socket client that costs little
per call, so the figures compare servers, not the client (`--client http.client` for the standard library's, which
costs more per call than the replay does). CPU per call is the server process's user+system time over the calls
(from /proc). Goals: >= 5x the SDK server's throughput, <= 150 us of replay CPU per call, <= 150 ms from start to
first answered request. mcptape runs laid out as pip installs it (`installed`), as mcp-cassette does.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import competitor
from figures import Figures, add_flag
from mcptape.capture.recording import start as start_recorder

BIN = Path(sys.executable).parent
TICK = os.sysconf("SC_CLK_TCK")
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Client:
    """http.client: what a Python test suite would use; its own cost per call is large (about 150 us here)."""

    def __init__(self, url: str) -> None:
        m = re.match(r"http://([^:/]+):(\d+)(/\S*)", url)
        self.path = m.group(3)
        self.conn = http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=30)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(self, msg: dict) -> bytes:
        self.conn.request("POST", self.path, body=json.dumps(msg), headers=self.headers)
        response = self.conn.getresponse()
        body = response.read()
        if response.status >= 400:
            raise RuntimeError(f"{response.status}: {body[:200]!r}")
        if sid := response.getheader("mcp-session-id"):
            self.headers.update({"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
        return body

    def session(self, calls: int) -> None:
        self.post(INIT)
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for i in range(calls):
            body = self.post({**CALL, "id": i + 2})
            assert b'"result"' in body, body[:300]


class RawClient(Client):
    """HTTP/1.1 over a bare socket (keep-alive, Content-Length or chunked answers): a client whose own cost is
    small, so the figures say how fast the servers are rather than how fast the client is."""

    def __init__(self, url: str) -> None:
        m = re.match(r"http://([^:/]+):(\d+)(/\S*)", url)
        self.host, self.path = f"{m.group(1)}:{m.group(2)}", m.group(3)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.extra = b""
        self.buf = b""

    def post(self, msg: dict) -> bytes:
        body = json.dumps(msg).encode()
        self.sock.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                          b"Accept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n%s"
                          % (self.path.encode(), self.host.encode(), self.extra, len(body), body))
        head = self._until(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        fields = {k.strip().lower(): v.strip() for k, _, v in
                  (line.partition(b":") for line in head.split(b"\r\n")[1:])}
        if b"content-length" in fields:
            answer = self._take(int(fields[b"content-length"]))
        else:  # chunked
            answer = b""
            while size := int(self._until(b"\r\n"), 16):
                answer += self._take(size)
                self._take(2)
            self._take(2)
        if status >= 400:
            raise RuntimeError(f"{status}: {answer[:200]!r}")
        if sid := fields.get(b"mcp-session-id"):
            self.extra = b"Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n" % sid
        return answer

    def _until(self, mark: bytes) -> bytes:
        while (at := self.buf.find(mark)) < 0:
            self._more()
        found, self.buf = self.buf[:at], self.buf[at + len(mark):]
        return found

    def _take(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._more()
        found, self.buf = self.buf[:n], self.buf[n:]
        return found

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        self.buf += chunk


def wait_for(url: str, proc: subprocess.Popen, timeout: float = 30) -> float:
    """Seconds until an initialize is answered."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args} exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            Client(url).post(INIT)
            return time.perf_counter() - start
        except (OSError, RuntimeError, http.client.HTTPException):
            time.sleep(0.005)
    raise SystemExit(f"{url} never answered")


def start(argv: list[str], url_from_output: bool = False, url: str | None = None,
          marker: str = "") -> tuple[subprocess.Popen, str, float]:
    """Start a server; its URL is given, or read from the first output line holding `marker` and a URL."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if url_from_output:
        while True:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                raise SystemExit(f"{argv[0]} exited")
            found = re.search(r"(http://127\.0\.0\.1:\d+/\S*)", line)
            if found and marker in line:
                break
        url = found.group(1).rstrip(".,)")
    waited = wait_for(url, proc)
    return proc, url, time.perf_counter() - t0 if url_from_output else waited


def installed(where: Path) -> Path:
    """`mcptape` laid out as pip installs it, for the replay's figures: its package on a path of the venv's, and the
    console script pip writes. A checkout's editable install finds the package through a finder of setuptools',
    which imports pathlib and glob before mcptape starts (about 3 ms of a start to first answer that is measured
    against mcp-cassette installed in a venv of its own); no user's install has it. The venv borrows this one's
    dependencies (a .pth line), and the package is this checkout's, compiled core included."""
    import mcptape
    import site

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    (where / "pkg").mkdir()
    (where / "pkg" / "mcptape").symlink_to(Path(mcptape.__file__).parent)
    site_dir = next((where / "lib").glob("python3*/site-packages"))
    (site_dir / "mcptape.pth").write_text(f"{where / 'pkg'}\n" + "\n".join(site.getsitepackages()) + "\n")
    script = where / "bin" / "mcptape"
    # (its own interpreter on the first line, whichever name the checkout's script has there)
    script.write_text(f"#!{where / 'bin' / 'python'}\n" + (BIN / "mcptape").read_text().split("\n", 1)[1])
    script.chmod(0o755)
    return script


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cassette", help="the mcp-cassette command, or `auto` to install it into a venv of its own")
    p.add_argument("--client", choices=["raw", "http.client"], default="raw",
                   help="raw: a bare-socket HTTP/1.1 client (default); http.client: the standard library's")
    add_flag(p)
    a = p.parse_args()
    figures = Figures(a.json)
    if a.cassette == "auto":
        a.cassette = competitor.command()
    procs: list[subprocess.Popen] = []
    driver = RawClient if a.client == "raw" else Client
    # An installed mcptape has its bytecode compiled (pip does it); an editable checkout under
    # PYTHONDONTWRITEBYTECODE would compile every module at every start, which no user pays.
    import mcptape

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(mcptape.__file__).parent)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            port = free_port()
            sdk_url = f"http://127.0.0.1:{port}/mcp"
            sdk, _, _ = start([sys.executable, "-m", "mcptape.demo.server", "--port", str(port)], url=sdk_url)
            procs.append(sdk)
            tape = f"{tmp}/bench.mcptape"
            rec, ready = start_recorder([str(BIN / "mcptape"), "record", "--upstream", sdk_url, "--listen",
                                         "127.0.0.1:0", "-o", tape], stdout=subprocess.DEVNULL)
            if ready is None:
                raise SystemExit("mcptape record exited before it listened")
            rec_url = ready.url
            Client(rec_url).session(3)
            rec.send_signal(signal.SIGINT)
            rec.wait()
            targets = {"sdk server": (sdk, sdk_url)}
            replay_command = str(installed(Path(tmp) / "installed"))
            replay, replay_url, _ = start([replay_command, "replay", tape], url_from_output=True)
            procs.append(replay)
            targets["mcptape replay"] = (replay, replay_url)
            if a.cassette:
                cassette_file = f"{tmp}/bench.cassette.json"
                crec, crec_url, _ = start([a.cassette, "record", "--cassette", cassette_file, "--url", sdk_url],
                                          url_from_output=True)
                Client(crec_url).session(3)
                crec.send_signal(signal.SIGINT)
                crec.wait()
                cas, cas_url, _ = start([a.cassette, "serve", "--ordering", "none", cassette_file], url_from_output=True)
                procs.append(cas)
                targets["mcp-cassette serve"] = (cas, cas_url)
            for proc, url in targets.values():
                driver(url).session(50)  # warm up
            rate: dict[str, list[float]] = {name: [] for name in targets}
            cpu: dict[str, list[float]] = {name: [] for name in targets}
            for _ in range(a.rounds):
                order = list(targets)
                random.shuffle(order)
                for name in order:
                    proc, url = targets[name]
                    before, t0 = cpu_seconds(proc.pid), time.perf_counter()
                    driver(url).session(a.calls)
                    elapsed, used = time.perf_counter() - t0, cpu_seconds(proc.pid) - before
                    rate[name].append((a.calls + 2) / elapsed)
                    cpu[name].append(used / (a.calls + 2) * 1e6)
            startup: dict[str, list[float]] = {"mcptape replay": []}
            for _ in range(5):
                proc, _, seconds = start([replay_command, "replay", tape], url_from_output=True)
                startup["mcptape replay"].append(seconds)
                proc.send_signal(signal.SIGINT)
                proc.wait()
                if a.cassette:
                    proc, _, seconds = start([a.cassette, "serve", "--ordering", "none", cassette_file],
                                             url_from_output=True)
                    startup.setdefault("mcp-cassette serve", []).append(seconds)
                    proc.send_signal(signal.SIGINT)
                    proc.wait()
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGINT)
            for proc in procs:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
    sdk_rate = statistics.median(rate["sdk server"])
    print(f"{a.rounds} interleaved rounds x {a.calls} tools/call, HTTP/1.1 keep-alive, {a.client} client, median")
    figures.update(rounds=a.rounds, calls=a.calls, client=a.client)
    for name in targets:
        r, c = statistics.median(rate[name]), statistics.median(cpu[name])
        print(f"  {name:19} {r:8.0f} req/s ({r / sdk_rate:4.1f}x the SDK server)  server CPU {c:6.0f} us/call")
        key = name.split()[0].replace("-", "_")  # sdk, mcptape, mcp_cassette
        figures.update({f"{key}_rps": r, f"{key}_cpu_us": c})
    for name, values in startup.items():
        print(f"  {name:19} start to first answered request: {statistics.median(values) * 1000:.0f} ms")
        figures[f"{name.split()[0].replace('-', '_')}_start_ms"] = statistics.median(values) * 1000
    print("  goals: >= 5x the SDK server, <= 150 us replay CPU per call, <= 150 ms to first answer")
    figures.emit()


if __name__ == "__main__":
    main()
