"""The upstream dies mid-recording: the SDK client gets an error it can read, the tape holds the request with an
`upstream-unreachable` end, stderr says so in one line; once the upstream is back, the next request is recorded
as any other."""

from __future__ import annotations

import anyio
from mcp import Client

from mcptape.tape.file import read

from ..conftest import by_exchange, free_port, spawn_demo, stop


def test_a_dead_upstream_is_recorded_and_a_revived_one_answers_again(record):
    port = free_port()
    upstream = [spawn_demo(port)]  # stateless traffic below: no session dies with the process
    rec = record(f"http://127.0.0.1:{port}/mcp")

    async def run() -> str:
        async with Client(rec.url, mode="2026-07-28", read_timeout_seconds=10) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
            await anyio.to_thread.run_sync(stop, upstream[0])
            try:
                await client.call_tool("add", {"a": 2, "b": 2})
            except Exception as e:  # what the SDK makes of the 502
                error = f"{type(e).__name__}: {e}"
            else:
                raise AssertionError("a call through a dead upstream succeeded")
            upstream.append(await anyio.to_thread.run_sync(spawn_demo, port))
            assert (await client.call_tool("add", {"a": 3, "b": 4})).structured_content == {"result": 7}
            return error

    try:
        error = anyio.run(run)
    finally:
        for proc in upstream:
            stop(proc)
    code, _, err = rec.stop()
    assert code == 0, err
    assert "is unreachable (Connection refused)" in error, error  # the JSON-RPC error of the 502, as the SDK reads it
    assert sum("unreachable" in line for line in err.splitlines()) == 1, err
    calls = [recs for recs in by_exchange(read(rec.tape)).values()
             if isinstance(recs[0].get("msg"), dict) and recs[0]["msg"].get("method") == "tools/call"]
    ends = [(recs[0]["msg"]["params"]["arguments"], recs[-1]["reason"]) for recs in calls]
    assert ends == [({"a": 1, "b": 2}, "complete"), ({"a": 2, "b": 2}, "upstream-unreachable"),
                    ({"a": 3, "b": 4}, "complete")], ends


def test_a_full_disk_summary_counts_what_is_on_disk(demo_server, tmp_path):
    """The tape may not grow past 8 KiB (ulimit -f): the closing line's count is what the tape holds."""
    import re
    import signal

    from tests.test_reliability import Client

    from ..conftest import start_recording

    tape = tmp_path / "full.mcptape"
    rec = start_recording(demo_server(), tape, wrap=("bash", "-c", 'trap "" XFSZ; ulimit -f 8; exec "$@"', "limit"))
    client = Client(rec.url)
    for n in range(120):
        client.ping(n)
    code, _, err = rec.stop(signal.SIGTERM)
    said = re.search(r"holds the (\d+) exchanges recorded before that \((.+)\)", err)
    assert said, err
    recorded = read(tape)
    assert recorded.truncated is None  # a cut write was taken back: the tape ends on a whole record
    on_disk = sum(1 for r in recorded.records if r["kind"] == "http.request")
    assert int(said.group(1)) == on_disk < 120
