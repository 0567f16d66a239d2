"""mcptape installs from its source as a receiver would: `python -m build` makes a wheel and an sdist; each installs
into a fresh venv with the console script, the mitmdump addons and the pytest plugin; and a bundle's README install
commands, run as written in the folder that holds a copy of the checkout named `mcptape`, give the version that
made the bundle. The fresh venvs borrow the dependencies from this one's site-packages (a .pth), so the test needs
no index; what it checks is mcptape's own packaging."""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from mcptape import __version__

from ..conftest import run_mcptape

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "cassettes"
# The wheel's core is compiled when the run asks for it (CI: MCPTAPE_COMPILED=1; it takes a minute), pure otherwise;
# the other installs here are pure (docs/compiled.md)
COMPILED = os.environ.get("MCPTAPE_COMPILED") == "1"
PURE = {**os.environ, "MCPTAPE_PURE": "1"}


def copy_source(to: Path) -> Path:
    """What a checkout holds that the build reads (a copy: the build leaves nothing in the checkout)."""
    for folder in ("mcptape", "addons"):
        shutil.copytree(ROOT / folder, to / folder, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for name in ("pyproject.toml", "README.md", "setup.py", "backend.py", "MANIFEST.in"):
        shutil.copy(ROOT / name, to / name)
    return to


def fresh_venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    fresh_site = next((where / "lib").glob("python3*/site-packages"))
    (fresh_site / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return where / "bin"


def pip_install(bin_: Path, *what: str, cwd: Path | None = None) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(bin_ / "python"), "install", "--no-deps",
                           "-q", *what], capture_output=True, text=True, timeout=300, cwd=cwd, env=PURE)
    assert done.returncode == 0, done.stderr


def assert_works(bin_: Path, compiled: bool = False) -> None:
    version = subprocess.run([str(bin_ / "mcptape"), "--version"], capture_output=True, text=True, timeout=60)
    assert version.stdout.strip() == f"mcptape, version {__version__}", version
    addon = subprocess.run([str(bin_ / "mcptape"), "addons", "record"], capture_output=True, text=True, timeout=60)
    assert addon.returncode == 0 and Path(addon.stdout.strip()).is_file() and "site-packages" in addon.stdout
    plugin = subprocess.run([str(bin_ / "python"), "-c", "from importlib.metadata import entry_points; "
                             "print([e.value for e in entry_points(group='pytest11') if e.name == 'mcptape'])"],
                            capture_output=True, text=True, timeout=60)
    assert plugin.stdout.strip() == "['mcptape.testing.plugin']", plugin
    checked = subprocess.run([str(bin_ / "mcptape"), "check", str(CASSETTES / "expired-session-404.mcptape")],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 1 and "no-reinitialize" in checked.stdout, checked
    core = subprocess.run([str(bin_ / "python"), "-c", "import mcptape.model; print(mcptape.model.__file__)"],
                          capture_output=True, text=True, timeout=60, cwd=bin_)
    assert core.stdout.strip().endswith(".so" if compiled else ".py"), core


def test_python_m_build_makes_a_wheel_and_an_sdist_that_install_into_a_fresh_venv(tmp_path):
    source = copy_source(tmp_path / "source")
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"),
                            str(source)], capture_output=True, text=True, timeout=600, env=None if COMPILED else PURE)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    [wheel] = (tmp_path / "dist").glob("*.whl")
    [sdist] = (tmp_path / "dist").glob("*.tar.gz")
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}" if COMPILED else "py3-none-any"
    assert wheel.name.startswith(f"mcptape-{__version__}-{tag}") and sdist.name == f"mcptape-{__version__}.tar.gz"
    assert "mcptape/addons/record.py" in zipfile.ZipFile(wheel).namelist()
    for n, artefact in enumerate((wheel, sdist)):
        bin_ = fresh_venv(tmp_path / f"venv-{n}")
        pip_install(bin_, str(artefact))
        assert_works(bin_, compiled=COMPILED and artefact is wheel)


def test_a_bundles_install_commands_run_as_written(tmp_path):
    bug = tmp_path / "bug.zip"
    assert run_mcptape("bundle", str(CASSETTES / "expired-session-404.mcptape"), "-o", str(bug)).returncode == 0
    readme = zipfile.ZipFile(bug).read("README.md").decode()
    assert f"Install mcptape {__version__}, the version that made this bundle" in readme
    block = readme.split("## Install", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.partition("  #")[0].strip() for line in block.splitlines()]
    assert commands[0] == "python3 -m venv .venv && . .venv/bin/activate" and commands[1] == "pip install ./mcptape"
    checkout = copy_source(tmp_path / "mcptape")  # a checkout, beside which the receiver runs the commands
    # that built before: `pip install .` builds in the tree, and what an older build staged must not be shipped (one
    # that finished leaves build/lib, one interrupted its wheel's tree too)
    for where in ("lib", f"bdist.{sysconfig.get_platform()}/wheel"):
        staged = checkout / "build" / where / "mcptape"
        staged.mkdir(parents=True)
        (staged / "taken_out.py").write_text("raise SystemExit('an older build')\n")
    bin_ = fresh_venv(tmp_path / ".venv")  # the first command, with this interpreter (and its dependencies)
    pip_install(bin_, "./mcptape", cwd=tmp_path)  # the second, as written
    said = re.search(r"mcptape --version\s+# (.*)", block)[1]
    assert subprocess.run([str(bin_ / "mcptape"), "--version"], capture_output=True, text=True,
                          timeout=60).stdout.strip() == said
    assert_works(bin_)
    assert not list((tmp_path / ".venv" / "lib").glob("python3*/site-packages/mcptape/taken_out.py"))
