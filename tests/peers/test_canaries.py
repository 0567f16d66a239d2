"""The canary matrix: a secret planted in every field a peer can fill, recorded over HTTP (through `mcptape record`)
and stdio, and imported from HAR and mitmproxy flow files, is found in none of what mcptape writes: the tape's
bytes, show, check, diff, report and export in every format, the bundle's files. The redacted tapes still replay:
the request matches, and the client resumes with the Last-Event-ID the replay gave it."""

from __future__ import annotations

import http.client
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import anyio
import pytest

from mcptape.demo.client import script
from mcptape.replay import replaying

from ..conftest import MCPTAPE, free_port, run_mcptape, stop, wait_for_port
from .canary_server import CLIENT_FIELDS, SERVER_FIELDS, canary, twice

SEED = "matrix"
STDIO_FIELDS = {"argv-k": "name", "argv-p": "name", "argv-auth": "name", "argv-auth-eq": "name",
                "stdio-json-key": "shape", "stdio-pin": "name", "stdio-stderr": "shape"}
STDIO_SERVER = """
import json, os, sys
print("starting with " + sys.argv[-1], file=sys.stderr, flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {sys.argv[-1].replace("-stderr", "-key"): 1,
                      "pin": os.environ["CANARY_PIN"]}}), flush=True)
"""


def c(field: str) -> str:
    if field in STDIO_FIELDS:
        return f"sk-canary-{field}-0123456789abcdef" if STDIO_FIELDS[field] == "shape" else f"canary-{field}-0123456789"
    return canary(SEED, field)


