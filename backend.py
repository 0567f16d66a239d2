"""The build backend: setuptools' own, except that an editable install is always pure Python. An editable checkout
runs its .py files as they are edited; a compiled module built next to them would shadow its source and run stale
code after the next edit (docs/compiled.md). A wheel or a plain `pip install .` compiles the core (setup.py)."""

import os

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F401,F403 (the PEP 517 hooks, as setuptools gives them)


def _pure(hook):
    def editable(*args, **kwargs):
        os.environ["MCPTAPE_PURE"] = "1"  # (each hook runs setup.py: none of them compiles)
        return hook(*args, **kwargs)
    return editable


build_editable = _pure(build_meta.build_editable)
get_requires_for_build_editable = _pure(build_meta.get_requires_for_build_editable)
prepare_metadata_for_build_editable = _pure(build_meta.prepare_metadata_for_build_editable)
