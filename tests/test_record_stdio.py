"""`mcptape record -- CMD`: the wrapper a client launches in place of a stdio server. Real SDK client and server,
real subprocesses, real pipes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import anyio
from mcp import StdioServerParameters

from mcptape.demo.client import script
from mcptape.tape.file import read

from .conftest import MCPTAPE, records_so_far, run_mcptape, wait_until

DEMO = [sys.executable, "-m", "mcptape.demo.server", "--stdio"]


def lines(tape, direction: str) -> list[dict]:
    return [r for r in tape.records if r["kind"] == "stdio.line" and r["dir"] == direction]


def wrapped(tape, *command: str) -> list[str]:
    return [MCPTAPE, "record", "-o", str(tape), "--", *command]


def answered(tape) -> list:
    """The ids of the answers a stdio tape being written holds so far."""
    return [r["msg"]["id"] for r in records_so_far(tape) if r["kind"] == "stdio.line" and r["dir"] == "s2c"
            and ("result" in r.get("msg", {}) or "error" in r.get("msg", {}))]


def cancelled(tape, request_id) -> bool:
    """The tape being written shows the client's cancellation of `request_id` (relayed to the server)."""
    return any(r.get("msg", {}).get("method") == "notifications/cancelled"
               and r["msg"].get("params", {}).get("requestId") == request_id for r in records_so_far(tape))


SLOW_CALL = {"name": "countdown", "arguments": {"steps": 40, "delay": 0.05}}  # about 2 s, with progress


