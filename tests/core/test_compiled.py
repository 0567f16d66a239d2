"""Which core runs: the modules pyproject.toml lists under [tool.mcptape-build] compiled are all compiled or all
pure (never half), compiled when the run asked for it (MCPTAPE_COMPILED=1, as CI runs) and a C compiler is there,
and never older than their sources (docs/compiled.md)."""

import importlib
import os
import shutil
import sysconfig
import tomllib
from pathlib import Path

import pytest

import mcptape

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
MODULES = tomllib.loads(PYPROJECT.read_text())["tool"]["mcptape-build"]["compiled"]


def loaded() -> dict[Path, Path]:
    """Each listed module's source -> the file it was loaded from."""
    package = Path(mcptape.__file__).parent
    return {package.parent / name: Path(importlib.import_module(name.removesuffix(".py").replace("/", ".")).__file__)
            for name in MODULES}


def test_the_listed_modules_are_all_compiled_or_all_pure():
    kinds = {file.suffix for file in loaded().values()}
    assert kinds in ({".py"}, {".so"}), f"half the core is compiled: {loaded()}"


def test_the_core_is_compiled_when_the_run_asks_for_it_and_a_compiler_is_there():
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if os.environ.get("MCPTAPE_COMPILED") != "1" or not shutil.which(cc):
        pytest.skip("a pure run (MCPTAPE_COMPILED=1 asks for the compiled core), or no C compiler")
    pure = [str(file) for file in loaded().values() if file.suffix != ".so"]
    assert not pure, f"MCPTAPE_COMPILED=1 and a C compiler is there, but these were loaded as Python: {pure}"


def test_a_compiled_core_is_never_older_than_its_sources():
    core = Path(mcptape.__file__).with_name("core__mypyc" + sysconfig.get_config_var("EXT_SUFFIX"))
    if not core.exists():
        pytest.skip("the pure core: nothing to be stale")
    newer = [str(source) for source in loaded() if source.stat().st_mtime > core.stat().st_mtime]
    assert not newer, f"edited since the core was compiled (MCPTAPE_COMPILED=1 bash scripts/venv.sh test): {newer}"
