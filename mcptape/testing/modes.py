"""What the pytest plugin's record modes mean, as vcrpy's `RecordMode` says it (a closed set, one enum), and the
run-wide keys and options the plugin and a test's tapes share (here, so neither imports the other). Imports nothing
but pytest: pytest loads the plugin in every run of every suite where mcptape is installed."""

from __future__ import annotations

import os
from enum import StrEnum

import pytest

ENV_MODE = "MCPTAPE_RECORD_MODE"
ENV_UPSTREAM = "MCPTAPE_UPSTREAM"

STATE = pytest.StashKey["State"]()  # the run's (plugin.State)
SPECS = pytest.StashKey[list]()  # an item's tapes, from its markers, checked at collection
RERECORD = pytest.StashKey[set]()  # new_episodes: the tapes a test missed on, to record again


class RecordMode(StrEnum):
    """none: replay; a missing tape fails the test. once: replay the tape if it exists, else record it.
    new_episodes: replay; a miss runs the whole test again against the real server. all: record, keeping the old
    tape beside the new. rewrite: record, deleting the old tape."""

    NONE = "none"
    ONCE = "once"
    NEW_EPISODES = "new_episodes"
    ALL = "all"
    REWRITE = "rewrite"

    @property
    def write_protected(self) -> bool:
        """A tape that exists is never recorded over in this mode (vcrpy's `Cassette.write_protected`)."""
        return self in (RecordMode.NONE, RecordMode.ONCE, RecordMode.NEW_EPISODES)

    @property
    def keeps_old(self) -> bool:
        """A tape recorded again leaves the old one beside it (NAME.mcptape.old)."""
        return self in (RecordMode.ALL, RecordMode.NEW_EPISODES)

    @classmethod
    def parse(cls, value: str, where: str) -> RecordMode:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"{where}={value!r}: choose from {', '.join(MODES)}") from None


MODES = tuple(mode.value for mode in RecordMode)


def record_mode(config: pytest.Config, marked: str | None) -> RecordMode:
    """The record mode in force for a tape: the command line, then the environment, then the marker, then none."""
    return RecordMode(config.getoption("mcptape_record_mode") or os.environ.get(ENV_MODE) or marked or "none")


def allowed(config: pytest.Config) -> dict:
    """The Host and Origin values replays and recordings accept beyond loopback, as replay.serving takes them."""
    return {"allow_hosts": tuple(config.getoption("mcptape_allow_host") or ()),
            "allow_origins": tuple(config.getoption("mcptape_allow_origin") or ())}


def upstream(config: pytest.Config) -> str | None:
    return config.getoption("mcptape_upstream") or os.environ.get(ENV_UPSTREAM) or None
