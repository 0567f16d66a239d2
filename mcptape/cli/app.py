"""The `mcptape` command group: one-line errors (exit 2), the exit code a command's results call for, colour."""

from __future__ import annotations

import gc
import importlib
import os
import sys

import click

from .. import __version__


class Failure(click.ClickException):
    """Bad usage or unreadable input: one line on stderr, exit 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        from ..terminal import safe

        click.echo(f"mcptape: {safe(self.message)}", err=True)


class Command(click.Command):
    """Every command of mcptape: it runs with the cyclic garbage collector on (_Group.main turns it off before)."""

    def invoke(self, ctx: click.Context):
        gc.enable()
        return super().invoke(ctx)


class _Group(click.Group):
    command_class = Command

    # Each command's module, imported when the command is looked up: `mcptape replay` starts without importing what
    # check, gauntlet or record need (start to first answer is a goal of its own, bench/replay_speed.py).
    MODULES = {"check": "check", "diff": "check", "export": "export", "report": "export", "bundle": "export",
               "gauntlet": "gauntlet", "addons": "help", "help": "help", "import": "importing", "redact": "importing",
               "record": "record", "replay": "replay", "edits": "replay", "show": "show", "verify": "verify"}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.MODULES:
            importlib.import_module(f"{__package__}.{self.MODULES[cmd_name]}")  # registers it on main
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        for name in self.MODULES:
            self.get_command(ctx, name)
        return super().list_commands(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command's first sentence whole, wrapped, where click would cut it at the line's end."""
        rows = [(name, self.get_command(ctx, name).get_short_help_str(limit=1000)) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl([row for row in rows if not self.get_command(ctx, row[0]).hidden])

    def main(self, *args, **kwargs):
        # Until the command runs, what is allocated lives as long as the process (the command's modules, imported
        # as it is looked up and its options parsed): the cyclic collector would scan it again and again for
        # nothing, 4 ms of the 85 `mcptape replay` takes to its first answer (bench/replay_speed.py).
        enabled = gc.isenabled()
        gc.disable()
        try:
            return super().main(*args, **kwargs)
        finally:
            (gc.enable if enabled else gc.disable)()

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # click's own three lines (usage, try --help, error) as our one
            command = e.ctx.command_path if e.ctx else "mcptape"
            raise Failure(f"{e.format_message().rstrip('.')}, in {command}: see {command} --help") from None
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit):
            raise
        except BrokenPipeError:
            # `mcptape check tape | head -1`: the reader left, nothing more to say; but the exit code is still the
            # one the findings call for (a pipeline with pipefail reads it). Later writes (the interpreter's own
            # flush at exit) go nowhere instead of failing again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit((ctx.obj or {}).get("exit", 0))
        except Exception as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            from ..output import OutputError
            from ..tape.file import OPENED, TapeError

            if isinstance(e, (TapeError, OutputError)):
                raise Failure(str(e)) from None
            # (OSError: gmtime's overflow on a time of 2**62; ArithmeticError: OverflowError, and a Decimal NaN
            # compared, decimal.InvalidOperation)
            if isinstance(e, (TypeError, ValueError, AttributeError, KeyError, IndexError, ArithmeticError, OSError)):
                from ..tape.records import first_problem

                if found := first_problem(list(OPENED)):  # a stranger's tape broke what its format promises
                    raise Failure(f"{found}; this tape was not written by mcptape as it is") from None
            raise Failure(f"internal error: {type(e).__name__}: {e} (run with --debug for the traceback)") from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcptape")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Record, replay, edit and check MCP (Model Context Protocol) conversations.

    \b
    Example:
      mcptape record --upstream http://127.0.0.1:8000/mcp -o run.mcptape
      mcptape show run.mcptape
    """
    ctx.ensure_object(dict)["debug"] = debug


def exit_with(code: int) -> int:
    """The exit code a command's results call for, set before it prints them: a reader that leaves early (a
    broken pipe) does not change it."""
    click.get_current_context().find_root().ensure_object(dict)["exit"] = code
    return code


def colour_option(command):
    return click.option("--color/--no-color", "colour", default=None,
                        help="Colour the output (default: on a terminal, unless NO_COLOR is set).")(command)


def use_colour(option: bool | None, err: bool = False) -> bool:
    """Whether to colour: as the option says; else on a terminal, unless NO_COLOR is set (to anything non-empty,
    https://no-color.org)."""
    if option is not None:
        return option
    return not os.environ.get("NO_COLOR") and (sys.stderr if err else sys.stdout).isatty()
