"""`mcptape check` and `mcptape diff`: findings, verdicts per requirement, differences in protocol terms."""

from __future__ import annotations

import click

from .app import Failure, colour_option, exit_with, main, use_colour
from .options import POINTER
from .printing import print_differences, tape_paths, write_output


@main.command()
@click.argument("tapes", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "junit"]), default="text",
              show_default=True, help="junit: one test case per requirement per tape (implies --requirements).")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default=None,
              help="Exit 1 when a finding is at or above this severity  [default: error, or fail-on in the "
                   "project's settings]")
@click.option("--requirements", is_flag=True,
              help="A verdict per requirement per tape: fail, warn, pass, not-observed, not-applicable.")
@click.option("--baseline", metavar="FILE", help="Findings this baseline holds do not fail the run.")
@click.option("--write-baseline", metavar="FILE", help="Write the findings into FILE as the baseline, and exit 0.")
@click.option("--require-redacted", is_flag=True,
              help="Exit 1 when a tape was recorded without redaction or still holds a secret (named by record "
                   "and JSON pointer).")
@colour_option
def check(tapes, fmt, fail_on, requirements, baseline, write_baseline, require_redacted, colour):
    """Flag protocol faults in tapes, each with the spec clause it rests on.

    Several tapes are checked together as one history, in the order given. Severities per rule, fail-on and the
    baseline can be set in [tool.mcptape] of pyproject.toml or in mcptape.toml (docs/rules.md).

    \b
    Examples:
      mcptape check run.mcptape
      mcptape check yesterday.mcptape today.mcptape --format json
      mcptape check run.mcptape --format sarif > mcptape.sarif
      mcptape check run.mcptape --requirements          # the table: a verdict per requirement
      mcptape check run.mcptape --format junit > mcptape.xml
      mcptape check *.mcptape --write-baseline base.json && mcptape check *.mcptape --baseline base.json
      mcptape check run.mcptape --require-redacted     # before attaching it to a bug report
    """
    from ..check import at_or_above, config, formatting, run
    from ..check import baseline as baselines
    from ..terminal import safe, safe_json

    tapes = tape_paths(tapes)
    try:
        settings = config.load()
        outcome = run(tapes, requirements or fmt == "junit", settings,
                      None if write_baseline else baseline or settings.baseline)
    except (config.ConfigError, baselines.BaselineError) as e:
        raise Failure(str(e)) from None
    findings = outcome.findings
    if write_baseline:
        write_output([baselines.dumps(findings)], write_baseline)
        raise SystemExit(exit_with(0))
    fail_on = fail_on or settings.fail_on or "error"
    if require_redacted:
        from ..redact.tapes import unredacted_in

        unredacted = [problem for tape in tapes for problem in unredacted_in(tape)]
    else:
        unredacted = []
    failed = unredacted or any(at_or_above(f.severity, fail_on) for f in outcome.failing)
    code = exit_with(1 if failed else 0)
    if fmt == "junit":
        from ..check.verdicts import Verdict

        failing = tuple(v.value for v, severity in ((Verdict.FAIL, "error"), (Verdict.WARN, "warning"))
                        if at_or_above(severity, fail_on))
        click.echo(formatting.junit(outcome.rows, outcome.failing, failing), nl=False)
    elif fmt == "text":
        from ..show import ERROR, WARNING, paint

        colour = use_colour(colour)
        lines = formatting.text(findings, list(tapes))
        if outcome.rows is not None:  # the findings, then the table
            from itertools import chain

            from ..check import verdicts

            lines = chain(lines, [""], verdicts.text(outcome.rows))
        for line in lines:  # a finding's first line starts with its severity, a verdict's with the verdict
            tone = {"error": ERROR, "warning": WARNING, "fail": ERROR, "warn": WARNING}.get(
                line.split(maxsplit=1)[0] if line.strip() else "")
            click.echo(paint(line, tone, colour), color=colour)
        for problem in unredacted:
            click.echo(safe(problem.line()))
    else:
        from ..tape import json_form

        doc = formatting.as_json(findings, list(tapes)) if fmt == "json" else formatting.sarif(findings, list(tapes))
        if fmt == "json" and outcome.rows is not None:
            from ..check import verdicts

            doc.update(verdicts.as_json(outcome.rows))
        if fmt == "json" and require_redacted:
            doc["unredacted"] = [problem.to_json() for problem in unredacted]
        elif unredacted:
            for problem in unredacted:
                click.echo(safe(problem.line()), err=True)
        click.echo(safe_json(json_form.dumps(doc, indent=1)))
    raise SystemExit(code)


@main.command(name="diff")
@click.argument("tape_a", type=click.Path(dir_okay=False))
@click.argument("tape_b", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--ignore", multiple=True, metavar="POINTER", type=POINTER,
              help="Also ignore this part of every message (JSON pointer, e.g. /result/content/0/text).")
def diff_(tape_a, tape_b, fmt, ignore):
    """Compare two tapes in protocol terms: calls answered in one only, changed results, errors and statuses,
    calls only in one tape, findings new in B. Ids, session ids, progress tokens and times are never compared.

    \b
    Examples:
      mcptape diff before.mcptape after.mcptape
      mcptape diff a.mcptape b.mcptape --ignore /result/structuredContent/now --format json
    """
    from ..check.diff import diff, to_json
    from ..tape import json_form
    from ..tape.file import Reader
    from ..terminal import safe_json

    for tape in (tape_a, tape_b):  # opened here too (diff reads them in other processes): an unreadable one is said
        Reader(tape).close()  # at once, and a record of the wrong shape is named from here (_Group)
    differences = diff(tape_a, tape_b, list(ignore))  # --ignore's pointers were parsed at the option (POINTER)
    code = exit_with(1 if differences else 0)
    if fmt == "json":
        click.echo(safe_json(json_form.dumps(to_json(differences), indent=1)))
    else:
        print_differences(differences)
        click.echo(f"{len(differences)} difference(s)" if differences else "no differences")
    raise SystemExit(code)
