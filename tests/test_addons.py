"""The `mitmdump -s` scripts: one copy each, in the top-level addons/ folder, installed as mcptape.addons. Loaded
from a checkout by path, and from a wheel installed in a fresh virtualenv by `mcptape addons NAME`, both record."""

from __future__ import annotations

import os
import shutil
import signal
import site
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import anyio

from mcptape.demo.client import script
from mcptape.tape.file import read

from .conftest import BIN, free_port, run_mcptape, stop, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.name for p in (ROOT / "addons").glob("*.py") if p.name != "__init__.py")


def test_the_package_list_names_every_package():
    """pyproject.toml lists the packages by hand (find() cannot map addons/ into mcptape): none may be missing."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "mcptape").rglob("__init__.py")}
    assert set(config["packages"]) == on_disk | {"mcptape.addons"}
    assert config["package-dir"] == {"mcptape.addons": "addons"}
    assert not (ROOT / "mcptape" / "addons").exists()  # no second copy


def test_mcptape_addons_prints_the_scripts():
    listed = [Path(line) for line in run_mcptape("addons").stdout.split()]
    assert [p.name for p in listed] == SCRIPTS and {"edit.py", "record.py"} <= set(SCRIPTS)
    for path in listed:  # the installed file is the checkout's (an editable install: the same file)
        assert path.read_bytes() == (ROOT / "addons" / path.name).read_bytes()
    assert run_mcptape("addons", "edit").stdout.strip() == str(listed[SCRIPTS.index("edit.py")])


def _record_through_mitmdump(python: str, addon: str, upstream: str, tape: Path, cwd: Path) -> list[dict]:
    port = free_port()
    proc = subprocess.Popen(
        [python, "-c", "import sys; from mitmproxy.tools.main import mitmdump; sys.argv[0] = 'mitmdump'; mitmdump()",
         "-q", "--listen-host", "127.0.0.1", "-p", str(port), "--mode", f"reverse:{upstream.rsplit('/mcp', 1)[0]}",
         "-s", addon, "--set", f"mcptape_tape={tape}", "--set", "mcptape_endpoint=/mcp"],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc)
        assert anyio.run(script, f"http://127.0.0.1:{port}/mcp", "legacy")[0].startswith("protocol")
    finally:
        assert stop(proc, signal.SIGINT) == 0, proc.stderr.read()
    records = read(tape).records
    assert records[0]["kind"] == "capture.start" and records[-1]["kind"] == "capture.stop"
    assert any(isinstance(r.get("msg"), dict) and r["msg"].get("method") == "tools/call" for r in records)
    return records


def test_mitmdump_loads_addons_record_py_from_a_checkout(demo_server, tmp_path):
    _record_through_mitmdump(str(BIN / "python"), "addons/record.py", demo_server(), tmp_path / "t.mcptape", ROOT)


def test_a_wheel_in_a_fresh_venv_has_the_scripts_once_and_records(demo_server, tmp_path):
    source = tmp_path / "source"  # a copy, so the build leaves nothing in the checkout
    for folder in ("mcptape", "addons"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for name in ("pyproject.toml", "README.md", "setup.py", "backend.py"):
        shutil.copy(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source), "-w", str(wheels)],
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "MCPTAPE_PURE": "1"})  # (the compiled wheel: tests/peers/test_packaging)
    assert built.returncode == 0, built.stderr
    [wheel] = wheels.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for name in SCRIPTS:
        assert [n for n in names if n.endswith("addons/" + name)] == [f"mcptape/addons/{name}"]
    assert not [n for n in names if n.startswith("addons/")]

    venv = tmp_path / "venv"  # fresh: mcptape from the wheel; its dependencies read from this venv's site-packages
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                                "--no-deps", "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    fresh_site = next((venv / "lib").glob("python3*/site-packages"))
    (fresh_site / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    addon = subprocess.run([str(venv / "bin" / "mcptape"), "addons", "record"], capture_output=True, text=True,
                           timeout=60).stdout.strip()
    assert Path(addon) == fresh_site / "mcptape" / "addons" / "record.py"
    _record_through_mitmdump(str(venv / "bin" / "python"), addon, demo_server(), tmp_path / "t.mcptape", tmp_path)
