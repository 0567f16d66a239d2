"""Named figures of one benchmark, for `bench/run.py` to gather: each script keeps its human lines and, given
`--json`, sends them to stderr and prints its figures on stdout as one JSON object."""

from __future__ import annotations

import argparse
import json
import sys


def add_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print the figures as one JSON object on stdout (the human lines go to stderr)")


class Figures(dict):
    """A dict of figures; while a script runs with --json its prints go to stderr, so stdout holds only the JSON."""

    def __init__(self, as_json: bool) -> None:
        super().__init__()
        self.stdout = sys.stdout
        if as_json:
            sys.stdout = sys.stderr
        self.as_json = as_json

    def emit(self) -> None:
        if self.as_json:
            sys.stdout = self.stdout
            print(json.dumps(self))
