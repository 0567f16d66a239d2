# Sourced by scripts/demo and scripts/test: make (or reuse) the venv and install mcptape with the given extra. A
# fresh machine needs nothing but a Python 3.12+ (pyenv's, through .python-version, here). $MCPTAPE_VENV names
# another venv folder and $MCPTAPE_PYTHON the interpreter to make it with (CI runs the suite on 3.12 that way).
# MCPTAPE_COMPILED=1 compiles the core with mypyc in place, as a wheel ships it (CI and bench/ run that way);
# without it the checkout runs pure Python (docs/compiled.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
extra="$1"
venv="${MCPTAPE_VENV:-.venv}"
if [ ! -x "$venv/bin/python" ]; then
  py=""
  for candidate in ${MCPTAPE_PYTHON:-} python3 python3.13 python3.12; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      py="$candidate"; break
    fi
  done
  if [ -z "$py" ]; then
    echo "mcptape: needs Python 3.12 or newer (mitmproxy 12 does), none found on PATH: install one (pyenv install 3.12)" >&2
    exit 2
  fi
  "$py" -m venv "$venv"
fi
# The install is editable: code changes need none. Reinstall only when pyproject.toml (dependencies, entry points)
# or the extra changed since the last install that succeeded, as the stamp says.
stamp="$venv/.mcptape-installed-$extra"
want="$(cksum < pyproject.toml)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  status=0
  out="$("$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[$extra]" 2>&1)" || status=$?
  printf '%s\n' "$out" | grep -v -e "^WARNING: Location" -e "is ignored: it is neither a file nor a directory" \
    -e "^$" || true
  if [ "$status" -eq 0 ]; then
    printf '%s\n' "$want" > "$stamp"
  fi
fi
# The compiled core sits beside its sources (mcptape/**/*.so): built again whenever a source is newer than it, and
# removed for a pure run, so no run ever imports a compiled module older than its source.
suffix="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
if [ "${MCPTAPE_COMPILED:-}" = "1" ]; then
  core="mcptape/core__mypyc$suffix"
  if [ ! -e "$core" ] ||
     [ -n "$(find mcptape setup.py pyproject.toml -newer "$core" \( -name '*.py' -o -name '*.toml' \) | head -1)" ]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $("$venv/bin/python" -c \
      'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"])') 2>&1 |
      grep -v -e "^WARNING: Location" -e "is ignored: it is neither a file nor a directory" -e "^$" || true
    echo "mcptape: compiling the core with mypyc (a minute)..." >&2
    find mcptape -name "*.so" -delete  # (a module taken off the list must not stay compiled)
    "$venv/bin/python" setup.py --quiet build_ext --inplace >/dev/null
    if [ -e "$core" ]; then touch "$core"; fi  # (a compile that failed leaves the pure core, and says so)
  fi
else
  find mcptape -name "*.so" -delete  # (every Python's: a compiled core is only ever as new as this run made it)
fi
