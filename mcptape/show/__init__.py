"""`mcptape show`: which records a selection picks (selection.py), each with what the model knows of it (rows.py),
what it says (what.py: the timeline's "what" column), as the timeline's lines or one record whole (timeline.py),
painted for a terminal (paint.py). The names below are the room's front door: the command, the live view, check
and the report use them."""

from .paint import ERROR, INJECTED, WARNING, paint
from .rows import Row, rows
from .selection import Selection, grep_text, parse_around, parse_status
from .timeline import HEADING, lines, timeline, whole
from .what import describe

__all__ = ["ERROR", "HEADING", "INJECTED", "WARNING", "Row", "Selection", "describe", "grep_text", "lines", "paint",
           "parse_around", "parse_status", "rows", "timeline", "whole"]
