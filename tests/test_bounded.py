"""A stranger's tape or bundle made to cost memory or time: each command refuses it with one line (exit 2) or
finishes, under 300 MB of resident memory (sampled) and within a 60 s hang timeout. bench/hostile.py times them."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import hostile_inputs as hostile
from .conftest import MCPTAPE

PEAK_MB = 300
COMMANDS = (["check"], ["report"], ["report", "--format", "json"], ["show"], ["show", "--format", "json"])


def bounded(*args: str, refused: str | None = None, env: dict | None = None) -> hostile.Run:
    run = hostile.run_measured([MCPTAPE, *args], timeout=60, env=env)
    assert run.code is not None, f"{args} still running after 60 s (peak {run.peak_mb:.0f} MB)"
    assert run.peak_mb < PEAK_MB, f"{args} peaked at {run.peak_mb:.0f} MB"
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    if refused is not None:
        lines = run.stderr.strip().splitlines()
        assert run.code == 2 and len(lines) == 1 and lines[0].startswith("mcptape: "), (args, run.stderr)
        assert refused in lines[0], lines[0]
    else:
        assert run.code in (0, 1), (args, run.stderr)
    return run


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile")


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_record_of_48_million_empty_arrays_is_refused(inputs, command):
    tape = inputs / "amplification.mcptape"
    if not tape.exists():
        hostile.amplification_tape(tape)
    bounded(*command[:1], str(tape), *command[1:], refused="MCPTAPE_MAX_ITEMS")


def test_arrays_each_within_limits_count_together(inputs):
    tape = hostile.nested_arrays_tape(inputs / "nested.mcptape")
    run = bounded("check", str(tape), refused="more than 1,000,000 items")
    assert "record 0 at byte" in run.stderr
    bounded("check", str(tape), env={"MCPTAPE_MAX_ITEMS": "lots"}, refused="MCPTAPE_MAX_ITEMS='lots' is not a count")


@pytest.mark.parametrize("command", [["check"], ["report", "--format", "json"]], ids=" ".join)
def test_a_bundle_of_ten_thousand_tapes_reads_them_one_at_a_time(inputs, command):
    bundle = inputs / "many.zip"
    if not bundle.exists():
        hostile.many_tapes_bundle(bundle)
    run = bounded(command[0], str(bundle), *command[1:])
    assert "9999 tape(s)" in run.stdout or '"tapes": 9999' in run.stdout, run.stdout[-300:]


def test_a_bundle_past_its_total_budget_is_refused(inputs):
    bundle = hostile.many_tapes_bundle(inputs / "some.zip", 20)
    bounded("check", str(bundle), env={"MCPTAPE_MAX_BUNDLE_MB": "0.001"}, refused="MCPTAPE_MAX_BUNDLE_MB")


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_bundle_inflating_two_hundred_to_one_is_refused(inputs, command):
    bundle = inputs / "ratio.zip"
    if not bundle.exists():
        hostile.high_ratio_bundle(bundle)
    bounded(*command[:1], str(bundle), *command[1:], refused="MCPTAPE_MAX_RATIO")


def test_a_bundle_at_the_ratio_allowed_reads_bounded(inputs):
    bundle = hostile.high_ratio_bundle(inputs / "ratio-few.zip", count=20)  # 19 MB inside: over the 16 MB bar
    bounded("check", str(bundle), refused="more than 100:1")
    bounded("check", str(bundle), env={"MCPTAPE_MAX_RATIO": "1000"})


@pytest.mark.parametrize("depth", [990, 100_000])
def test_deep_nesting_reads_or_is_refused(inputs, depth):
    tape = hostile.deep_tape(inputs / f"deep-{depth}.mcptape", depth)
    for command in COMMANDS:
        if depth > 1000:
            bounded(*command[:1], str(tape), *command[1:], refused="nested too deeply")
        else:
            bounded(*command[:1], str(tape), *command[1:])


@pytest.mark.parametrize("name", hostile.WRONG_TYPES)
def test_a_record_of_the_wrong_shape_is_named(inputs, name):
    tape = hostile.wrong_type_tape(inputs / f"{name}.mcptape", name)
    for args in (["show", str(tape)], ["show", str(tape), "--format", "json"], ["show", f"{tape}#0"],
                 ["check", str(tape)], ["report", str(tape), "--format", "html"],
                 ["diff", str(tape), str(tape)], ["export", str(tape), "--format", "har"]):
        run = hostile.run_measured([MCPTAPE, *args], timeout=60)
        assert run.code is not None and run.peak_mb < PEAK_MB, args
        assert "internal error" not in run.stderr and "Traceback" not in run.stderr, (args, run.stderr)
        if run.code == 2:
            lines = run.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"mcptape: {tape}"), (args, run.stderr)
        else:
            assert run.code in (0, 1), (args, run.stderr)


@pytest.mark.parametrize("name", ["t-nan", "t-huge", "t-inf"])
def test_a_time_that_is_not_a_time_is_named(inputs, name):
    tape = hostile.wrong_type_tape(inputs / f"{name}.mcptape", name)
    run = bounded("show", f"{tape}#0", refused=f"{tape}#0: the record does not fit the tape format: "
                                               f"stdio.line field t must be")
    json_run = hostile.run_measured([MCPTAPE, "show", str(tape), "--format", "json"])  # JSON may say it as it is
    assert json_run.code == 0 or json_run.stderr == run.stderr, json_run


@pytest.mark.parametrize("make", [hostile.deep_har, hostile.deep_flows, hostile.deep_json_document],
                         ids=["har", "flows", "json"])
def test_a_deeply_nested_import_is_one_line(inputs, make):
    source = make(inputs / f"deep.{make.__name__}")
    bounded("import", str(source), "-o", str(inputs / "out.mcptape"), "--force", refused="nested too deeply")


def _calls_tape(path: Path, calls: int) -> Path:
    from mcptape.tape import records
    from mcptape.tape.file import Writer

    with Writer(path, records.header(0.0, "test")) as writer:
        for i in range(calls):
            writer.write(records.stdio_line(1.0 + i, records.C2S, b'{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
                                            b'"params":{"name":"add","arguments":{"a":%d}}}' % (i, i)))
            writer.write(records.stdio_line(1.5 + i, records.S2C, b'{"jsonrpc":"2.0","id":%d,"result":{"content":'
                                            b'[{"type":"text","text":"%d"}]}}' % (i, i)))
    return path


def _session_tape(path: Path, calls: int) -> Path:
    """A correct conversation (no findings): what a report of a long, healthy session holds."""
    from mcptape.testing.builder import Conversation

    tape = Conversation()
    tape.initialize()
    for i in range(calls):
        tape.call("tools/call", {"name": "add", "arguments": {"a": i}}, result={"content": [{"type": "text",
                                                                                          "text": str(i)}]})
    tape.write(path)
    return path


@pytest.mark.parametrize("command", [["show", "--format", "json"], ["show", "--format", "jsonl"],
                                     ["export", "--format", "json"], ["report"], ["report", "--format", "json"]],
                         ids=" ".join)
def test_output_costs_the_same_memory_for_a_tape_ten_times_larger(inputs, command):
    if command[0] == "report":  # a report's findings are its output: the tapes are healthy sessions
        small, large = inputs / "session-small.mcptape", inputs / "session-large.mcptape"
        make = _session_tape
    else:
        small, large = inputs / "calls-small.mcptape", inputs / "calls-large.mcptape"
        make = _calls_tape
    if not large.exists():
        make(small, 5_000)
        make(large, 50_000)
    peaks = [bounded(command[0], str(tape), *command[1:]).peak_mb for tape in (small, large)]
    assert peaks[1] - peaks[0] < 20, f"{command}: {peaks[0]:.0f} MB for 5,000 calls, {peaks[1]:.0f} MB for 50,000"