def http_client(port: int) -> tuple[str, str]:
    """The client's half of the conversation: a POST with a canary in every field a client fills, then a resume
    from the first event's id. Returns (that id, the resumed stream's body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    arguments = {c("req-json-key"): 1, "auth": c("req-auth"), "pass": c("req-pass"), "pin": c("req-pin"),
                 "sessionKey": c("req-sessionKey"), "doc": twice("password", c("req-nested-twice"))}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t",
                                                                                     "arguments": arguments}})
    conn.request("POST", f"/mcp?{c('query-name')}=1&session_key={c('session_key')}&trace={c('query-value')}", body,
                 {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                  c("req-header-name"): "1", "X-Trace": c("req-header-value"), "X-Custom-Auth": c("X-Custom-Auth"),
                  "Authentication": c("Authentication")})
    response = conn.getresponse()
    stream = response.read().decode()
    assert response.status == 200 and '"result"' in stream, stream
    first = next(line[4:] for line in stream.splitlines() if line.startswith("id: "))
    session = response.getheader("Mcp-Session-Id")  # (a replay of a tape without initialize hands out none)
    conn.request("GET", "/mcp", headers={"Accept": "text/event-stream", "Last-Event-ID": first,
                                         **({"Mcp-Session-Id": session} if session else {})})
    resumed = conn.getresponse()
    text = resumed.read().decode()
    assert resumed.status == 200 and "resumed" in text, text
    return first, text


@pytest.fixture(scope="module")
def tapes(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("canaries")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tests.peers.canary_server", str(port), SEED])
    out: dict[str, str] = {}
    try:
        wait_for_port(port, server)
        for name, flags in (("http", ()), ("unredacted", ("--no-redact",))):
            out[name] = str(folder / f"{name}.mcptape")
            from ..conftest import start_recording

            rec = start_recording(f"http://127.0.0.1:{port}/mcp", Path(out[name]), *flags)
            http_client(int(rec.url.split(":")[2].split("/")[0]))
            code, _, err = rec.stop()
            assert code == 0, err
    finally:
        stop(server)
    for fmt, kind in (("har", "har"), ("mitm", "flows")):
        exported = str(folder / f"unredacted.{kind}")
        assert run_mcptape("export", out["unredacted"], "--format", fmt, "-o", exported).returncode == 0
        out[kind] = str(folder / f"{kind}.mcptape")
        done = run_mcptape("import", exported, "-o", out[kind])
        assert done.returncode == 0, done.stderr
    out["stdio"] = str(folder / "stdio.mcptape")
    argv = [sys.executable, "-c", STDIO_SERVER, "-k", c("argv-k"), f"-p{c('argv-p')}", "--auth", c("argv-auth"),
            f"--auth={c('argv-auth-eq')}", c("stdio-stderr")]
    done = subprocess.run([MCPTAPE, "record", "-o", out["stdio"], "--", *argv], capture_output=True, timeout=60,
                          env={**os.environ, "CANARY_PIN": c("stdio-pin")},
                          input=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode() + b"\n")
    assert done.returncode == 0 and c("stdio-pin").encode() in done.stdout, done.stderr
    del out["unredacted"]
    return out


CANARIES = [c(f) for f in (*SERVER_FIELDS, *CLIENT_FIELDS, *STDIO_FIELDS)]


def leaked(data: bytes | str) -> list[str]:
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return [canary_ for canary_ in CANARIES if canary_ in text]


def outputs(tape: str, other: str, tmp_path: Path) -> dict[str, bytes]:
    """Everything mcptape writes about a tape, by command."""
    got = {"tape": Path(tape).read_bytes()}

    def run(*args: str) -> bytes:
        done = subprocess.run([MCPTAPE, *args], capture_output=True, timeout=120)
        return done.stdout + done.stderr

    for fmt in ("text", "json", "jsonl"):
        got[f"show {fmt}"] = run("show", tape, "--format", fmt)
    for fmt in ("text", "json", "sarif"):
        got[f"check {fmt}"] = run("check", tape, "--format", fmt, "--fail-on", "never")
    for fmt in ("text", "json"):
        got[f"diff {fmt}"] = run("diff", tape, other, "--format", fmt)
    for fmt in ("md", "html", "mermaid", "json"):
        got[f"report {fmt}"] = run("report", tape, "--format", fmt)
    for fmt in ("json", "jsonl", "har", "mitm"):
        got[f"export {fmt}"] = run("export", tape, "--format", fmt)
    bundle = tmp_path / f"{Path(tape).stem}.zip"
    got["bundle"] = run("bundle", tape, "-o", str(bundle))
    with zipfile.ZipFile(io.BytesIO(bundle.read_bytes())) as archive:
        for name in archive.namelist():
            got[f"bundle {name}"] = archive.read(name)
    return got


@pytest.mark.parametrize("source", ["http", "har", "flows", "stdio"])
def test_no_canary_reaches_anything_mcptape_writes(tapes, source, tmp_path):
    other = tapes["http" if source != "http" else "har"]
    found = {what: hits for what, data in outputs(tapes[source], other, tmp_path).items() if (hits := leaked(data))}
    assert found == {}
    done = run_mcptape("check", tapes[source], "--require-redacted", "--fail-on", "never")
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_canary_was_recorded_before_redaction(tapes):
    """The matrix proves something only if each canary really passed: unredacted, every one is in the tape."""
    folder = Path(tapes["http"]).parent
    raw = (folder / "unredacted.mcptape").read_bytes()
    missing = [f for f in (*SERVER_FIELDS, *CLIENT_FIELDS) if c(f).encode() not in raw]
    assert missing == []  # (the stdio canaries: the fixture saw the server answer with them)


def test_the_redacted_tape_replays_and_resumes(tapes):
    with replaying(tapes["http"]) as url:
        first, resumed = http_client(int(url.split(":")[2].split("/")[0]))
    assert first.startswith("<redacted:") and "resumed" in resumed  # resumed from the pseudonym it was given


def test_the_sdk_client_is_served_by_a_redacted_sdk_tape(real_tapes, tmp_path):
    redacted = str(tmp_path / "redacted.mcptape")
    assert run_mcptape("redact", real_tapes["session"], "-o", redacted).returncode == 0
    with replaying(real_tapes["session"]) as url:
        original = anyio.run(script, url, "legacy")
    with replaying(redacted) as url:
        assert anyio.run(script, url, "legacy") == original