class RawClient:
    """Talks to a stdio server line by line, as the seed 000 probe does."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def send(self, msg: dict) -> None:
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict:
        return json.loads(self.proc.stdout.readline())

    def handshake(self) -> None:
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        assert self.receive()["id"] == 1
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def cancel_in_flight(self, request_id: int = 2) -> None:
        """Start a slow call and cancel it once it is surely running (its first progress arrived): a cancellation
        that overtakes its request may be ignored, as the spec allows."""
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {**SLOW_CALL, "_meta": {"progressToken": "t"}}})
        while self.receive().get("method") != "notifications/progress":
            pass
        self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": request_id, "reason": "test"}})

    def outlast(self, tape, twin: int) -> None:
        """Wait until a call cancelled by cancel_in_flight would surely have been answered, however slow the
        machine: the same call, sent now as `twin` and not cancelled, has its answer in the tape. The cancelled one
        started earlier and does the same work on the same server, so a server that ignored the cancellation would
        have answered it first. (A fixed sleep "longer than the call" proves nothing when the machine is slower.)"""
        self.send({"jsonrpc": "2.0", "id": twin, "method": "tools/call",
                   "params": {**SLOW_CALL, "_meta": {"progressToken": "twin"}}})
        wait_until(lambda: twin in answered(tape), timeout=30, what=f"the answer to the uncancelled twin call {twin}")

    def close(self) -> int:
        self.proc.stdin.close()
        return self.proc.wait(20)


def test_sdk_client_through_the_wrapper_equals_direct(tmp_path):
    tape = tmp_path / "stdio.mcptape"
    direct = anyio.run(script, StdioServerParameters(command=DEMO[0], args=DEMO[1:]), "legacy")
    argv = wrapped(tape, *DEMO)
    through = anyio.run(script, StdioServerParameters(command=argv[0], args=argv[1:]), "legacy")
    assert through == direct and "countdown counted down from 3" in through
    recorded = read(tape)
    sent, answered = lines(recorded, "c2s"), lines(recorded, "s2c")
    assert [r["msg"]["method"] for r in sent if "id" in r["msg"]][:2] == ["initialize", "tools/list"]
    ids = {r["msg"]["id"] for r in sent if "id" in r["msg"]}
    assert ids == {r["msg"]["id"] for r in answered if "result" in r["msg"] or "error" in r["msg"]}
    methods = [r["msg"].get("method", "result") for r in answered]
    assert methods.count("notifications/progress") == 3 and methods.count("notifications/message") == 3
    assert all(a["t"] <= b["t"] for a, b in zip(recorded.records, recorded.records[1:]))
    assert recorded.records[-2] == {**recorded.records[-2], "kind": "stdio.exit", "code": 0}
    assert recorded.records[-1]["kind"] == "capture.stop"


def test_out_of_order_answers_are_recorded_as_they_came_and_pair_by_id(tmp_path):
    tape = tmp_path / "order.mcptape"
    client = RawClient(wrapped(tape, *DEMO))
    client.handshake()
    client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "sleep", "arguments": {"seconds": 0.5}}})
    client.send({"jsonrpc": "2.0", "id": "x", "method": "ping"})
    assert [client.receive()["id"], client.receive()["id"]] == ["x", 2]
    assert client.close() == 0
    answers = [r["msg"]["id"] for r in lines(read(tape), "s2c")]
    assert answers == [1, "x", 2]


def test_a_cancelled_call_that_is_never_answered_is_recorded_faithfully(tmp_path):
    """Seed 000's shape: the server stops work on notifications/cancelled and, as the spec recommends, never
    answers. The tape must show the request, the cancellation and the silence, nothing invented."""
    tape = tmp_path / "cancel.mcptape"
    client = RawClient(wrapped(tape, *DEMO))
    client.handshake()
    client.cancel_in_flight(2)
    client.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    while (answer := client.receive()).get("method"):
        pass  # progress notifications still in the pipe
    assert answer["id"] == 3  # the server is alive and answering, just not request 2
    client.outlast(tape, 4)
    assert client.close() == 0
    recorded = read(tape)
    sent = [r["msg"] for r in lines(recorded, "c2s")]
    assert {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "test"}} in sent
    assert [r["msg"].get("id") for r in lines(recorded, "s2c") if "id" in r["msg"]] == [1, 3, 4]  # never 2
    assert recorded.records[-2]["kind"] == "stdio.exit"


SCRIPTED = r"""
import sys, os
out = sys.stdout.buffer
out.write(b"hello, I am not JSON\n")
out.write(b"\xff\xfe not utf-8\n")
out.write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n')
sys.stderr.write("a log line\n")
out.write(b'{"jsonrpc":"2.0","id":1,"res')
out.flush()
sys.exit(3)
"""


def test_bad_lines_partial_lines_stderr_and_exit_status(tmp_path):
    tape = tmp_path / "bad.mcptape"
    direct = subprocess.run([sys.executable, "-c", SCRIPTED], capture_output=True, stdin=subprocess.DEVNULL)
    through = subprocess.run(wrapped(tape, sys.executable, "-c", SCRIPTED), capture_output=True,
                             stdin=subprocess.DEVNULL)
    assert through.returncode == direct.returncode == 3
    assert through.stdout == direct.stdout  # byte-exact, and nothing of ours
    assert through.stderr == direct.stderr
    recorded = read(tape)
    out = lines(recorded, "s2c")
    assert out[0]["raw"] == b"hello, I am not JSON" and "not JSON" in out[0]["problem"]
    assert out[1]["raw"] == b"\xff\xfe not utf-8" and "UTF-8" in out[1]["problem"]
    assert out[2]["msg"]["method"] == "notifications/message"
    assert out[3]["partial"] and out[3]["raw"] == b'{"jsonrpc":"2.0","id":1,"res' and "newline" in out[3]["problem"]
    assert [r["text"] for r in recorded.records if r["kind"] == "stdio.stderr"] == ["a log line"]
    assert next(r for r in recorded.records if r["kind"] == "stdio.exit")["code"] == 3


def test_signals_reach_the_server_and_its_death_is_ours(tmp_path):
    trap = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *a: (sys.stderr.write('got TERM\\n'), sys.exit(0)))\n"
            "print('ready', flush=True)\ntime.sleep(30)\n")
    proc = subprocess.Popen(wrapped(tmp_path / "t.mcptape", sys.executable, "-c", trap), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0 and b"got TERM" in proc.stderr.read()
    assert [r["text"] for r in read(tmp_path / "t.mcptape").records if r["kind"] == "stdio.stderr"] == ["got TERM"]

    suicide = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    died = subprocess.run(wrapped(tmp_path / "k.mcptape", sys.executable, "-c", suicide), stdin=subprocess.DEVNULL)
    assert died.returncode == -signal.SIGTERM
    end = next(r for r in read(tmp_path / "k.mcptape").records if r["kind"] == "stdio.exit")
    assert end == {**end, "code": None, "signal": "SIGTERM"}


def test_server_dying_first_and_a_missing_command(tmp_path):
    client = RawClient(wrapped(tmp_path / "d.mcptape", sys.executable, "-c", "print('bye')"))
    assert client.proc.wait(10) == 0  # the client never closed stdin; the wrapper still ends with its server
    missing = subprocess.run(wrapped(tmp_path / "m.mcptape", "/nonexistent/server"), capture_output=True,
                             text=True, stdin=subprocess.DEVNULL)
    assert missing.returncode == 127 and missing.stdout == ""
    assert missing.stderr.strip().splitlines() == ["mcptape: cannot start /nonexistent/server: No such file or directory"]
    assert next(r for r in read(tmp_path / "m.mcptape").records if r["kind"] == "stdio.exit")["error"]


def test_templates_mcptape_dir_and_no_two_wrappers_on_one_file(tmp_path):
    env = {**os.environ, "MCPTAPE_DIR": str(tmp_path)}
    slow = [sys.executable, "-c", "import time; time.sleep(1)"]
    procs = [subprocess.Popen([MCPTAPE, "record", "-o", "srv-{n}.mcptape", "--", *slow], env=env,
                              stdin=subprocess.DEVNULL) for _ in range(3)]
    assert [p.wait(20) for p in procs] == [0, 0, 0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["srv-1.mcptape", "srv-2.mcptape", "srv-3.mcptape"]
    assert subprocess.run([MCPTAPE, "record", "--", "true"], env=env).returncode == 0
    dated = [p for p in tmp_path.iterdir() if not p.name.startswith("srv-")]
    assert len(dated) == 1 and dated[0].name.endswith("-1.mcptape") and dated[0].name[:8].isdigit()
    refused = run_mcptape("record", "-o", "srv-1.mcptape", "--", "true", env=env)
    assert refused.returncode == 2 and "already exists" in refused.stderr
    unset = {k: v for k, v in os.environ.items() if k != "MCPTAPE_DIR"}
    assert "-o FILE is required" in run_mcptape("record", "--", "true", env=unset).stderr
    assert "unknown field" in run_mcptape("record", "-o", "{nope}.mcptape", "--", "true", env=env).stderr


def test_the_stdio_path_does_not_import_mitmproxy(tmp_path):
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "mcptape", "record", "-o",
                             str(tmp_path / "t.mcptape"), "--", "true"], capture_output=True, text=True)
    assert result.returncode == 0
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert "mcptape.capture.stdio" in imported
    assert not any(name.startswith(("mitmproxy", "asyncio", "deepdiff")) for name in imported)


def test_the_tape_is_causal_an_answer_is_never_recorded_before_what_it_answers(tmp_path):
    """The client sends the next ping only after it has the last answer: the tape must alternate exactly."""
    tape = tmp_path / "pingpong.mcptape"
    client = RawClient(wrapped(tape, *DEMO))
    client.handshake()
    for i in range(50):
        client.send({"jsonrpc": "2.0", "id": 100 + i, "method": "ping"})
        assert client.receive()["id"] == 100 + i
    client.close()
    directions = [r["dir"] for r in read(tape).records if r["kind"] == "stdio.line"]
    assert directions == ["c2s", "s2c", "c2s"] + ["c2s", "s2c"] * 50


def test_a_full_disk_stops_the_recording_not_the_server(tmp_path):
    """The tape may not grow past 1 KiB (ulimit -f): the client still gets every answer."""
    tape = tmp_path / "full.mcptape"
    argv = ["bash", "-c", 'trap "" XFSZ; ulimit -f 1; exec "$@"', "limit", *wrapped(tape, *DEMO)]
    client = RawClient(argv)
    client.handshake()
    for i in range(20):
        client.send({"jsonrpc": "2.0", "id": 100 + i, "method": "ping"})
        assert client.receive()["id"] == 100 + i
    assert client.close() == 0
    assert b"mcptape: recording stopped" in client.proc.stderr.read()
    recorded = read(tape)  # what was written before the disk filled is intact
    assert recorded.records[0]["kind"] == "capture.start"
    assert recorded.truncated is None  # records go out several to a write: a cut one is taken back whole


HUGE_AND_DEEP = r"""
import sys
out = sys.stdout.buffer
out.write(b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"' + b"x" * 10_000_000 + b'"}]}}\n')
out.write(b"[" * 600 + b"]" * 600 + b"\n")
out.write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"after"}}\n')
"""


def test_a_ten_megabyte_line_and_json_nested_too_deep_are_relayed_and_recording_goes_on(tmp_path):
    tape = tmp_path / "hostile.mcptape"
    direct = subprocess.run([sys.executable, "-c", HUGE_AND_DEEP], capture_output=True, stdin=subprocess.DEVNULL)
    through = subprocess.run(wrapped(tape, sys.executable, "-c", HUGE_AND_DEEP), capture_output=True,
                             stdin=subprocess.DEVNULL)
    assert through.returncode == direct.returncode == 0
    assert through.stdout == direct.stdout and through.stderr == b""
    huge, deep, after = lines(read(tape), "s2c")
    assert len(huge["msg"]["result"]["content"][0]["text"]) == 10_000_000
    assert deep["raw"] == b"[" * 600 + b"]" * 600 and "nested deeper than 500" in deep["problem"]
    assert after["msg"]["params"]["data"] == "after"


def test_the_client_dying_mid_call_ends_the_server_and_the_tape_cleanly(tmp_path):
    """The client vanishes while a call streams progress: its pipes close on both ends at once. The wrapper closes
    the server's stdin (as the client's death would have), lets it end, and closes the tape."""
    tape = tmp_path / "orphan.mcptape"
    client = RawClient(wrapped(tape, *DEMO))
    client.handshake()
    client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {**SLOW_CALL, "_meta": {"progressToken": "t"}}})
    assert client.receive()["method"] == "notifications/progress"
    client.proc.stdin.close()
    client.proc.stdout.close()  # nobody reads the server's answers any more
    code = client.proc.wait(30)  # it ends, not hangs, and exits as its server did
    recorded = read(tape)
    assert recorded.truncated is None and recorded.records[-1]["kind"] == "capture.stop"
    assert next(r for r in recorded.records if r["kind"] == "stdio.exit")["code"] == code
