"""The recorder in the path of real traffic, under faults: killed at any moment, a disk that fills, a SIGTERM in
the middle of a burst. The client never loses an answer to them and the tape always loads up to its last complete
record. The long versions run under `-m slow`; CI runs a few trials of each."""

from __future__ import annotations

import http.client
import json
import random
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest

from mcptape.replay import replaying
from mcptape.tape.file import Reader, read

from . import load

from .conftest import INIT, INITIALIZED, records_so_far, run_mcptape, start_recording, stop, wait_until

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class Client:
    """A session-era client over plain HTTP: initialize, then pings, each answer checked."""

    def __init__(self, url: str) -> None:
        self.url, self.session, self.answered = url, None, []
        _, headers, _ = self.post(INIT)
        self.session = headers["mcp-session-id"]
        self.post(INITIALIZED)

    def post(self, message: dict) -> tuple[int, dict, bytes]:
        headers = {**HEADERS, **({"Mcp-Session-Id": self.session, "MCP-Protocol-Version": "2025-11-25"}
                                 if self.session else {})}
        request = urllib.request.Request(self.url, data=json.dumps(message).encode(), headers=headers)
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()

    def ping(self, n: int) -> None:
        status, _, body = self.post({"jsonrpc": "2.0", "id": n, "method": "ping"})
        text = body.decode()
        assert status == 200 and f'"id":{n}' in text.replace(" ", ""), text
        self.answered.append(n)


def pings_in(tape) -> set[int]:
    return {r["msg"]["id"] for r in records_so_far(tape) if r["kind"] == "http.request"
            and isinstance(r.get("msg"), dict) and r["msg"].get("method") == "ping"}


def burst(client: Client, stop_at: threading.Event, start: int = 100) -> threading.Thread:
    def run() -> None:
        n = start
        while not stop_at.is_set():
            try:
                client.ping(n)
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError):
                return  # the recorder went away under the client: that is the trial
            n += 1
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def kill_trials(demo_server, tmp_path, trials: int) -> None:
    upstream = demo_server()
    rng = random.Random(trials)
    for trial in range(trials):
        tape = tmp_path / f"killed{trial}.mcptape"
        rec = start_recording(upstream, tape)
        client, done = Client(rec.url), threading.Event()
        thread = burst(client, done)
        at = rng.randint(1, 40)
        wait_until(lambda: len(pings_in(tape)) >= at, timeout=30, what=f"{at} pings in the tape")
        stop(rec.proc, signal.SIGKILL)
        done.set()
        thread.join(20)
        rec.proc.communicate()
        recorded = read(tape)  # never raises: at worst the last frame is torn
        assert recorded.records[0]["kind"] == "capture.start"
        assert pings_in(tape) >= set(client.answered[:-1]), "an answered ping is missing from the tape"
        assert run_mcptape("check", str(tape)).returncode in (0, 1)


def test_kill_9_at_random_points_leaves_a_tape_that_loads(demo_server, tmp_path):
    kill_trials(demo_server, tmp_path, 3)


@pytest.mark.slow
def test_kill_9_many_trials(demo_server, tmp_path):
    kill_trials(demo_server, tmp_path, 40)


def test_a_full_disk_stops_the_recording_not_the_traffic(demo_server, tmp_path):
    """The tape may not grow past 8 KiB (ulimit -f): the client still gets every answer, stderr says why once."""
    tape = tmp_path / "full.mcptape"
    rec = start_recording(demo_server(), tape, wrap=("bash", "-c", 'trap "" XFSZ; ulimit -f 8; exec "$@"', "limit"))
    client = Client(rec.url)
    for n in range(300):
        client.ping(n)
    code, _, err = rec.stop(signal.SIGTERM)
    assert err.count("mcptape: recording stopped") == 1, err
    assert "Traceback" not in err
    recorded = read(tape)
    assert recorded.records[0]["kind"] == "capture.start" and pings_in(tape) <= set(range(300))


def test_sigterm_in_a_burst_keeps_every_answered_exchange(demo_server, tmp_path):
    tape = tmp_path / "burst.mcptape"
    rec = start_recording(demo_server(), tape)
    client, done = Client(rec.url), threading.Event()
    thread = burst(client, done)
    wait_until(lambda: len(pings_in(tape)) >= 30, timeout=30, what="30 pings in the tape")
    code, _, err = rec.stop(signal.SIGTERM)
    done.set()
    thread.join(20)
    recorded = read(tape)
    assert recorded.truncated is None and recorded.records[-1]["kind"] == "capture.stop", err
    assert pings_in(tape) >= set(client.answered)


