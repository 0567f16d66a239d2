"""The `mcptape` command: one module per command or family of commands, each a thin layer that parses its options,
calls one layer below, and prints. `app` holds the group and its one-line errors; `options` and `printing` what
several commands share.

Exit codes: 0 clean, 1 findings or differences, 2 bad usage or unreadable input. Errors are one line; `--debug`
shows the traceback instead.

A command's module is imported when the command is looked up (app.py's _Group.MODULES), and registers it on `main`.
"""

from .app import Failure, main

__all__ = ["Failure", "main"]
