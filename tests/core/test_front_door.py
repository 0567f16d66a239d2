"""The front door, in memory: values parsed once at the option and passed down as objects. An edit is parsed once
per input; it crosses to another process of mcptape's as JSON data (`--edits-json`), rebuilt without reading the
edit language again (a counter in place of the parser shows it). Bad values are one line and exit 2. The pytest
plugin and the recorder across processes: tests/peers/test_parse_once.py."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import mcptape.edits
from mcptape.capture.recording import record_argv, recording
from mcptape.cli import main
from mcptape.edits import EditError, language
from mcptape.model import STDIO
from mcptape.output import WriteMode
from mcptape.testing.builder import Conversation
from mcptape.wire import pointer

EDITS = [
    "expire-session status=401 body=\"Unauthorized: Session not found\" at=post:3",
    "status code=429 header=\"Retry-After: 2\" header=\"X-Why: busy\" at=tools/call#2 times=all",
    "delay seconds=2.5 at=after:500ms",
    "drop at=id:7",
    "close-stream after=0 at=session:2 times=3",
    "malformed kind=wrong-id at=tools/list",
    "refuse-discover answer=none",
    "error code=-32603 message='it broke' at=initialize  # a trailing comment",
]


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """Every call of the edit parser, by whatever name it is reached."""
    calls: list[str] = []
    real = language.parse

    def counting(text: str):
        calls.append(text)
        return real(text)

    monkeypatch.setattr(language, "parse", counting)
    monkeypatch.setattr(mcptape.edits, "parse", counting)
    return calls


def fields(edit) -> tuple:
    return edit.text, edit.action, edit.at, edit.times, edit.options


def stdio_tape(tmp_path) -> str:
    tape = Conversation(transport=STDIO)
    tape.initialize()
    tape.call("tools/call", {"name": "add"}, result={"content": []})
    tape.call("tools/call", {"name": "add"}, result={"content": []})
    return tape.write(tmp_path / "stdio.mcptape")


def test_an_edit_crosses_as_json_and_comes_back_whole_without_a_parse(parses):
    edits = [language.parse(text) for text in EDITS]
    assert len(parses) == len(EDITS)
    text = language.dumps(edits)
    assert all(isinstance(item, dict) for item in json.loads(text))
    back = language.loads(text)
    assert [fields(e) for e in back] == [fields(e) for e in edits]
    assert len(parses) == len(EDITS)  # rebuilt, not parsed again


@pytest.mark.parametrize("bad", ["", "{}", "[1]", '[{"text": "x"}]', "not json",
                                 '[{"text": "x", "action": "teleport", "at": ["post", 1], "times": 1, "options": {}}]',
                                 '[{"text": "x", "action": "drop", "at": ["post", 1], "times": 1, '
                                 '"options": {"code": 1}}]',
                                 '[{"text": "x", "action": "drop", "at": ["post", [1]], "times": 1, "options": {}}]',
                                 '[{"text": "x", "action": "delay", "at": ["id", "7"], "times": 1, '
                                 '"options": {"seconds": {"a": 1}}}]'])
def test_json_that_is_no_edit_of_mcptapes_is_refused_in_one_line(bad):
    with pytest.raises(EditError, match="--edits-json"):
        language.loads(bad)


def test_the_edits_command_parses_each_edit_once_and_json_edits_never(tmp_path, parses):
    tape = stdio_tape(tmp_path)
    given = CliRunner().invoke(main, ["edits", tape, "--edit", "drop at=tools/call#2", "--edit", "delay seconds=1 "
                                      "at=tools/call#1"])
    assert given.exit_code == 0, given.output
    assert len(parses) == 2
    edits = language.loads(language.dumps([language.parse("drop at=tools/call#2"),
                                           language.parse("delay seconds=1 at=tools/call#1")]))
    del parses[:]
    as_json = CliRunner().invoke(main, ["edits", tape, "--edits-json", language.dumps(edits)])
    assert as_json.exit_code == 0 and parses == []
    assert as_json.output == given.output  # the same edits, the same dry run


def test_recording_parses_its_edits_once_and_hands_the_recorder_json(tmp_path, parses):
    with recording(tmp_path / "t.mcptape", command=["server"], edits=["drop at=tools/call#1"]) as argv:
        pass
    assert len(parses) == 1
    assert "--edit" not in argv and argv[argv.index("--append") - 2:argv.index("--append")] == ["-o", str(
        tmp_path / "t.mcptape")]
    [edit] = language.loads(argv[argv.index("--edits-json") + 1])
    assert edit.action == "drop" and str(edit.at) == "tools/call#1"
    assert len(parses) == 1
    # an edit parsed already (the pytest plugin's, from its marker) is not parsed again
    record_argv("t.mcptape", upstream="http://127.0.0.1:1/mcp", edits=[edit], write_mode=WriteMode.FORCE)
    with recording(tmp_path / "u.mcptape", command=["server"], edits=[edit]):
        pass
    assert len(parses) == 1


def test_a_bad_edit_in_recording_is_one_line_before_anything_starts(tmp_path):
    with pytest.raises(Exception, match="unknown action 'teleport'") as raised:
        with recording(tmp_path / "t.mcptape", command=["server"], edits=["teleport at=post:1"]):
            pass
    assert type(raised.value).__name__ == "RecordingError"


def test_a_json_pointer_is_parsed_once_at_the_option_and_stays_text():
    given = pointer.Pointer("/params/arguments/a~1b")
    assert given == "/params/arguments/a~1b" and json.dumps(given) == '"/params/arguments/a~1b"'
    assert pointer.parse(given) == ["params", "arguments", "a/b"]
    with pytest.raises(ValueError, match="--keep-path 'params': a JSON pointer starts with /"):
        pointer.Pointer("params", "--keep-path")


@pytest.mark.parametrize(("args", "said"), [
    (["replay", "T", "--pace", "slow"], "--pace 'slow': use fast, recorded, or xN"),
    (["replay", "T", "--ignore", "params"], "--ignore 'params': a JSON pointer starts with /"),
    (["replay", "T", "--edit", "drop"], "at=SELECTOR is required"),
    (["replay", "T", "--edits-json", "[1]"], "--edits-json"),
    (["record", "-o", "T", "--keep-path", "x", "--", "server"], "--keep-path 'x': a JSON pointer starts with /"),
    (["verify", "T", "--secret", "/headers/authorization"], "--secret '/headers/authorization': write POINTER=ENVVAR"),
    (["verify", "T", "--secret", "/headers/x=MCPTAPE_NOT_SET_ANYWHERE"], "MCPTAPE_NOT_SET_ANYWHERE is not set"),
    (["gauntlet", "T", "--fail-on", "failed,lost", "--", "client"], "--fail-on 'failed,lost': choose from"),
    (["record", "--mode", "sideways", "-o", "T"], "'sideways' is not one of 'reverse', 'regular'"),
])
def test_a_bad_value_is_refused_at_its_option_in_one_line(args, said, tmp_path):
    out = CliRunner().invoke(main, [str(tmp_path / "none.mcptape") if a == "T" else a for a in args])
    assert out.exit_code == 2, out.output
    [line] = out.output.splitlines()
    assert line.startswith("mcptape: ") and said in line


def test_every_command_shows_an_example_in_its_help():
    for name in main.list_commands(None):
        out = CliRunner().invoke(main, [name, "--help"])
        assert out.exit_code == 0 and "mcptape " + name in out.output.split("Options:")[0], name
