"""What a test's tape does: where it lives, which record mode is in force, and the replay or the recording that
serves the test, with the lock that keeps two workers from writing one tape.

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
something new was recorded).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import sys
import tempfile
import time
import warnings
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .modes import RERECORD, SPECS, RecordMode, allowed, record_mode, upstream
from .plugin import STATE

SUFFIX = ".mcptape"
OPTIONS = ("tape", "edits", "ignore", "upstream", "command", "mode", "strict")
FORBIDDEN = "<>?%*:|\"'/\\"  # pytest-recording's rule: these become "-" in a default tape name
LOCK_WAIT = 600.0  # seconds a worker waits for another to finish recording a tape


class MarkerError(ValueError):
    """A marker that cannot be used; the message says which part and what it takes."""


@dataclass(frozen=True)
class Spec:
    """One tape of a test, as its markers say."""

    path: str
    edits: tuple  # parsed edits (mcptape.edits.Edit), parsed once at collection
    ignore: tuple[str, ...]
    upstream: str | None
    command: tuple[str, ...] | None
    mode: str | None
    strict: bool


# -- markers ------------------------------------------------------------------------------------------------------


def default_name(item: pytest.Item) -> str:
    """pytest-recording's default: `Class.test_name[params]`, with characters a file name cannot hold made '-'."""
    cls = getattr(item, "cls", None)
    name = f"{cls.__name__}.{item.name}" if cls is not None else item.name
    for ch in FORBIDDEN:
        name = name.replace(ch, "-")
    return name


def cassette_dir(item: pytest.Item) -> Path:
    """pytest-recording's layout: `cassettes/<module>/` beside the test module."""
    return item.path.parent / "cassettes" / item.path.stem


def specs(item: pytest.Item) -> list[Spec]:
    """The tapes a test uses: one per tape its closest markers name (several markers, or tape=[...]); markers on
    its class or module give defaults the closer ones override. No marker: the default tape, replayed."""
    levels: dict[Any, list[dict]] = {}
    for node, mark in item.iter_markers_with_node("mcptape"):
        levels.setdefault(node, []).append(_options(mark))
    groups = list(levels.values())  # the closest first
    defaults: dict = {}
    for group in reversed(groups[1:]):
        for options in group:
            defaults.update(options)
    entries = []
    for options in groups[0] if groups else [{}]:
        merged = {**defaults, **options}
        names = merged.pop("tape", None)
        for name in names if isinstance(names, (list, tuple)) else [names]:
            entries.append((name, merged))
    if len(entries) > 1 and any(name is None for name, _ in entries):
        raise MarkerError("a test with several tapes must name each one (tape=...)")
    out, paths = [], set()
    for name, options in entries:
        spec = _spec(item, name, options)
        if spec.path in paths:
            raise MarkerError(f"tape {spec.path} is named twice")
        paths.add(spec.path)
        out.append(spec)
    return out


def _options(mark: pytest.Mark) -> dict:
    if len(mark.args) > 1:
        raise MarkerError("the marker takes one positional argument, the tape (or a list of tapes)")
    unknown = sorted(set(mark.kwargs) - set(OPTIONS))
    if unknown:
        raise MarkerError(f"unknown option {unknown[0]!r} (the marker takes {', '.join(OPTIONS)})")
    return {**({"tape": mark.args[0]} if mark.args else {}), **mark.kwargs}


def _strings(options: dict, key: str) -> tuple[str, ...]:
    value = options.get(key) or ()
    value = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(v, str) for v in value):
        raise MarkerError(f"{key}= takes a list of strings")
    return value


def _spec(item: pytest.Item, name: Any, options: dict) -> Spec:
    from ..edits import EditError, parse
    from ..wire import pointer

    if name is None:
        name = default_name(item) + SUFFIX
    elif not isinstance(name, (str, os.PathLike)):
        raise MarkerError(f"tape={name!r}: a file name or path")
    name = os.fspath(name)
    if not name.endswith(SUFFIX):
        name += SUFFIX
    path = os.path.normpath(os.path.join(cassette_dir(item), name))  # an absolute name stays as it is
    try:
        edits = tuple(parse(text) for text in _strings(options, "edits"))
    except EditError as e:
        raise MarkerError(str(e)) from None
    ignore = _strings(options, "ignore")
    for text in ignore:
        try:
            pointer.parse(text)
        except ValueError as e:
            raise MarkerError(str(e).replace("--ignore", "ignore=")) from None
    mode = options.get("mode")
    if mode is not None:
        try:
            RecordMode.parse(mode, "mode")
        except ValueError as e:
            raise MarkerError(str(e)) from None
    command = options.get("command")
    if command is not None:
        if isinstance(command, str) or not command or not all(isinstance(a, str) for a in command):
            raise MarkerError("command= takes the server's argv as a list, e.g. ['python', 'server.py']")
        command = tuple(command)
    up = options.get("upstream")
    if up is not None and command is not None:
        raise MarkerError("give upstream= (an HTTP server) or command= (a stdio server), not both")
    if up is not None and not (isinstance(up, str) and up.startswith(("http://", "https://"))):
        raise MarkerError(f"upstream={up!r}: an http:// or https:// URL")
    return Spec(path, edits, ignore, up, command, mode, bool(options.get("strict", False)))


# -- the lock -----------------------------------------------------------------------------------------------------


class TapeLock:
    """One tape, one writer, across processes (xdist workers): an flock on a file named after the tape's path, in
    the temporary directory (nothing is left beside the tapes). The file says which run last recorded the tape, so
    a worker that waited for another's recording replays it instead of recording again."""

    def __init__(self, tape: str) -> None:
        folder = os.path.join(tempfile.gettempdir(), "mcptape-locks")
        os.makedirs(folder, exist_ok=True)
        key = hashlib.sha1(os.path.realpath(tape).encode()).hexdigest()
        self.fd = os.open(os.path.join(folder, key), os.O_RDWR | os.O_CREAT, 0o644)

    def acquire(self, tape: str) -> None:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self.release()
                    pytest.fail(f"mcptape: {tape} has been being recorded by another process for "
                                f"{LOCK_WAIT:.0f}s; gave up waiting", pytrace=False)
                time.sleep(0.05)  # another worker records this tape: wait for it to finish

    def recorded_by(self) -> str:
        return os.pread(self.fd, 64, 0).decode(errors="replace")

    def mark(self, run: str) -> None:
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, run.encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing drops the flock
            self.fd = -1


# -- the fixture --------------------------------------------------------------------------------------------------


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
        if cell is not None:  # a gauntlet run: the test's first tape carries its fault
            from .gauntlet import with_edit

            marked = [with_edit(marked[0], cell), *marked[1:]]
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
                                                        edits=[e.text for e in self.spec.edits],
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
            for edit in self.spec.edits:
                argv += ["--edit", edit.text]
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
        return any(r.get("kind") in (records.HTTP_REQUEST, records.STDIO_LINE) for r in Reader(path))
    except (TapeError, FileNotFoundError):
        return False


def _shown(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
