"""How `show`, `record`'s live view and `check` paint a line on a terminal: text from a tape made safe (terminal.py),
coloured in the tone of what it says."""

from __future__ import annotations

from .. import terminal
from ..tape import records

# Tones a line is painted in on a terminal: what went wrong, what looks wrong, what mcptape made up, who spoke.
ERROR, WARNING, INJECTED = "error", "warning", "injected"
_TONES = {ERROR: {"fg": "red", "bold": True}, WARNING: {"fg": "yellow"}, INJECTED: {"fg": "magenta"},
          records.C2S: {"fg": "cyan"}, records.S2C: {"fg": "green"}, "dim": {"dim": True}}


def paint(text: str, tone: str | None, colour: bool) -> str:
    """Text from a tape made safe for a terminal (terminal.py), coloured in its tone when asked."""
    return terminal.paint(text, _TONES.get(tone) if tone else None, colour)
