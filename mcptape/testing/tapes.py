"""What a test's tape does: the replay or the recording that serves the test, as the record mode in force says.

Record modes mean what they mean in vcrpy and pytest-recording:

    none          replay; a missing tape fails the test with the command that records it
    once          replay the tape if it exists, else record it
    new_episodes  replay; when a request finds no recorded answer, the whole test runs again against the real
                  server and its conversation replaces the tape (the old one is kept beside it, NAME.mcptape.old):
                  an MCP session is stateful, and a server that never saw its start cannot take over half-way
    all           record, always; the old tape is kept beside the new one
    rewrite       record, always; the old tape is deleted (pytest-recording's mode)

A recording goes into a hidden file beside the tape and takes the tape's name when the test ends, so no reader
ever sees half a tape; one that recorded no traffic leaves the old tape alone (vcrpy saves a cassette only when
something new was recorded). Where a tape lives and what its markers say: markers.py; the lock that keeps two
workers from writing one tape: lock.py.
"""

from __future__ import annotations

import os
import socket
import sys
import warnings
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest

from .lock import TapeLock
from .markers import SUFFIX, MarkerError, Spec, default_name, specs
from .modes import RERECORD, SPECS, STATE, RecordMode, allowed, record_mode, upstream


class Deck:
    """The tapes of one test, set up in marker order and torn down together."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        item, config = request.node, request.config
        state = config.stash[STATE]
        if state.workdir is None:
            state.workdir = request.getfixturevalue("tmp_path_factory").mktemp("mcptape")
        state.count += 1
        workdir = state.workdir / f"{state.count:05d}-{default_name(item)[:80]}"
        marked = item.stash.get(SPECS, None)
        if marked is None:
            try:
                marked = specs(item)
            except MarkerError as e:
                pytest.fail(f"mcptape: {e}", pytrace=False)
        cell = getattr(item, "callspec", None) and item.callspec.params.get("mcptape_gauntlet")
        if cell is not None:  # a gauntlet run: the test's first tape carries its fault (gauntlet.Cell)
            marked = [replace(marked[0], edits=(*marked[0].edits, cell.parsed)), *marked[1:]]
        self.tapes: list[Tape] = []
        try:
            for n, spec in enumerate(marked):
                tape = Tape(spec, item, state, workdir / str(n), self.tapes)
                self.tapes.append(tape)
                item.user_properties.append(("mcptape", spec.path))
                tape.start()
        except BaseException:
            self.close(raising=False)
            raise
        self.first = self.tapes[0]

    def close(self, raising: bool = True) -> None:
        problems = []
        for tape in self.tapes:
            try:
                tape.close()
            except BaseException as e:  # close every tape, then say what went wrong
                problems.append(e)
        if problems and raising:
            raise problems[0]


class Tape:
    """The `mcptape` fixture, for one tape (the test's first one; the others through `tapes` or `[name]`)."""

    def __init__(self, spec: Spec, item: pytest.Item, state, workdir: Path, tapes: list[Tape]) -> None:
        self.spec = spec
        self.path = spec.path
        self.mode = record_mode(item.config, spec.mode)
        self.tapes = tapes
        self.recording = False  # True: the test talks to the real server through the recorder
        self._item, self._state, self._workdir = item, state, workdir
        self._url: str | None = None
        self._command: list[str] | None = None
        self._stack = ExitStack()  # the recorder, or the HTTP replay
        self._lock: TapeLock | None = None
        self._replayer = None
        self._partial: str | None = None

    def __repr__(self) -> str:
        return f"<mcptape {'recording' if self.recording else 'replaying'} {self.path} ({self.mode})>"

    def __getitem__(self, key: int | str) -> Tape:
        """Another tape of this test, by position or by name (`mcptape["weather"]`, `mcptape["weather.mcptape"]`)."""
        if isinstance(key, int):
            return self.tapes[key]
        for tape in self.tapes:
            if key in (Path(tape.path).name, Path(tape.path).name.removesuffix(SUFFIX), tape.path):
                return tape
        raise KeyError(f"this test has no tape {key!r} (it has {', '.join(Path(t.path).name for t in self.tapes)})")

    # -- set-up and tear-down --------------------------------------------------------------------------------------

    def start(self) -> None:
        lock = TapeLock(self.path)
        lock.acquire(self.path)  # waits while another worker records this tape
        try:
            exists = os.path.exists(self.path)
            again = self.path in self._item.stash.get(RERECORD, set())
            if again:  # new_episodes, second run: record the whole conversation anew
                record, keep_old = True, True
            elif self.mode.write_protected:
                if not exists and self.mode is RecordMode.NONE:
                    pytest.fail(self._missing(), pytrace=False)
                record, keep_old = not exists, False
            else:  # all, rewrite: record, unless another worker of this run just did
                record = not (exists and lock.recorded_by() == self._state.run)
                keep_old = self.mode.keeps_old
            if record:
                self._record(keep_old)
                self._lock, lock = lock, None  # held until the tape is in place
        finally:
            if lock is not None:
                lock.release()
        if not self.recording:
            self._replay()

    def _missing(self) -> str:
        hint = "" if self.spec.upstream or self.spec.command else " --mcptape-upstream URL"
        return (f"mcptape: no tape at {_shown(self.path)} (record mode none replays only). Record it with:\n"
                f"  pytest '{self._item.nodeid}' --mcptape-record-mode=once{hint}")

    def _record(self, keep_old: bool) -> None:
        from ..capture.recording import RecordingError, recording
        from ..edits import EditError, check_transport

        command = list(self.spec.command) if self.spec.command else None
        up = None if command else self.spec.upstream or upstream(self._item.config)
        if command is None and up is None:
            pytest.fail(f"mcptape: recording {_shown(self.path)} (record mode {self.mode}) needs a server: "
                        f"--mcptape-upstream URL, or the marker's upstream=URL or command=[...]", pytrace=False)
        try:
            check_transport(list(self.spec.edits), stdio=command is not None, live=True)
        except EditError as e:
            pytest.fail(f"mcptape: {_shown(self.path)}: recording with this edit: {e}", pytrace=False)
        folder, name = os.path.split(self.path)
        os.makedirs(folder, exist_ok=True)
        self._partial = os.path.join(folder, f".{name}.{os.getpid()}.recording")
        self._keep_old = keep_old
        try:
            value = self._stack.enter_context(recording(self._partial, upstream=up, command=command, force=True,
                                                        edits=self.spec.edits,
                                                        **allowed(self._item.config)))
        except RecordingError as e:
            pytest.fail(f"mcptape: cannot record {_shown(self.path)} from {up}: {e}", pytrace=False)
        if command is None:
            self._url = value
        else:
            self._command = value
        self.recording = True

    def _replay(self) -> None:
        from ..edits import Editor
        from ..replay.recorded import load
        from ..replay.serve import Replayer
        from ..tape.file import TapeError

        try:
            stat = os.stat(self.path)
            key = (self.path, stat.st_mtime_ns, stat.st_size)
            recording = self._state.loaded.get(key)
            if recording is None:
                recording = self._state.loaded[key] = load(self.path)  # frozen: every test of the run shares it
            editor = Editor(list(self.spec.edits)) if self.spec.edits else None
            self._replayer = Replayer(recording, list(self.spec.ignore), editor)
            for warning in self._replayer.warnings:  # a position past the tape, said as the test starts
                warnings.warn(f"mcptape: {_shown(self.path)}: {warning}", stacklevel=2)
        except (TapeError, ValueError, OSError) as e:
            pytest.fail(f"mcptape: {_shown(self.path)}: {e}", pytrace=False)

    def close(self) -> None:
        __tracebackhide__ = True
        from ..capture.recording import RecordingError

        try:
            self._stack.close()  # stops the recorder (which writes the tape's end) or the HTTP replay
        except RecordingError as e:
            pytest.fail(f"mcptape: recording {_shown(self.path)}: {e}", pytrace=False)
        finally:
            if self._lock is not None:
                self._finish_recording()
        if not self.recording:
            self._after_replay()

    def _finish_recording(self) -> None:
        try:
            if self._partial and _has_traffic(self._partial):
                if self._keep_old and os.path.exists(self.path):
                    os.replace(self.path, self.path + ".old")
                os.replace(self._partial, self.path)
                self._lock.mark(self._state.run)
            elif self._partial and os.path.exists(self._partial):
                os.remove(self._partial)  # nothing was recorded: the old tape stays
        finally:
            self._lock.release()
            self._lock = None

    def _after_replay(self) -> None:
        __tracebackhide__ = True
        if self._replayer is not None and self._replayer.editor is not None:
            for warning in self._replayer.editor.unfired() if self._url else []:
                warnings.warn(f"mcptape: {_shown(self.path)}: {warning}", stacklevel=2)
        # misses: the HTTP replay's own list; a stdio replay's are read from its logs (its process is gone)
        misses = list(self._replayer.misses) if self._replayer is not None and self._url else []
        stdio = [p for p in self.log_paths() if Path(p).name.startswith("stdio-")]
        if stdio:
            from .log import ClientLog

            misses += ClientLog(stdio).misses
        if misses and self.mode is RecordMode.NEW_EPISODES and self.path not in self._item.stash.get(RERECORD, set()):
            self._item.stash.setdefault(RERECORD, set()).add(self.path)  # plugin.pytest_runtest_protocol re-runs
            return
        if misses:
            pytest.fail(f"mcptape: {len(misses)} request(s) found no answer in {_shown(self.path)}:\n  "
                        + "\n  ".join(misses) + "\n(record the test again: --mcptape-record-mode=new_episodes or "
                                                "rewrite, with the server running)", pytrace=False)
        if self.spec.strict and self._url is not None:
            unused = self._replayer.unused()
            if unused:
                from ..wire import jsonrpc

                pytest.fail(f"mcptape: strict: {len(unused)} recorded request(s) of {_shown(self.path)} were "
                            f"never asked for:\n  " + "\n  ".join(jsonrpc.describe(a.request) for a in unused[:20]),
                            pytrace=False)

    # -- what the test uses ----------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The URL to point an HTTP client at: the replay (started on first use), or the recorder."""
        if self._url is None:
            if self.recording:
                pytest.fail(f"mcptape: {_shown(self.path)} is being recorded from a stdio server (command=): use "
                            f"mcptape.command; once recorded, the tape replays over HTTP too", pytrace=False)
            from ..replay import Background, serving

            if self._state.background is None:
                self._state.background = Background()
            os.makedirs(self._workdir, exist_ok=True)
            # Listening before the replay thread sees it: the client may connect at once, and nobody waits
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sock.listen(128)
            self._url = f"http://127.0.0.1:{sock.getsockname()[1]}{self._replayer.recording.entry}"
            entered, leave = self._state.background.start(
                serving(self.path, log=str(self._workdir / "http.mcptape"), replayer=self._replayer, sock=sock,
                        **allowed(self._item.config)))
            self._stack.callback(self._stop_replay, entered, leave)
        return self._url

    def _stop_replay(self, entered, leave) -> None:
        __tracebackhide__ = True
        leave()
        if entered.done() and entered.exception() is not None:
            pytest.fail(f"mcptape: the replay of {_shown(self.path)} did not start: {entered.exception()}",
                        pytrace=False)

    @property
    def command(self) -> list[str]:
        """The argv that starts a stdio server for this tape: a replay (each start writes its own log), or the
        recorder wrapping the real server."""
        if self._command is None:
            if self.recording:
                pytest.fail(f"mcptape: {_shown(self.path)} is being recorded from {self._url} over HTTP: use "
                            f"mcptape.url; once recorded, the tape replays over stdio too", pytrace=False)
            from ..edits import EditError, check_transport

            try:
                check_transport(list(self.spec.edits), stdio=True)
            except EditError as e:
                pytest.fail(f"mcptape: {_shown(self.path)} over stdio: {e}", pytrace=False)
            os.makedirs(self._workdir, exist_ok=True)
            argv = [sys.executable, "-m", "mcptape", "replay", self.path, "--stdio",
                    "--log", str(self._workdir / "stdio-{n}.mcptape")]
            if self.spec.edits:  # as JSON data: the replay does not parse the edit language again
                from ..edits import language

                argv += ["--edits-json", language.dumps(list(self.spec.edits))]
            for pointer in self.spec.ignore:
                argv += ["--ignore", pointer]
            self._command = argv
        return list(self._command)

    def log_paths(self) -> list[str]:
        """The tapes that hold what the client did: the recording, or the replays' logs (HTTP, then each stdio
        start)."""
        if self.recording:
            return [p for p in (self._partial, self.path) if p and os.path.exists(p)][:1]
        if not self._workdir.is_dir():
            return []
        stdio = sorted(self._workdir.glob("stdio-*.mcptape"), key=lambda p: int(p.stem.split("-")[1]))
        http = [self._workdir / "http.mcptape"] if (self._workdir / "http.mcptape").exists() else []
        return [str(p) for p in (*http, *stdio)]

    @property
    def log(self):
        """What the client did (mcptape.testing.log.ClientLog), read now: call it again after more traffic."""
        from .log import ClientLog

        return ClientLog(self.log_paths())

    def findings(self, fail_on: str = "info") -> list:
        """`mcptape check` on what the client did: the findings at or above `fail_on` (error, warning, info)."""
        from ..check import at_or_above, check

        paths = self.log_paths()
        return [f for f in check(paths) if at_or_above(f.severity, fail_on)] if paths else []

    def assert_clean(self, fail_on: str = "error") -> None:
        """Fail when a finding at or above `fail_on` blames the client. What mcptape injected is nobody's fault;
        how the client reacted to it is the client's (no new initialize after an injected 404 blames it)."""
        __tracebackhide__ = True
        from ..check.formatting import text

        paths = self.log_paths()
        blamed = [f for f in self.findings(fail_on) if f.blames == "client"]
        if blamed:
            misses = self.log.misses
            lines = [f"mcptape: the client is blamed for {len(blamed)} finding(s) at or above {fail_on}:",
                     *text(blamed, paths)]
            if misses:
                lines += ["requests the tape had no answer for:", *(f"  {m}" for m in misses)]
            raise AssertionError("\n".join(lines))


def _has_traffic(path: str) -> bool:
    from ..tape import records
    from ..tape.file import Reader, TapeError

    try:
        return any(records.is_traffic(r) for r in Reader(path))
    except (TapeError, FileNotFoundError):
        return False


def _shown(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
