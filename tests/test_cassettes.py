"""The cassettes: each committed tape is flagged with the rule that names its bug; each replays to its own client,
which meets the bug again; a re-recording differs from the committed tape in nothing but what always differs."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MCPTAPE, run_mcptape, stop

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"
UNBUFFERED = {**os.environ, "PYTHONUNBUFFERED": "1"}  # `mcptape replay` prints its URL on stdout, block-buffered in a pipe

# story -> ({rule: whom it blames} in what `check` says of its tapes together, check's exit status)
EXPECTED = {
    # declare-logging: the SDK server's tools log without the logging capability declared (docs/rules.md)
    "cancelled-call": ({"cancelled-without-response": "none", "declare-logging": "server"}, 1),
    "session-not-found-401": ({"dead-session-reuse": "client", "wrong-status-for-dead-session": "server"}, 1),
    "thread-ids": ({"dead-id-reuse": "none"}, 0),
    "expired-session-404": ({"no-reinitialize": "client", "dead-session-reuse": "client"}, 1),
    "deleted-session-400": ({"wrong-status-for-dead-session": "server", "dead-session-reuse": "client"}, 1),
    "resumed-stream": ({"declare-logging": "server"}, 1),
}


def _stories() -> dict[str, tuple[str, str, list[str]]]:
    """record_all.STORIES: story -> (script, transport, tapes)."""
    spec = importlib.util.spec_from_file_location("record_all", CASSETTES / "record_all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.STORIES


STORIES = _stories()


def paths(story: str, folder: Path = CASSETTES) -> list[str]:
    return [str(folder / f"{tape}.mcptape") for tape in STORIES[story][2]]


def findings(*tapes: str) -> tuple[dict[str, str], int]:
    result = run_mcptape("check", *tapes, "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    return {f["rule"]: f["blames"] for f in json.loads(result.stdout)["findings"]}, result.returncode


def test_every_tape_has_a_story():
    assert {p.stem for p in CASSETTES.glob("*.mcptape")} == {tape for *_, tapes in STORIES.values() for tape in tapes}
    assert set(EXPECTED) == set(STORIES)
    for script, *_ in STORIES.values():
        assert (CASSETTES / f"{script}.py").is_file()


@pytest.mark.parametrize("story", EXPECTED)
def test_check_names_the_bug(story):
    assert findings(*paths(story)) == EXPECTED[story]


@pytest.mark.parametrize("story", sorted(STORIES))
def test_requirements_gives_each_cassette_a_verdict_per_requirement_and_fails_what_check_names(story):
    from mcptape.check import run
    from mcptape.check.requirements import REGISTRY

    tapes = paths(story)
    outcome = run(tapes, requirements=True)
    assert len(outcome.rows) == len(tapes) * len(REGISTRY)
    broken = {row.requirement.id for row in outcome.rows if row.verdict.value in ("fail", "warn")}
    assert broken == {f.rule for f in outcome.findings if f.severity != "info"}
    assert broken <= set(EXPECTED[story][0])


def test_a_thread_id_is_only_dead_beside_the_process_that_issued_it():
    assert findings(paths("thread-ids")[1]) == ({}, 0)


def test_the_resumed_stream_is_resumed_with_last_event_id():
    from mcptape.tape.file import read

    records = read(paths("resumed-stream")[0]).records
    resumed = [r for r in records if r["kind"] == "http.request" and r["method"] == "GET"
               and any(name.lower() == "last-event-id" for name, _ in r["headers"])]
    assert len(resumed) == 1
    on_resume = [r for r in records if r.get("exchange") == resumed[0]["exchange"] and r["kind"] == "sse.event"]
    assert any("result" in (r.get("msg") or {}) for r in on_resume)


def _replay_http(tape: str, log: Path, script: str) -> None:
    replay = subprocess.Popen([MCPTAPE, "replay", tape, "--log", str(log)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=UNBUFFERED)
    try:
        url = None
        while url is None:
            line = replay.stdout.readline()
            assert line, f"mcptape replay exited early ({replay.wait()})"
            url = (re.search(r" at (http://\S+)", line) or [None, None])[1]
        client = subprocess.run([sys.executable, f"{script}.py", "client", url], cwd=CASSETTES, capture_output=True,
                                text=True, timeout=60)
        assert client.returncode == 0, client.stderr
    finally:
        assert stop(replay, signal.SIGINT) == 0


@pytest.mark.parametrize("story", EXPECTED)
def test_each_story_replays_and_its_client_meets_the_bug_again(tmp_path, story):
    """The story's own client against the replayed tapes: what it did (the replay's log) shows the same bug."""
    script, transport, tapes = STORIES[story]
    expected = EXPECTED[story][0]
    logs = [tmp_path / f"{tape}.log.mcptape" for tape in tapes]
    if transport == "http":
        _replay_http(paths(story)[0], logs[0], script)
    else:
        servers = []
        for tape, log in zip(paths(story), logs):
            servers += ["--", MCPTAPE, "replay", tape, "--stdio", "--log", str(log)]
        client = subprocess.run([sys.executable, f"{script}.py", "client", *servers], cwd=CASSETTES,
                                capture_output=True, text=True, timeout=60)
        assert client.returncode == 0, client.stderr
    found, _ = findings(*map(str, logs))
    assert {rule: found.get(rule) for rule in expected} == expected
    if story == "resumed-stream":  # nothing wrong but the server's logging, and the client resumed here too
        assert set(found) == {"declare-logging"}
        assert "Last-Event-ID" in run_mcptape("show", str(logs[0])).stdout


def test_a_rerecording_differs_only_in_what_always_differs(tmp_path):
    rerecorded = subprocess.run([sys.executable, str(CASSETTES / "record_all.py"), "session-not-found-401",
                                 "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert rerecorded.returncode == 0, rerecorded.stderr
    committed, again = paths("session-not-found-401"), paths("session-not-found-401", tmp_path)
    assert Path(again[0]).read_bytes() != Path(committed[0]).read_bytes()  # new times, a new session id
    result = run_mcptape("diff", committed[0], again[0])
    assert (result.returncode, result.stdout.strip()) == (0, "no differences"), result.stdout
    assert findings(*again) == findings(*committed)


def test_record_all_names_its_stories():
    result = subprocess.run([sys.executable, str(CASSETTES / "record_all.py"), "nope"], capture_output=True,
                            text=True)
    assert result.returncode == 2 and "no story named 'nope'" in result.stderr
