"""Real Python MCP servers from PyPI for the tests, installed once into a virtualenv of their own (pinned exact
versions, `PINS`), outside the repository, as node_peers.py installs the TypeScript ones:

    $MCPTAPE_PY_PEERS_DIR, else $XDG_CACHE_HOME/mcptape-py-peers, else ~/.cache/mcptape-py-peers
        <key>/              one finished virtualenv; <key> hashes the pins and this Python's version
        <key>.lock          the lock parallel test processes take: one installs, the others wait

A directory named <key> is complete: it appears by rename only after pip succeeded. A virtualenv's scripts name
its first path, so the servers are started by its python (`python -c 'import m; m.main()'`), which works
wherever the folder is.

`py_peers() -> Path`: that virtualenv's python (installs on first use; fails the test in one line when pip
fails, and every later caller in the process with the same line).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .node_peers import file_lock, tail

PINS = {"mcp": "2.3.0", "mcp-server-time": "2026.10.19", "mcp-server-git": "2026.10.19", "fastmcp": "4.1.6"}
INSTALL_TIMEOUT = 900.0
_failure: str | None = None


def cache_root() -> Path:
    if os.environ.get("MCPTAPE_PY_PEERS_DIR"):
        return Path(os.environ["MCPTAPE_PY_PEERS_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcptape-py-peers"


def _install(root: Path) -> Path:
    key = hashlib.sha256(json.dumps([PINS, sys.version], sort_keys=True).encode()).hexdigest()[:16]
    final = root / key
    if not (final / "bin" / "python").exists():
        root.mkdir(parents=True, exist_ok=True)
        with file_lock(root / f"{key}.lock", INSTALL_TIMEOUT + 300):
            if not (final / "bin" / "python").exists():
                for stale in root.glob(f".{key}.tmp-*"):  # left by a killed install
                    shutil.rmtree(stale, ignore_errors=True)
                tmp = Path(tempfile.mkdtemp(prefix=f".{key}.tmp-", dir=root))
                try:
                    subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True, capture_output=True,
                                   timeout=120)
                    out = subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet",
                                          "--disable-pip-version-check", *(f"{n}=={v}" for n, v in PINS.items())],
                                         capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
                    if out.returncode:
                        raise RuntimeError(f"pip install exited {out.returncode}: {tail(out.stderr, 10)}")
                    tmp.rename(final)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
    return final / "bin" / "python"


def py_peers() -> Path:
    global _failure
    if _failure is not None:
        pytest.fail(_failure, pytrace=False)
    try:
        return _install(cache_root())
    except (RuntimeError, TimeoutError, OSError, subprocess.SubprocessError) as e:
        _failure = f"installing the Python MCP servers ({', '.join(PINS)}) failed: {e}"
        pytest.fail(_failure, pytrace=False)
