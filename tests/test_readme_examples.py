"""The READMEs' and docs' examples run as written, from a checkout. Run: every line of a ```sh block that names a
tape in cassettes/, and every line that says how it exits (`# exit N`), in file order, in one scratch folder per file
(the README's quickstart is tests/peers/test_quickstart.py's), where `cassettes` is the checkout's (so what they
write lands there, never among the tapes). A line is expected to exit as its comment says, 0 when it says nothing;
a replay served over HTTP is started, must print its URL, and must stop cleanly on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from .conftest import BIN, stop

ROOT = Path(__file__).resolve().parent.parent
READMES = [ROOT / "README.md", ROOT / "cassettes" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def examples(readme: Path) -> list[tuple[str, int]]:
    """(command, expected exit status) for each line to run, in order."""
    found = []
    text = re.sub(r"^## Quickstart\n.*?(?=^## )", "", readme.read_text(), flags=re.S | re.M)
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            command, _, comment = line.partition("  #")
            said = re.search(r"\bexit (\d)", comment)
            if command.strip() and (re.search(r"cassettes/\S+\.mcptape", command) or said):
                found.append((command.strip(), int(said[1]) if said else 0))
    return found


# only the files that have examples to run (a file without one is not a skipped test, just not this test's)
@pytest.mark.parametrize("readme", [r for r in READMES if examples(r)], ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run_as_written(readme, tmp_path):
    todo = examples(readme)
    (tmp_path / "cassettes").symlink_to(ROOT / "cassettes")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONUNBUFFERED": "1"}
    for command, status in todo:
        if command.startswith("mcptape replay") and "--stdio" not in command:
            server = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=tmp_path, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            line = server.stdout.readline()
            code = stop(server, signal.SIGINT)
            assert "http://127.0.0.1:" in line and code == status, (command, line, server.stderr.read())
            continue
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == status, (command, done.stdout[-2000:], done.stderr[-2000:])


def test_the_readme_and_its_docs_index_name_every_doc():
    docs = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md")
    index = (ROOT / "docs" / "README.md").read_text()
    assert [name for name in docs if f"]({name})" not in index] == []
    assert len((ROOT / "README.md").read_text().splitlines()) <= 400
    assert sum(bool(examples(r)) for r in READMES) >= 4  # the files whose examples run (the README, gauntlet.md…)


def test_every_link_between_the_readme_and_docs_lands():
    for page in [ROOT / "README.md", ROOT / "cassettes" / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).is_file(), (page, target)
