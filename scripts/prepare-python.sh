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
test -x "$venv/bin/python" || bash scripts/make-venv.sh "$exe" "$venv"
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
