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
