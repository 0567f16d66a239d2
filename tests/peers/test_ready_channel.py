"""Programs that start the recorder learn its address from a machine-readable line on a descriptor they pass
(`--ready-fd`), never from the sentences it prints for people: rewording every one of those changes nothing."""

from __future__ import annotations

import json
import os
import subprocess

import anyio

import mcptape
from mcptape.demo.client import script
from mcptape.tape.file import Reader

from ..conftest import MCPTAPE, stop

# Loaded by the recorder's interpreter before mcptape (sitecustomize): every line click prints is reworded.
REWORD = """
import click
_echo = click.echo
def echo(message=None, *args, **kwargs):
    return _echo(None if message is None else "reworded " + str(message)[::-1], *args, **kwargs)
click.echo = echo
"""


def test_a_reworded_recorder_still_records_through_mcptape_recording(tmp_path, demo_server, monkeypatch):
    (tmp_path / "sitecustomize.py").write_text(REWORD)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    tape = tmp_path / "run.mcptape"
    with mcptape.recording(tape, upstream=demo_server()) as url:
        lines = anyio.run(script, url, "legacy")
    assert any("countdown" in line for line in lines)
    methods = [r["msg"].get("method") for r in Reader(str(tape)) if isinstance(r.get("msg"), dict)]
    assert "initialize" in methods and "tools/call" in methods


def test_the_ready_line_names_the_url_and_eof_says_it_never_listened(tmp_path, demo_server):
    upstream = demo_server()
    read, write = os.pipe()
    proc = subprocess.Popen([MCPTAPE, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o",
                             str(tmp_path / "a.mcptape"), "--ready-fd", str(write)], pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read) as channel:
            ready = json.loads(channel.readline())
        assert ready["mode"] == "reverse" and ready["tape"] == str(tmp_path / "a.mcptape")
        assert ready["url"].startswith(ready["listen"]) and ready["url"].endswith("/mcp")
    finally:
        stop(proc)
    # a recorder that cannot start (its tape exists) closes the descriptor without a line
    (tmp_path / "b.mcptape").write_bytes(b"")
    from mcptape.capture.recording import record_argv, start

    failed, ready = start(record_argv(str(tmp_path / "b.mcptape"), upstream=upstream), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    assert ready is None
    assert failed.wait(30) == 2 and "already exists" in failed.stderr.read()
