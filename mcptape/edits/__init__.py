"""Edits: faults injected on purpose (an expired session, a 401, a dropped response, a cut stream, a delay).

One language (language.py), decided without I/O (decide.py, events.py), applied by the replay (replay/http.py,
replay/stdio.py) and by the live proxy (capture/mitm.py).
"""

from .decide import SESSION_NOT_FOUND, Editor, Plan, describe, dry_run
from .events import ChannelEditor, StreamEditor, edit_events, final_response, malform
from .language import ACTIONS, Edit, EditError, Selector, check_transport, parse, parse_file

__all__ = ["ACTIONS", "SESSION_NOT_FOUND", "ChannelEditor", "Edit", "EditError", "Editor", "Plan", "Selector", "StreamEditor",
           "check_transport", "describe", "dry_run", "edit_events", "final_response", "malform", "parse",
           "parse_file"]
