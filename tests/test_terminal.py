"""Text from a tape never reaches a terminal raw: each class of escape a stranger's tape can carry, through every
command that prints tape text (show on a pseudo-terminal and piped, diff, check, the live view, a bundle's member
names). What must come out is the escape made visible (`\\x1b`), never the byte itself; mcptape's own colours are the
only escape sequences in the output."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import zipfile

import pytest
from click.testing import CliRunner

from mcptape.cli import main
from mcptape.tape import records
from mcptape.terminal import safe, safe_json

from .conftest import MCPTAPE, write_tape

ATTACKS = {  # class -> (what a peer sends, what the bytes that must never come out raw are)
    "csi-not-sgr": ("\x1b[2J\x1b[H", "\x1b"),
    "osc-52": ("\x1b]52;c;cm0gLXJmIH4=\x07", "\x1b"),
    "osc-8": ("\x1b]8;;https://evil.invalid/\x1b\\click\x1b]8;;\x1b\\", "\x1b"),
    "osc-0": ("\x1b]0;pwned\x07", "\x1b"),
    "cr": ("safe\roverwritten", "\r"),
    "bs": ("abc\b\b\bxyz", "\b"),
    "bel": ("ding\x07", "\x07"),
    "c1": ("\x9b2J\x9d0;title\x9c", "\x9b"),
    "bidi": ("txt.\u202eexe.sh", "\u202e"),
}
SGR = re.compile(r"\x1b\[[0-9;]*m")  # what click.style writes: mcptape's own colours


def raw_left(output: str, attack: str) -> list[str]:
    """The characters of the attack that came out raw (mcptape's own colours taken out first)."""
    text = SGR.sub("", output)
    _, forbidden = ATTACKS[attack]
    return [c for c in set(ATTACKS[attack][0]) | {forbidden}
            if c in text and (c < " " and c not in "\t\n" or "\x7f" <= c <= "\x9f" or c == "\u202e")]


def stdio_tape(path, text: str, answer: str = "ok") -> str:
    """A stdio conversation carrying `text` in a method name, a tool name, a result, an error message, a
    notification and the server's stderr; one request is never answered (so check has a finding that names it)."""
    def line(t, direction, msg):
        return records.stdio_line(t, direction, json.dumps(msg).encode())

    return write_tape(path, [
        line(1.0, records.C2S, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": text, "version": "1"}}}),
        line(1.1, records.S2C, {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18",
                                                                      "capabilities": {"tools": {}}, "serverInfo":
                                                                      {"name": text, "version": "1"}}}),
        line(1.2, records.C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        line(1.3, records.C2S, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": text, "arguments": {}}}),
        line(1.4, records.S2C, {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text",
                                                                                   "text": answer + text}]}}),
        line(1.5, records.C2S, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}),
        line(1.6, records.S2C, {"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": text}}),
        line(1.7, records.C2S, {"jsonrpc": "2.0", "id": 3, "method": f"tools/{text}"}),
        records.stdio_stderr(1.8, f"warning {text}".encode()),
    ])


def in_process(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output and not isinstance(result.exception, (TypeError, AttributeError)), \
        result.output
    return result.exit_code, result.output


def on_a_terminal(*args: str) -> str:
    """The real command with stdout and stderr on a pseudo-terminal (colours on, as a person sees it)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([MCPTAPE, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            env={**os.environ, "NO_COLOR": ""})
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the command and its terminal are gone
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(60) in (0, 1), out
    return out.decode("utf-8", "replace").replace("\r\n", "\n")  # the terminal's own line ends


@pytest.mark.parametrize("attack", ATTACKS)
def test_no_escape_from_a_tape_reaches_the_output_raw(tmp_path, attack):
    text, _ = ATTACKS[attack]
    a = stdio_tape(tmp_path / "a.mcptape", text)
    b = stdio_tape(tmp_path / "b.mcptape", text, answer="changed")
    visible = safe(text)
    assert visible != text and all(c >= " " and c < "\x7f" for c in visible)

    shown = on_a_terminal("show", a)
    assert "\x1b[" in shown  # the terminal's output is coloured: the only escapes are mcptape's
    assert not raw_left(shown, attack) and visible in shown, shown
    whole = on_a_terminal("show", f"{a}#4")
    assert not raw_left(whole, attack) and "changed" not in whole, whole
    for args in (["show", a], ["show", a, "--format", "jsonl"], ["show", a, "--format", "json"],
                 ["show", a, "--record", "4"], ["show", a, "--record", "8"], ["diff", a, b],
                 ["diff", a, b, "--format", "json"], ["check", a], ["check", a, "--format", "json"],
                 ["check", a, "--color"]):
        code, out = in_process(*args)
        assert code in (0, 1), out
        assert not raw_left(out, attack), (args, out)
    for doc in (in_process("show", a, "--format", "json")[1], in_process("check", a, "--format", "json")[1]):
        json.loads(doc)  # still JSON, saying the same thing
    assert text in json.loads(in_process("show", a, "--format", "json")[1])["records"][4]["msg"]["result"][
        "content"][0]["text"]
    assert f"tools/{visible}" in in_process("check", a)[1]  # the finding names the method, made visible
    assert visible in in_process("diff", a, b)[1]  # the changed result, as diff quotes it


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_bundle_member_name_is_shown_escaped(tmp_path, attack):
    text = ATTACKS[attack][0].replace("\\", "")  # a name with a backslash is not read as a tape at all
    tape = stdio_tape(tmp_path / "a.mcptape", "plain")
    bundle = tmp_path / "bug.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        z.write(tape, f"tapes/{text}.mcptape")
        z.write(tape, "tapes/second.mcptape")
    visible = safe(ATTACKS[attack][1])  # zip files keep names their own way ("//" is one "/"): look for the escape
    code, out = in_process("check", str(bundle))  # a finding cites the tape inside the bundle
    assert code == 0 and not raw_left(out, attack) and visible in out, out
    code, out = in_process("show", str(bundle))  # two tapes: the error lists them
    assert code == 2 and not raw_left(out, attack) and visible in out, out
    assert not raw_left(on_a_terminal("check", str(bundle)), attack)


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_live_view_shows_escapes_made_visible(attack):
    from pathlib import Path

    from mcptape.live import LiveView

    from .core.test_lifecycle import Synth, error

    text, _ = ATTACKS[attack]
    tape = Synth(Path("unused"))
    tape.call(tape.session)
    tape.call(tape.session, 404, error(text), injected=True)
    tape.post({"jsonrpc": "2.0", "id": 99, "method": f"tools/{text}", "params": {"name": text}}, "s2")
    for colour in (False, True):
        said: list[str] = []
        view = LiveView(said.append, colour)
        for record in tape.items:
            view.write(record)
        view.close()
        out = "\n".join(said)
        assert len(said) >= 3 and not raw_left(out, attack), said
        assert safe(text) in out


def test_safe_keeps_text_and_safe_json_keeps_json():
    assert safe("tab\tstays, ünïcode and emoji 🎉 stay") == "tab\tstays, ünïcode and emoji 🎉 stay"
    assert safe("a\x1b[2Jb\x7f\x85\u202e\u2066\n") == "a\\x1b[2Jb\\x7f\\x85\\u202e\\u2066\\x0a"
    doc = json.dumps({"k": "\x1b\x7f\x9b\u202e"}, ensure_ascii=False)
    assert json.loads(safe_json(doc)) == {"k": "\x1b\x7f\x9b\u202e"}
    assert not re.search("[\x7f-\x9f\u202e]", safe_json(doc))
