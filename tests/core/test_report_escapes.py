"""The report's Markdown and Mermaid carry tape text as the terminal does (terminal.safe): no control or reordering
character from a tape comes out raw, whatever the page is written to, and the page keeps its shape. The JSON report
on stdout is escaped as `export` escapes JSON there."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from mcptape.cli import main
from mcptape.report import build, render
from mcptape.testing.builder import Conversation

HOSTILE = "a\x1b[31mb\x07c\u202ed\x9be\x7ff\r\nSPLIT"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tape = Conversation()
    tape.initialize()
    tape.call("tools/call", {"name": f"tool{HOSTILE}"})
    tape.call("tools/call", {"name": "fails"}, error=(-32000, f"boom{HOSTILE}"))
    tape.call(f"x/{HOSTILE}")
    # a content item of no known type: a finding, so the result is quoted as evidence
    tape.call("tools/call", {"name": "odd"}, result={"content": [{"type": 5, "text": HOSTILE}]})
    return build([tape.write(tmp_path_factory.mktemp("tape") / "hostile.mcptape")])


@pytest.mark.parametrize("fmt", ["md", "mermaid"])
def test_no_control_character_comes_out_raw(report, fmt):
    page = render(report, fmt)
    assert RAW.findall(page) == []
    shown = page.replace("#92;", "\\").replace("\\\\", "\\").replace("\\[", "[")  # Mermaid's and Markdown's escapes
    assert "a\\x1b[31mb\\x07c\\u202ed\\x9be\\x7ff" in shown  # every other output shows them so


def test_tape_text_keeps_the_markdown_shape(report):
    page = render(report, "md")
    assert "\\u202ed\\u009be\\u007ff" in page  # in the result quoted as JSON: still JSON
    assert not [line for line in page.splitlines() if line.startswith("SPLIT")]
    rows = [line for line in page.splitlines() if line.startswith("| ")]
    assert rows and all(len(re.findall(r"(?<!\\)\|", row)) == row.count(" | ") + 2 for row in rows)


def test_the_json_report_on_stdout_is_escaped_and_the_same_json(report):
    tape = report["tapes"][0]["path"]
    out = CliRunner().invoke(main, ["report", tape, "--format", "json"]).output
    assert RAW.findall(out) == [] and json.loads(out) == json.loads(render(report, "json"))
