"""The recorder in the path of real traffic, under faults: killed at any moment, a disk that fills, a SIGTERM in
the middle of a burst. The client never loses an answer to them and the tape always loads up to its last complete
record. The long versions run under `-m slow`; CI runs a few trials of each."""

from __future__ import annotations

import http.client
import json
import random
import signal
import threading
import urllib.error
import urllib.request

import pytest

from mcptape.tape.file import read

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
