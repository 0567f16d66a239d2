"""The build backend: setuptools' own, except that only building a wheel compiles the core (setup.py). An editable
install is always pure Python: an editable checkout runs its .py files as they are edited, and a compiled module
built next to them would shadow its source and run stale code after the next edit (docs/compiled.md). The other
hooks (what the build requires, the metadata, the sdist) need no compiled module either, and would each run mypy."""

import glob
import os
import shutil

from setuptools import build_meta
from setuptools.build_meta import *  # (the PEP 517 hooks, as setuptools gives them)


def _pure(hook):
    def pure(*args, **kwargs):
        os.environ["MCPTAPE_PURE"] = "1"  # (each hook runs setup.py, in a process of its own)
        return hook(*args, **kwargs)
    return pure


build_editable = _pure(build_meta.build_editable)
get_requires_for_build_editable = _pure(build_meta.get_requires_for_build_editable)
prepare_metadata_for_build_editable = _pure(build_meta.prepare_metadata_for_build_editable)
get_requires_for_build_wheel = _pure(build_meta.get_requires_for_build_wheel)
prepare_metadata_for_build_wheel = _pure(build_meta.prepare_metadata_for_build_wheel)
get_requires_for_build_sdist = _pure(build_meta.get_requires_for_build_sdist)
build_sdist = _pure(build_meta.build_sdist)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    # setuptools stages a wheel in build/lib* (then build/bdist.*, which only a finished build removes) and packs
    # whatever is there: a checkout that was built before (pip install . builds in the tree) would ship the last
    # build's modules, a compiled one since taken off the list or compiled from older sources among them, and a
    # compiled core that does not import
    for staged in glob.glob(os.path.join("build", "lib*")) + glob.glob(os.path.join("build", "bdist.*")):
        shutil.rmtree(staged)
    return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)
