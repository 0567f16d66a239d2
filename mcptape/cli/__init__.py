"""The `mcptape` command: one module per command or family of commands, each a thin layer that parses its options,
calls one layer below, and prints. `app` holds the group and its one-line errors; `options` and `printing` what
several commands share. Importing this package registers every command on `main`.

Exit codes: 0 clean, 1 findings or differences, 2 bad usage or unreadable input. Errors are one line; `--debug`
shows the traceback instead.
"""

from . import check, export, gauntlet, help, importing, record, replay, show, verify  # noqa: F401 (registers)
from .app import Failure, main

__all__ = ["Failure", "main"]
