"""Load: many official SDK clients at once, each in its own session, calling tools with progress; then what each
client saw is compared with the tape, session by session, through the model. Used by the reliability tests (short
runs in CI, long ones under `-m slow`) and by bench/load.py (the latency figures)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import anyio
from mcp import Client

from mcptape.model import Call, Model, Observer
from mcptape.tape.file import Reader

# One call as a client saw it, and as the tape holds it: (tool, arguments, what it returned, progress values).
Seen = tuple[str, tuple, object, tuple]


@dataclass
class ClientRun:
    index: int
    calls: list[Seen] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)  # seconds per call, as the client waited
    error: str | None = None


async def one_client(url: str, index: int, until: float, rounds: int | None = None, stagger: float = 0.0) -> ClientRun:
    """A session-era SDK client: `add(index, n)` names the client in every call it makes (so a call recorded in
    another client's session shows), and `countdown` brings progress notifications. Rounds of the two calls go on
    until `until` (monotonic time), or for `rounds`."""
    run = ClientRun(index)
    await anyio.sleep(stagger)
    try:
        async with Client(url, mode="legacy") as client:
            n = 0
            while (n < rounds) if rounds is not None else (time.monotonic() < until):
                progress: list = []

                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    progress.append(value)

                started = time.perf_counter()
                added = await client.call_tool("add", {"a": index, "b": n})
                run.latencies.append(time.perf_counter() - started)
                run.calls.append(("add", (index, n), added.structured_content["result"], ()))
                started = time.perf_counter()
                counted = await client.call_tool("countdown", {"steps": 2, "delay": 0},
                                                 progress_callback=on_progress)
                run.latencies.append(time.perf_counter() - started)
                run.calls.append(("countdown", (2, 0), counted.content[0].text, tuple(progress)))
                n += 1
    except Exception as e:  # a client that broke is a finding of the load test, reported with the others
        while isinstance(e, ExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        run.error = f"{type(e).__name__}: {e}"
    return run


async def many_clients(url: str, count: int, seconds: float, rounds: list[int] | None = None) -> list[ClientRun]:
    """`count` clients at once for `seconds`, or client i for `rounds[i]` rounds (to replay what was recorded)."""
    until = time.monotonic() + seconds
    runs: list[ClientRun] = []

    async def go(i: int) -> None:
        runs.append(await one_client(url, i, until, rounds[i] if rounds is not None else None, stagger=i * 0.01))

    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(go, i)
    return sorted(runs, key=lambda r: r.index)


class _ToolCalls(Observer):
    """Every tools/call of the tape, by session, as the model settles it (before it drops its messages)."""

    def __init__(self) -> None:
        self.by_session: dict[str, list[Seen]] = {}

    def call(self, call: Call, model: Model) -> None:
        if call.method != "tools/call" or call.dir != "c2s":
            return
        params = call.request.get("params", {})
        args, result = params.get("arguments", {}), (call.response or {}).get("result", {})
        if params.get("name") == "add":
            seen: Seen = ("add", (args.get("a"), args.get("b")), (result.get("structuredContent") or {}).get("result"),
                          ())
        else:
            content = result.get("content") or [{}]
            seen = (params.get("name"), (args.get("steps"), args.get("delay")), content[0].get("text"),
                    tuple(p for _, _, p in call.progress))
        self.by_session.setdefault(call.session.label, []).append(seen)


def tape_calls(path: str) -> dict[str, list[Seen]]:
    observer = _ToolCalls()
    model = Model([observer])
    for _ in model.feed_tape(path, Reader(path)):
        pass
    for _ in model.finish():
        pass
    return observer.by_session


@dataclass
class Comparison:
    compared: int = 0  # calls compared (each with its request, answer and progress)
    problems: list[str] = field(default_factory=list)


def compare(runs: list[ClientRun], tape: dict[str, list[Seen]]) -> Comparison:
    """Each client's calls against the one tape session that holds its calls: nothing lost, duplicated, reordered
    or recorded in another client's session."""
    out = Comparison()
    owner = {}
    for label, calls in tape.items():
        clients = {args[0] for name, args, _, _ in calls if name == "add"}
        if len(clients) != 1:
            out.problems.append(f"session {label} holds calls of clients {sorted(clients)}")
            continue
        owner[clients.pop()] = label
    for run in runs:
        if run.error:
            out.problems.append(f"client {run.index} failed: {run.error}")
        recorded = tape.get(owner.get(run.index, ""), [])
        # the tape may end with a call the client never saw finish (the run's deadline): compare what both hold
        if recorded[:len(run.calls)] != run.calls:
            first = next((i for i, (a, b) in enumerate(zip(recorded, run.calls)) if a != b),
                         min(len(recorded), len(run.calls)))
            out.problems.append(f"client {run.index}: call {first} differs: client saw "
                                f"{run.calls[first] if first < len(run.calls) else None}, tape holds "
                                f"{recorded[first] if first < len(recorded) else None}")
        out.compared += len(run.calls)
    return out


def stream_delays(url: str) -> tuple[list[float], int]:
    """Read one SSE stream from `url` (GET) to its end: each event's delay in ms from the moment the server wrote
    it (its `message` holds time_ns then) to the moment it was read here, and the number of events."""
    import http.client
    import json
    from urllib.parse import urlsplit

    from mcptape.wire import sse

    split = urlsplit(url)
    conn = http.client.HTTPConnection(split.hostname, split.port, timeout=60)
    conn.request("GET", split.path or "/", headers={"Accept": "text/event-stream"})
    response = conn.getresponse()
    parser, delays = sse.Parser(), []
    while chunk := response.read1(65536):
        now = time.time_ns()
        for event in parser.feed(chunk):
            sent = int(json.loads(event.data)["params"]["message"])
            delays.append((now - sent) / 1e6)
    conn.close()
    return delays, len(delays)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


class RssSampler:
    """The recorder's resident memory, sampled while a load runs."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        self.samples: list[int] = [rss_kb(pid)]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(pid, every), daemon=True)
        self._thread.start()

    def _run(self, pid: int, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self.samples.append(rss_kb(pid))
            except (FileNotFoundError, ProcessLookupError, StopIteration):
                return

    def stop(self) -> tuple[int, int]:
        """(KB once the load was under way, KB at its end)."""
        self._stop.set()
        self._thread.join(5)
        return self.samples[len(self.samples) // 10], self.samples[-1]
