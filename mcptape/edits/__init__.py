"""Edits: faults injected on purpose (an expired session, a 401, a dropped response, a cut stream, a delay).

One language (language.py), decided without I/O (decide.py), turned into what to do and what the log says
(effects.py, events.py) for the replay (replay/) and the live proxy and stdio wrapper (capture/), which only do the
I/O.
"""

from .decide import SESSION_NOT_FOUND, Editor, Plan, describe, dry_run, reach
from .effects import (RESET_ENDED, WITHHELD_ENDED, Announce, Effect, Exit, Hold, Reply, Reset, Rewrite, Withhold,
                      announce, delivers, edit_body, hold, instead, not_on_compressed_stream, on_channel, withhold)
from .events import ChannelEditor, EditedEvents, StreamEditor, edit_events, final_response, malform
from .language import ACTIONS, Edit, EditError, Selector, check_transport, parse, parse_file

__all__ = ["ACTIONS", "RESET_ENDED", "SESSION_NOT_FOUND", "WITHHELD_ENDED", "Announce", "ChannelEditor", "Edit",
           "EditError", "EditedEvents", "Editor", "Effect", "Exit", "Hold", "Plan", "Reply", "Reset", "Rewrite",
           "Selector", "StreamEditor", "Withhold", "announce", "check_transport", "delivers", "describe", "dry_run",
           "edit_body", "edit_events", "final_response", "hold", "instead", "malform", "not_on_compressed_stream",
           "on_channel", "parse", "parse_file", "reach", "withhold"]
