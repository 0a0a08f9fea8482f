#!/usr/bin/env bash
# One extra supported Python ready for the tests: its venv (.venv-VERSION), the test
# packages, and veter built into it (release, its own cargo target dir).
# Usage: scripts/prepare-python.sh VERSION PIP_SPEC...
# Held under a lock, so .ci/run can start it in the background ahead of time and
# `make py-versions` (which calls it again) waits for it, then finds nothing to do.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1
shift
venv=.venv-$version
exec 9>"$venv.lock"
flock 9
exe=$(bash scripts/find-python.sh "$version")
if [ ! -x "$venv/bin/python" ]; then
    wheels=$(dirname "$(dirname "$exe")")/share/python-wheels
    if [ -d "$wheels" ] && ls "$wheels"/pip-*.whl >/dev/null 2>&1; then
        # An interpreter from Debian's packages (scripts/install-python.sh): its
        # ensurepip looks for pip in the system's /usr/share/python-wheels (bookworm's
        # pip, too old for it); give it the pip wheel that came with it.
        "$exe" -m venv --without-pip "$venv"
        "$venv/bin/python" -c "import ensurepip, pathlib, sys; ensurepip._WHEEL_PKG_DIR = pathlib.Path(sys.argv[1]); sys.exit(ensurepip._main(['--upgrade', '--default-pip']))" "$wheels" >/dev/null
    else
        "$exe" -m venv "$venv"
    fi
fi
# An interpreter from Debian's packages keeps part of its headers in the multiarch
# directory of its root (pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>):
# packages built from source (zstandard on 3.15) need that root on the include path.
prefix=$("$venv/bin/python" -c "import sys; print(sys.base_prefix)")
if [ -d "$prefix/include/x86_64-linux-gnu" ]; then
    export CPATH=$prefix/include${CPATH:+:$CPATH}
fi
"$venv/bin/python" -m pip install --quiet "$@"
VIRTUAL_ENV=$PWD/$venv PYO3_PYTHON=$PWD/$venv/bin/python CARGO_TARGET_DIR=target/py$version \
    "$venv/bin/maturin" develop --release --quiet
