"""Reading a recording as it happens: `mcptape record`'s live view on a terminal (a pseudo-terminal, the real
command, the SDK server and client), and `mcptape show --follow` on a tape another process is writing."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import threading

import anyio
import pytest

from mcptape.demo.client import script
from mcptape.tape.file import read

from .conftest import MCPTAPE, stop, wait_until

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Terminal:
    """A command whose stdout and stderr are a pseudo-terminal; what it prints is collected as it comes."""

    def __init__(self, argv: list[str], env: dict | None = None) -> None:
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                                     env={**os.environ, **(env or {})})
        os.close(slave)
        self.master, self.raw = master, b""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the command and its terminal are gone
                return
            if not chunk:
                return
            self.raw += chunk

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace").replace("\r\n", "\n")

    def finish(self, sig: int = signal.SIGINT) -> str:
        code = stop(self.proc, sig)
        self.reader.join(10)
        os.close(self.master)
        assert code == 0, self.text
        return self.text


def record_on_a_terminal(upstream: str, tape, *args: str, env: dict | None = None) -> tuple[Terminal, str]:
    term = Terminal([MCPTAPE, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", str(tape), *args],
                    env)
    found = wait_until(lambda: re.search(r"client at (http://127\.0\.0\.1:\d+/mcp)", term.text), 30,
                       "the recorder's URL")
    return term, found.group(1)


def call_lines(text: str) -> list[str]:
    return [line for line in ANSI.sub("", text).splitlines() if re.match(r"\d\d:\d\d:\d\d\.\d{3}  #\d+ ", line)]


@pytest.fixture
def upstream(demo_server, monkeypatch) -> str:
    monkeypatch.delenv("NO_COLOR", raising=False)
    return demo_server()


def test_record_prints_each_call_as_it_is_answered(upstream, tmp_path):
    tape = tmp_path / "live.mcptape"
    term, url = record_on_a_terminal(upstream, tape, "--edit", "expire-session at=tools/call#2")
    anyio.run(script, url, "legacy")
    wait_until(lambda: "resources/read" in term.text, 15, "the live line of the last call")
    lines = call_lines(term.finish())
    requests = {r["msg"]["method"] + (" " + str(r["msg"]["params"].get("name") or r["msg"]["params"].get("uri", ""))
                                      if r["msg"].get("params") and r["msg"]["method"] != "initialize" else ""): seq
                for seq, r in enumerate(read(tape).records)
                if r["kind"] == "http.request" and isinstance(r.get("msg"), dict) and "id" in r["msg"]}
    said = {}
    for line in lines:
        found = re.match(r"\S+  #(\d+)\s+(\w{8})  → (\S+(?: \S+)?)\s+(\d{3})  (.*?)\s+(\d+) ms(.*)$", line)
        if found:
            said[found.group(3).strip()] = found
    assert set(said) == set(requests), lines
    for what, seq in requests.items():
        assert int(said[what].group(1)) == seq  # the record number `show TAPE#N` takes
    assert said["initialize"].group(4) == "200" and said["initialize"].group(5).startswith("result")
    assert said["tools/call add"].group(5).startswith("result") and said["tools/call add"].group(7) == ""
    countdown = said["tools/call countdown"]  # the 2nd tools/call: the edit expired the session
    assert countdown.group(4) == "404" and "error" in countdown.group(5) and "Session not found" in countdown.group(5)
    assert "[edit: expire-session at=tools/call#2]" in countdown.group(7)
    assert any("-- session" in line and "expired (404) by an edit" in line for line in lines)
    assert "\x1b[" in term.text  # coloured on a terminal


def test_record_is_quiet_with_quiet_and_uncoloured_with_no_color(upstream, tmp_path):
    term, url = record_on_a_terminal(upstream, tmp_path / "quiet.mcptape", "--quiet")
    anyio.run(script, url, "legacy")
    wait_until(lambda: any(r["kind"] == "http.request" and r["method"] == "DELETE"
                           for r in read(tmp_path / "quiet.mcptape").records), 15, "the client's DELETE")
    assert call_lines(term.finish()) == []
    term, url = record_on_a_terminal(upstream, tmp_path / "plain.mcptape", env={"NO_COLOR": "1"})
    anyio.run(script, url, "legacy")
    wait_until(lambda: "resources/read" in term.text, 15, "the live line of the last call")
    text = term.finish()
    assert len([line for line in call_lines(text) if "→" in line]) == 5 and "\x1b[" not in text


def test_no_live_view_when_stderr_is_not_a_terminal(upstream, record):
    rec = record(upstream)
    anyio.run(script, rec.url, "legacy")
    _, _, err = rec.stop()
    assert "tools/call" not in err and "wrote" in err


class Lines:
    """A command's stdout, line by line as it comes (a pipe, not a terminal)."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.errors: list[str] = []
        self.readers = [threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stdout.readline, "")),
                                         daemon=True),
                        threading.Thread(target=lambda: self.errors.extend(iter(self.proc.stderr.readline, "")),
                                         daemon=True)]
        for reader in self.readers:
            reader.start()

    def wait(self, timeout: float = 20) -> tuple[int, str]:
        code = self.proc.wait(timeout)
        for reader in self.readers:
            reader.join(5)
        return code, "".join(self.errors)


