"""`mcptape addons` and `mcptape help`: where the mitmdump addons are, and the reference texts."""

from __future__ import annotations

import click

from .app import Failure, main


@main.command()
@click.argument("name", required=False)
def addons(name):
    """Print the paths of the mitmproxy addon scripts (all, or the one NAMEd), for mitmdump -s.

    They are the files of the top-level addons/ folder, installed as the package mcptape.addons; from a checkout,
    `mitmdump -s addons/record.py` loads the same file.

    \b
    Example:
      mitmdump --mode reverse:http://127.0.0.1:8000 -s "$(mcptape addons record)" --set mcptape_tape=run.mcptape
    """
    from importlib import resources

    folder = resources.files("mcptape.addons")
    scripts = sorted(p.name[:-3] for p in folder.iterdir() if p.name.endswith(".py") and p.name != "__init__.py")
    if name is not None and name not in scripts:
        raise Failure(f"no addon named {name!r} (there are: {', '.join(scripts)})")
    for script in [name] if name else scripts:
        click.echo(str(folder / f"{script}.py"))


@main.command(name="help")
@click.argument("topic", required=False, metavar="[edits|COMMAND]")
@click.pass_context
def help_(ctx, topic):
    """Print the reference of a topic (edits: the edit language), or a command's help.

    \b
    Examples:
      mcptape help edits
      mcptape help show
    """
    if topic == "edits":
        from ..edits.reference import REFERENCE

        click.echo(REFERENCE, nl=False)
        return
    group = ctx.parent.command
    command = group.get_command(ctx, topic) if topic else group
    if command is None:
        raise Failure(f"no command or topic named {topic!r} (topics: edits; commands: "
                      f"{', '.join(group.list_commands(ctx))})")
    with click.Context(command, info_name=topic or "mcptape", parent=ctx.parent if topic else None) as sub:
        click.echo(command.get_help(sub))
