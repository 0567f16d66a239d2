"""Across processes, with real peers: the pytest plugin parses a marker's edit once (at collection) and hands it
to the recorder and to the stdio replay as JSON data, which they rebuild without parsing the edit language again;
and every line the recorder prints for people can be reworded without the plugin's record modes noticing (they
read its address from --ready-fd). The same in memory: tests/core/test_front_door.py."""

from __future__ import annotations

import os
import textwrap

import mcptape.edits
from mcptape.edits import language

# Loaded by every interpreter the test starts (sitecustomize, before mcptape): each line click prints is reworded,
# and each call of the edit parser leaves a line in $PARSES, as does each process that ran mcptape.
SITECUSTOMIZE = """
import atexit, os, sys
import click

_echo = click.echo
def echo(message=None, *args, **kwargs):
    return _echo(None if message is None else "reworded " + str(message)[::-1], *args, **kwargs)
click.echo = echo

def note(line):
    with open(os.environ["PARSES"], "a") as f:
        f.write(line + "\\n")

import mcptape.edits, mcptape.edits.language as language
_parse = language.parse
def parse(text):
    note("parsed " + text)
    return _parse(text)
language.parse = mcptape.edits.parse = parse
atexit.register(lambda: "mcptape" in " ".join(sys.argv) and note("ran " + " ".join(sys.argv[1:3])))
"""

SUITE = """
import os
import anyio
import pytest
from mcp import StdioServerParameters
from mcptape.demo.client import script

EDIT = "delay seconds=0.01 at=tools/call#1"

@pytest.mark.mcptape(upstream={upstream!r}, edits=[EDIT])
def test_add(mcptape):
    lines = anyio.run(script, mcptape.url, "legacy")
    assert 'add {{"result": 5}}' in lines
    assert [e.text for e in mcptape.spec.edits] == [EDIT]
    if not mcptape.recording:  # the stdio replay, started by the client with this environment
        argv = mcptape.command
        assert "--edit" not in argv and "--edits-json" in argv
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        assert anyio.run(script, params, "legacy") == lines
    mcptape.assert_clean()
"""


def test_a_marker_edit_is_parsed_once_and_a_reworded_recorder_still_records(pytester, monkeypatch, demo_server):
    site, parses = pytester.mkdir("site"), pytester.path / "parses.txt"
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("PARSES", str(parses))
    monkeypatch.delenv("MCPTAPE_RECORD_MODE", raising=False)
    upstream = demo_server()
    real = language.parse

    def counting(text: str):  # this process: the one pytester runs the suite in
        with open(parses, "a") as f:
            f.write(f"parsed {text}\n")
        return real(text)

    monkeypatch.setattr(language, "parse", counting)
    monkeypatch.setattr(mcptape.edits, "parse", counting)
    pytester.makepyfile(test_app=textwrap.dedent(SUITE.format(upstream=upstream)))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # (as the project's own ini)

    pytester.runpytest("--mcptape-record-mode=once").assert_outcomes(passed=1)  # recorded (over HTTP, reworded)
    tape = pytester.path / "cassettes" / "test_app" / "test_add.mcptape"
    assert tape.exists()
    said = parses.read_text().splitlines()
    assert said.count("parsed delay seconds=0.01 at=tools/call#1") == 1
    assert "ran record -o" in said  # the recorder ran with the reworded lines (and parsed nothing)

    parses.unlink()
    pytester.runpytest().assert_outcomes(passed=1)  # replayed over HTTP in process, and over stdio
    said = parses.read_text().splitlines()
    assert said.count("parsed delay seconds=0.01 at=tools/call#1") == 1
    assert [line for line in said if line.startswith("ran ")] == ["ran replay " + str(tape)]
