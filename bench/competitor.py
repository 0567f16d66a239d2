"""mcp-cassette, the closest tool to mcptape on PyPI, as a baseline: installed on first use into a venv of its own
(it is not a dependency of mcptape), kept in the temporary directory for later runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

VENV = Path(tempfile.gettempdir()) / "mcptape-bench-mcp-cassette"
PACKAGES = ["mcp-cassette[http]", "pytest"]  # pytest for its fixture's benchmark


def python() -> Path | None:
    """The venv's interpreter, with mcp-cassette installed; None (and a line saying why) if it cannot be installed."""
    if not (VENV / "installed").exists():  # written once the install has succeeded
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        installed = subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", *PACKAGES],
                                   capture_output=True, text=True)
        if installed.returncode != 0:
            print(f"mcp-cassette could not be installed: {installed.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            shutil.rmtree(VENV, ignore_errors=True)
            return None
        (VENV / "installed").write_text(" ".join(PACKAGES) + "\n")
    return VENV / "bin" / "python"


def command() -> str | None:
    """The `mcp-cassette` command, installing it first if needed."""
    return str(VENV / "bin" / "mcp-cassette") if python() else None


def version() -> str | None:
    """The installed mcp-cassette's version, without installing it."""
    if not (VENV / "bin" / "python").exists():
        return None
    out = subprocess.run([str(VENV / "bin" / "python"), "-c", "import importlib.metadata as m; "
                          "print(m.version('mcp-cassette'))"], capture_output=True, text=True)
    return out.stdout.strip() or None
