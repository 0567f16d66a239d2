"""Edits: faults injected on purpose (an expired session, a 401, a dropped response, a cut stream, a delay).

One language (language.py), decided without I/O (decide.py), turned into what to do and what the log says
(effects.py, events.py) for the replay (replay/) and the live proxy and stdio wrapper (capture/), which only do the
I/O.
"""

import importlib

# Each name is loaded from its module on first use (PEP 562): a replay without edits answers its first request
# without the edit language and its effects (start-up time, bench/replay_speed.py).
_MODULES = {
    "decide": ("SESSION_NOT_FOUND", "Editor", "Plan", "describe", "dry_run", "reach"),
    "effects": ("RESET_ENDED", "WITHHELD_ENDED", "Announce", "Effect", "Exit", "Hold", "Reply", "Reset", "Rewrite",
                "Withhold", "announce", "delivers", "edit_body", "hold", "instead", "not_on_compressed_stream",
                "on_channel", "withhold"),
    "events": ("ChannelEditor", "EditedEvents", "StreamEditor", "edit_events", "final_response", "malform"),
    "language": ("ACTIONS", "Edit", "EditError", "Selector", "check_transport", "parse", "parse_file"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return value


__all__ = ["ACTIONS", "RESET_ENDED", "SESSION_NOT_FOUND", "WITHHELD_ENDED", "Announce", "ChannelEditor", "Edit",
           "EditError", "EditedEvents", "Editor", "Effect", "Exit", "Hold", "Plan", "Reply", "Reset", "Rewrite",
           "Selector", "StreamEditor", "Withhold", "announce", "check_transport", "delivers", "describe", "dry_run",
           "edit_body", "edit_events", "final_response", "hold", "instead", "malform", "not_on_compressed_stream",
           "on_channel", "parse", "parse_file", "reach", "withhold"]
