"""docs/layout.md is the package's map: every top-level module and folder of mcptape/ has its line there, and every
room the map names exists, so the map stays true as rooms are added, renamed or removed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rooms() -> set[str]:
    package = ROOT / "mcptape"
    found = {p.name for p in package.iterdir() if p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py")}
    found |= {p.name + "/" for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return found


def mapped() -> set[str]:
    text = (ROOT / "docs" / "layout.md").read_text()
    block = text.split("```", 2)[1]
    package = block.split("\naddons/", 1)[0]  # the package's rooms come first, at two spaces
    return set(re.findall(r"^  ([\w.]+(?:\.py|/))\s", package, re.MULTILINE))


def test_every_room_of_the_package_is_on_the_map_and_every_room_on_the_map_exists():
    assert rooms() - mapped() == set(), "rooms docs/layout.md does not name"
    assert mapped() - rooms() == set(), "rooms docs/layout.md names that do not exist"
