"""The project is declared in pyproject.toml; this adds the compiled core (docs/compiled.md): the modules listed
under [tool.mcptape-build] compiled, built with mypyc when a C compiler is there, unless MCPTAPE_PURE=1 (and
always pure in an editable install: backend.py). Without a compiler the same package installs as pure Python.

It also guards: building from source on a Python older than 3.12 stops here with one clear line, before pip goes
looking for a mitmproxy 12 that does not exist for that Python (and then blames mitmproxy). A wheel needs no guard:
pip reads its Requires-Python."""

import os
import shutil
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext

if sys.version_info < (3, 12):
    sys.exit(f"mcptape: needs Python 3.12 or newer (mitmproxy 12 does), this is Python {sys.version.split()[0]}: "
             "make the venv with python3.12 or newer (python3.12 -m venv .venv)")


def compiled_core() -> list:
    """The core's extension modules, or none: pure Python when asked, or when there is no C compiler."""
    if os.environ.get("MCPTAPE_PURE") == "1":
        return []
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:  # the pure package works the same, slower
        print(f"mcptape: no C compiler ({cc}): installing the pure-Python core", file=sys.stderr)
        return []
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):  # (python3-dev missing)
        print("mcptape: no Python.h for this Python: installing the pure-Python core", file=sys.stderr)
        return []
    import tomllib

    from mypyc.build import mypycify

    with open("pyproject.toml", "rb") as f:
        modules = tomllib.load(f)["tool"]["mcptape-build"]["compiled"]
    # mypy's Optional and argument checks are off for the build: where the code is not annotated that narrowly
    # (an Exchange | None read as set, a dict key from a record), mypyc compiles a dynamic operation
    loose = [f"--disable-error-code={code}" for code in ("union-attr", "arg-type", "assignment", "attr-defined",
                                                         "call-arg", "index", "operator", "var-annotated")]
    # one shared library for them all (calls between them stay native), inside the package: mcptape/core__mypyc
    try:
        return mypycify([*loose, "--ignore-missing-imports", "--follow-imports=silent", *modules], opt_level="3",
                        group_name="mcptape.core")
    except (Exception, SystemExit) as e:  # mypy or mypyc refused (it exits): the pure core works the same
        why = f"it exited {e.code}, saying why above" if isinstance(e, SystemExit) else str(e) or type(e).__name__
        print(f"mcptape: mypyc could not compile the core ({why}): installing the pure-Python core", file=sys.stderr)
        return []


class OptionalBuildExt(build_ext):
    """A compile that fails (a compiler that cannot build for this Python) installs the pure core, never half a
    compiled one: the modules of the group import one another's native code, so what was built goes too."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # CompileError, LinkError, DistutilsExecError…: whatever the toolchain raised
            for built in self.get_outputs():
                if os.path.exists(built):
                    os.remove(built)
            why = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
            print(f"mcptape: compiling the core failed ({why}): installing the pure-Python core", file=sys.stderr)


setup(ext_modules=compiled_core(), cmdclass={"build_ext": OptionalBuildExt})