# -- load: many SDK clients at once through one recorder, then against one replay -----------------------------------

def load_through_recorder_and_replay(demo_server, tmp_path, clients: int, seconds: float) -> None:
    tape = tmp_path / "load.mcptape"
    rec = start_recording(demo_server(), tape)
    memory = load.RssSampler(rec.proc.pid)
    recorded_runs = anyio.run(load.many_clients, rec.url, clients, seconds)
    start_kb, end_kb = memory.stop()
    rec.stop()
    result = load.compare(recorded_runs, load.tape_calls(str(tape)))
    assert not result.problems, "\n".join(result.problems[:10])
    assert result.compared >= clients * 2
    print(f"\nrecorder: {result.compared} calls compared from {clients} sessions, none lost, duplicated, reordered "
          f"or misattributed; recorder RSS {start_kb // 1024} MB -> {end_kb // 1024} MB")
    assert end_kb - start_kb < 40_000, f"recorder memory grew from {start_kb} KB to {end_kb} KB"

    with replaying(str(tape)) as url:
        replayed = anyio.run(load.many_clients, url, clients, 0, [len(r.calls) // 2 for r in recorded_runs])
    for before, after in zip(recorded_runs, replayed):
        assert after.error is None, after.error
        assert after.calls == before.calls[:len(after.calls)] and len(after.calls) == len(before.calls) // 2 * 2


def test_many_clients_through_one_recorder_and_one_replay(demo_server, tmp_path):
    load_through_recorder_and_replay(demo_server, tmp_path, clients=8, seconds=2)


@pytest.mark.slow
def test_fifty_clients_for_a_minute(demo_server, tmp_path):
    load_through_recorder_and_replay(demo_server, tmp_path, clients=50, seconds=60)


def long_stream(tmp_path, count: int, rate: float) -> None:
    flood = subprocess.Popen([sys.executable, "-m", "tests.sse_flood", str(count), str(rate)],
                             stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent)
    try:
        upstream = f"http://127.0.0.1:{int(flood.stdout.readline())}/mcp"
        direct, _ = load.stream_delays(upstream)
        tape = tmp_path / "stream.mcptape"
        rec = start_recording(upstream, tape)
        memory = load.RssSampler(rec.proc.pid)
        through, received = load.stream_delays(rec.url)
        start_kb, end_kb = memory.stop()
        rec.stop()
    finally:
        stop(flood, signal.SIGKILL)
    assert received == len(direct) == count
    ids = [r["id"] for r in Reader(str(tape)) if r["kind"] == "sse.event"]
    assert ids == [str(i) for i in range(count)]  # every event, once, in order
    print(f"\n{count} events at {rate:g}/s; pass-through delay ms direct p50 {load.percentile(direct, .5):.2f} "
          f"p99 {load.percentile(direct, .99):.2f}; through mcptape record p50 {load.percentile(through, .5):.2f} "
          f"p99 {load.percentile(through, .99):.2f}; recorder RSS {start_kb // 1024} MB -> {end_kb // 1024} MB")
    assert end_kb - start_kb < 40_000, f"recorder memory grew from {start_kb} KB to {end_kb} KB"


def test_a_long_stream_passes_event_by_event_and_memory_stays_flat(tmp_path):
    long_stream(tmp_path, 4_000, 2_000)


@pytest.mark.slow
def test_a_hundred_thousand_events_on_one_stream(tmp_path):
    long_stream(tmp_path, 100_000, 2_000)


def test_the_load_comparison_catches_lost_duplicated_reordered_and_misattributed_calls():
    calls = [("add", (0, 0), 0, ()), ("countdown", (2, 0), "counted down from 2", (1, 2)), ("add", (0, 1), 1, ())]
    runs = [load.ClientRun(0, list(calls)), load.ClientRun(1, [("add", (1, 0), 1, ())])]
    assert not load.compare(runs, {"s0": calls, "s1": [("add", (1, 0), 1, ())]}).problems
    for s0 in ([calls[0], calls[2]], [calls[0], calls[0], *calls[1:]], [calls[1], calls[0], calls[2]],
               [*calls[:2], ("countdown", (2, 0), "counted down from 2", (1,)), calls[2]]):
        assert load.compare(runs, {"s0": s0, "s1": [("add", (1, 0), 1, ())]}).problems, s0
    assert load.compare(runs, {"s0": [*calls, ("add", (1, 0), 1, ())], "s1": []}).problems
