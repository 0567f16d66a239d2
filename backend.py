"""The build backend: setuptools' own, except that an editable install is always pure Python. An editable checkout
runs its .py files as they are edited; a compiled module built next to them would shadow its source and run stale
code after the next edit (docs/compiled.md). A wheel or a plain `pip install .` compiles the core (setup.py)."""

import os

from setuptools.build_meta import *  # noqa: F401,F403 (the PEP 517 hooks, as setuptools gives them)
from setuptools.build_meta import build_editable as _build_editable


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    os.environ["MCPTAPE_PURE"] = "1"
    return _build_editable(wheel_directory, config_settings, metadata_directory)
