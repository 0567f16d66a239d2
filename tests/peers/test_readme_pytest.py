"""The README's pytest example, verbatim: saved as test_app.py in an empty folder, recorded against the demo server
(`--mcptape-record-mode=once`, as the README says), then replayed offline with the server gone. One test passes (a
client that recovers), the other fails on purpose (the SDK client's no-reinitialize), marked xfail(strict=True): the
README's "1 passed, 1 xfailed". The only change: the demo server's port 8000 becomes a free one."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..conftest import BIN, free_port, spawn_demo, stop

README = Path(__file__).resolve().parents[2] / "README.md"


def example() -> tuple[str, list[str]]:
    """The test file and the pytest command lines, as the README's section shows them."""
    section = README.read_text().split("## Tapes in pytest\n", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    commands = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return code, [line.partition("  #")[0].strip() for line in commands.splitlines() if line.strip()]


def test_the_readme_pytest_example_passes_as_written(tmp_path):
    code, (record, replay) = example()
    assert "8000" in code and record.endswith("--mcptape-record-mode=once") and replay == "pytest test_app.py"
    port = free_port()
    (tmp_path / "test_app.py").write_text(code.replace("8000", str(port)))
    pytest = lambda line: subprocess.run([str(BIN / "python"), "-m", *line.split(), "-p", "no:cacheprovider"],  # noqa: E731
                                         cwd=tmp_path, capture_output=True, text=True, timeout=180)
    server = spawn_demo(port)
    try:
        recorded = pytest(record)
    finally:
        stop(server)
    assert recorded.returncode == 0 and "1 passed, 1 xfailed" in recorded.stdout, recorded.stdout[-3000:]
    tapes = sorted(p.name for p in (tmp_path / "cassettes" / "test_app").iterdir())
    assert tapes == ["test_a_client_that_recovers.mcptape", "test_the_sdk_client_does_not_recover.mcptape"]
    replayed = pytest(replay)
    assert replayed.returncode == 0 and "1 passed, 1 xfailed" in replayed.stdout, replayed.stdout[-3000:]
    # the xfail is the bug it names, not some other failure
    why = pytest(replay + " --runxfail")
    assert why.returncode == 1 and "no-reinitialize" in why.stdout and "1 failed, 1 passed" in why.stdout, why.stdout
