"""Text from a tape or a peer made inert before it is shown: the one place that decides what may reach a terminal.

A tool result, a method name, an error message, an SSE comment, a server's stderr line or a bundle's member name
was written by whoever made the tape. Printed raw, `ESC[2J` clears the screen, OSC 52 writes the clipboard, OSC 8
plants a link, OSC 0 retitles the window, CR and BS overwrite what was printed, C1 controls are escapes of their
own on some terminals, and a bidi override (U+202E) reorders what the reader sees. So every C0 control except tab
(newline too: one record, one line), DEL, every C1 control and the bidi overrides and isolates are shown as escapes
(`\\x1b`, `\\u202e`); mcptape's own colours (`paint`) are the only escape sequences it writes.

`safe` is for text (`safe_lines` keeps its newlines); `safe_json` keeps JSON valid (it writes `\\u001b` forms, and
JSON already escapes C0 itself).
"""

from __future__ import annotations

import re

import click

# C0 but tab, DEL, C1; the bidi embeddings/overrides (U+202A-U+202E), isolates (U+2066-U+2069), and the marks
# LRM/RLM/ALM, which reorder text as much as an override does in a short line.
# (Patterns, compiled by `re` when first used and kept in its cache: most text is printable, and compiling them costs
# every command's start half a millisecond.)
_REORDERING = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_REORDERING}]"
# In JSON text a C0 control is already escaped inside strings and only whitespace outside them, which is layout.
_UNSAFE_IN_JSON = f"[\x7f-\x9f{_REORDERING}]"


def _text_escape(found: re.Match) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: str) -> str:
    """Text fit for a terminal: every control and reordering character shown as an escape."""
    if text.isprintable():  # (every character the pattern names is a control or format character: not printable)
        return text
    return re.sub(_UNSAFE, _text_escape, text)


def safe_lines(text: str) -> str:
    """Text of several lines fit for a terminal: each line made safe, the newlines between them kept."""
    return "\n".join(safe(line) for line in text.split("\n"))


def safe_json(text: str) -> str:
    """JSON text fit for a terminal, still the same JSON: what JSON leaves raw (DEL, C1, bidi) as \\uXXXX. JSON
    escapes C0 itself, so the only unsafe characters in its text are inside strings, where \\uXXXX means them."""
    if text.isprintable():
        return text
    return re.sub(_UNSAFE_IN_JSON, lambda m: f"\\u{ord(m.group()):04x}", text)


def paint(text: str, style: dict | None, colour: bool) -> str:
    """Plain text made safe, then coloured when asked: the only way mcptape writes an escape sequence."""
    text = safe(text)
    return click.style(text, **style) if colour and style and text else text
