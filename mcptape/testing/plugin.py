"""The pytest plugin: the `mcptape` marker and fixture, the record-mode options, `--mcptape-unused`.

pytest loads this module in every run of every suite in an environment where mcptape is installed, so it imports
nothing but pytest at load time: the replay, the recorder and the model are imported by the fixture, in the tests
that use it (`-p no:mcptape` turns the plugin off).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .modes import ENV_MODE, ENV_UPSTREAM, MODES, RERECORD, SPECS, STATE, RecordMode, record_mode


class State:
    """What the plugin keeps for a run: the run's id (shared by xdist workers), the replay loop and loaded tapes
    (made on first use), the tapes used and the test modules seen (for --mcptape-unused)."""

    def __init__(self, config: pytest.Config) -> None:
        worker = getattr(config, "workerinput", None)
        self.run = worker["testrunuid"] if worker else os.urandom(8).hex()
        self.background = None
        self.loaded: dict = {}
        self.used: set[str] = set()
        self.modules: set[Path] = set()
        self.workdir: Path | None = None  # the tests' replay logs, under pytest's basetemp
        self.count = 0

    def close(self) -> None:
        if self.background is not None:
            self.background.close()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Runs where reports gather (the xdist controller too): which tapes were used, which modules ran."""
        if report.when != "setup":
            return
        self.modules.add(Path(report.location[0]))
        for name, value in report.user_properties:
            if name == "mcptape":
                self.used.add(os.path.realpath(value))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcptape", "MCP tapes (mcptape)")
    group.addoption("--mcptape-record-mode", choices=MODES, default=None,
                    help=f"none (replay only, the default), once, new_episodes, all or rewrite. Wins over "
                         f"${ENV_MODE}, which wins over a marker's mode=.")
    group.addoption("--mcptape-upstream", metavar="URL", default=None,
                    help=f"The MCP server to record from, for tapes whose marker names no upstream= or command= "
                         f"(or ${ENV_UPSTREAM}).")
    group.addoption("--mcptape-allow-host", action="append", default=[], metavar="NAME[:PORT]",
                    help="Replays and recordings also accept this Host (loopback always; repeatable).")
    group.addoption("--mcptape-allow-origin", action="append", default=[], metavar="ORIGIN",
                    help="Replays and recordings also accept this Origin (loopback always; repeatable).")
    group.addoption("--mcptape-unused", action="store_true",
                    help="At the end, list the tapes in the test modules' cassette folders that no test used.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "mcptape(tape=None, *, edits=[], ignore=[], upstream=None, command=None, mode=None, "
                   "strict=False): serve a recorded MCP conversation to the test through the `mcptape` fixture "
                   "(tests/cassettes/<module>/<test>.mcptape by default); see mcptape's README.")
    config.addinivalue_line(
        "markers", "mcptape_gauntlet(faults=None, at=None, timeout=30): run the test once per fault and position, "
                   "its tape replayed with that one fault; the `mcptape_gauntlet` fixture classifies each run.")
    env = os.environ.get(ENV_MODE)
    if env:
        try:
            RecordMode.parse(env, ENV_MODE)
        except ValueError as e:
            raise pytest.UsageError(f"mcptape: {e}") from None
    config.stash[STATE] = State(config)
    config.pluginmanager.register(config.stash[STATE], "mcptape-state")


def pytest_unconfigure(config: pytest.Config) -> None:
    if STATE in config.stash:
        config.stash[STATE].close()


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what will not run
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers are read, and their edits parsed, here: a wrong edit stops the run before any test does."""
    for item in items:
        if item.get_closest_marker("mcptape") is None:
            continue
        from .markers import MarkerError, specs

        try:
            item.stash[SPECS] = specs(item)
        except MarkerError as e:
            raise pytest.UsageError(f"mcptape: {item.nodeid}: {e}") from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """mcptape_gauntlet: one test id per fault and position (fault@position)."""
    mark = metafunc.definition.get_closest_marker("mcptape_gauntlet")
    if mark is None:
        return
    from .gauntlet import cells
    from .markers import MarkerError

    try:
        runs = cells(metafunc.definition, mark)
    except (MarkerError, ValueError) as e:
        raise pytest.UsageError(f"mcptape: {metafunc.definition.nodeid}: {e}") from None
    if "mcptape_gauntlet" not in metafunc.fixturenames:
        raise pytest.UsageError(f"mcptape: {metafunc.definition.nodeid}: the mcptape_gauntlet marker needs the "
                                f"test to take the mcptape_gauntlet fixture (and mcptape)")
    metafunc.parametrize("mcptape_gauntlet", runs, ids=[f"{c.fault.name}@{c.at}" for c in runs], indirect=True)


@pytest.fixture
def mcptape_gauntlet(request: pytest.FixtureRequest, mcptape):
    """This run of the gauntlet: `.fault`, `.at`, `.edit`, and `.classify(exit)` for its verdict and findings."""
    from .gauntlet import GauntletRun, skip_if_not_applicable

    cell = getattr(request, "param", None)
    if cell is None:
        pytest.fail("mcptape: the mcptape_gauntlet fixture needs @pytest.mark.mcptape_gauntlet(...)", pytrace=False)
    skip_if_not_applicable(cell, mcptape)
    return GauntletRun(cell, mcptape)


@pytest.fixture
def mcptape(request: pytest.FixtureRequest):
    """The test's tape: `.url` (an HTTP replay on a free port, or the recorder in front of the upstream),
    `.command` (the argv of a stdio server replaying it), `.log` (what the client did), `.findings()`,
    `.assert_clean()`. Several tapes: `mcptape.tapes`, or `mcptape["name"]`."""
    from .tapes import Deck

    deck = Deck(request)
    try:
        yield deck.first
    finally:
        deck.close()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """new_episodes: a test whose replay missed runs again, recording its whole conversation (an MCP session
    cannot be resumed half-way on a server that never saw its start). Only the second run is reported."""
    marked = item.stash.get(SPECS, None)
    if not marked or all(record_mode(item.config, s.mode) is not RecordMode.NEW_EPISODES for s in marked):
        return None
    from _pytest.runner import runtestprotocol

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    if item.stash.get(RERECORD, None):
        item._initrequest()  # fresh fixtures for the second run, as pytest-rerunfailures does
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if not config.getoption("mcptape_unused"):
        return
    state = config.stash[STATE]
    unused = []
    for module in sorted(state.modules):
        folder = config.rootpath / module.parent / "cassettes" / module.stem
        if folder.is_dir():
            unused += [p for p in sorted(folder.rglob("*.mcptape")) if os.path.realpath(p) not in state.used]
    terminalreporter.section("mcptape: unused tapes")
    for path in unused:
        terminalreporter.line(os.path.relpath(path, config.rootpath))
    terminalreporter.line(f"{len(unused)} tape(s) in the cassette folders of {len(state.modules)} module(s) "
                          f"that no test of this run used" if unused else
                          f"every tape in the cassette folders of {len(state.modules)} module(s) was used")
