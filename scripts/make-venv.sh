#!/usr/bin/env bash
# A virtualenv with pip for the Python EXE at DIR. An interpreter unpacked from
# Debian's packages (scripts/install-python.sh) gets the pip wheel of its own root:
# its ensurepip looks in the system's /usr/share/python-wheels, whose pip (bookworm's)
# is too old for it.
# Usage: scripts/make-venv.sh EXE DIR
set -euo pipefail
exe=${1:?usage: make-venv.sh EXE DIR}
dir=${2:?usage: make-venv.sh EXE DIR}
prefix=$("$exe" -c "import sys; print(sys.base_prefix)")
wheels=$prefix/share/python-wheels
if [ "$prefix" != /usr ] && ls "$wheels"/pip-*.whl >/dev/null 2>&1; then
    "$exe" -m venv --without-pip "$dir"
    "$dir/bin/python" -c "import ensurepip, pathlib, sys; ensurepip._WHEEL_PKG_DIR = pathlib.Path(sys.argv[1]); sys.exit(ensurepip._main(['--upgrade', '--default-pip']))" "$wheels" >/dev/null
else
    "$exe" -m venv "$dir"
fi
