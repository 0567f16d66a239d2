"""The command group imports a command's module only when the command is looked up (cli/app.py), so `mcptape replay`
starts without what other commands import. Its table must name every command each module registers, and no other."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import click

from mcptape.cli import app, main


def test_the_table_names_exactly_the_commands_each_module_registers():
    for module in Path(app.__file__).parent.glob("[!_]*.py"):
        importlib.import_module(f"mcptape.cli.{module.stem}")  # every module, whatever the table says
    assert {name: cmd.callback.__module__ for name, cmd in main.commands.items()} == {
        name: f"mcptape.cli.{module}" for name, module in app._Group.MODULES.items()}
    with click.Context(main) as ctx:
        assert main.list_commands(ctx) == sorted(app._Group.MODULES)


def test_replay_is_looked_up_without_the_other_commands_modules():
    probe = ("import sys; from mcptape.cli import main; import click; "
             "main.get_command(click.Context(main), 'replay'); "
             "print(sorted(m for m in sys.modules if m.startswith('mcptape.cli.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "mcptape.cli.replay" in loaded
    assert not any(f"mcptape.cli.{m}'" in loaded for m in ("check", "gauntlet", "record", "importing", "show"))