def test_follow_prints_a_recording_as_it_happens_and_stops_when_it_ends(demo_server, tmp_path):
    from .conftest import start_recording

    upstream = demo_server()
    tape = tmp_path / "run.mcptape"
    follow = Lines([MCPTAPE, "show", "--follow", str(tape)])  # before the tape exists: it waits for it
    wait_until(lambda: any("waiting for" in line for line in follow.errors), 15, "follow to wait for the tape")
    rec = start_recording(upstream, tape)
    try:
        wait_until(lambda: any("recording started" in line for line in follow.lines), 15, "the capture's start")
        assert follow.proc.poll() is None
        anyio.run(script, rec.url, "legacy")
        # every call is shown while the recorder is still running
        wait_until(lambda: any("DELETE /mcp" in line for line in follow.lines), 15, "the client's DELETE")
        assert rec.proc.poll() is None and follow.proc.poll() is None
        assert any("tools/call #" in line and "countdown" in line for line in follow.lines)
    finally:
        rec.stop()
    code, err = follow.wait()  # the recorder let go of the tape: follow ends by itself
    assert code == 0, err
    assert "truncated" not in err
    shown = [line.rstrip("\n") for line in follow.lines]
    assert shown == run_mcptape_lines("show", str(tape))  # what show prints of the finished tape, in full


def run_mcptape_lines(*args: str) -> list[str]:
    from .conftest import run_mcptape

    return run_mcptape(*args).stdout.splitlines()


def test_follow_with_filters_and_jsonl_and_ctrl_c(demo_server, tmp_path):
    import json

    from .conftest import start_recording

    upstream = demo_server()
    tape = tmp_path / "run.mcptape"
    rec = start_recording(upstream, tape)
    follow = Lines([MCPTAPE, "show", "-f", str(tape), "--method", "tools/call", "--format", "jsonl"])
    try:
        anyio.run(script, rec.url, "legacy")
        wait_until(lambda: sum('"tools/call"' in line for line in follow.lines) >= 2, 15, "both tools/call")
        stop(follow.proc, signal.SIGINT)  # Ctrl-C: the user has seen enough
        code, err = follow.wait()
        assert code == 0 and "Traceback" not in err and "Aborted" not in err, err
        records = [json.loads(line) for line in follow.lines[1:]]
        assert records and all(r["exchange"] in {x["exchange"] for x in records if x["kind"] == "http.request"}
                               for r in records)
    finally:
        rec.stop()
    # a finished tape: follow prints it and ends
    done = Lines([MCPTAPE, "show", "--follow", str(tape)])
    assert done.wait()[0] == 0 and len(done.lines) == len(read(tape).records) + 1


def test_the_live_view_on_synthetic_records():
    """Fast, in process: a refusal without a JSON-RPC body is said when it comes (not at the end), an edit is named
    on its call, a call never answered is said when the recording stops, and record numbers count on from an
    appended tape's last record."""
    from pathlib import Path

    from mcptape.live import LiveView

    from .core.test_lifecycle import Synth, error

    tape = Synth(Path("unused"))
    tape.call(tape.session)
    tape.call(tape.session, 401, raw=b"Unauthorized")
    tape.call(tape.session, 404, error("Session not found"), injected=True)
    tape.post({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "slow"}}, "s2")
    tape.items = [r for r in tape.items if not (r["kind"] != "http.request" and r.get("exchange") == 4)]
    said: list[str] = []
    view = LiveView(said.append, first_seq=100)
    for record in tape.items:
        view.write(record)
    wait_until(lambda: len(said) >= 4, 10, "the answered and refused calls")
    assert not any("slow" in line for line in said)  # not answered yet: nothing to say
    view.close()
    calls = [line for line in said if "→" in line]
    assert [re.search(r"→ (\S+(?: \S+)?)\s", line).group(1) for line in calls] == [
        "initialize", "tools/call add", "tools/call add", "tools/call add", "tools/call slow"]
    assert " 401  refused" in calls[2]
    assert "404  error -32600 Session not found" in calls[3] and "[edit: expire-session at=post:3]" in calls[3]
    assert "no answer when the recording stopped" in calls[4]
    assert re.search(r"  #101 ", calls[0])  # record 1 of this run is record 101 of the tape
