"""A guard only: the project is declared in pyproject.toml. Building from source on a Python older than 3.12 stops
here with one clear line, before pip goes looking for a mitmproxy 12 that does not exist for that Python (and then
blames mitmproxy). A wheel needs no guard: pip reads its Requires-Python."""

import sys

from setuptools import setup

if sys.version_info < (3, 12):
    sys.exit(f"mcptape: needs Python 3.12 or newer (mitmproxy 12 does), this is Python {sys.version.split()[0]}: "
             "make the venv with python3.12 or newer (python3.12 -m venv .venv)")
setup()
