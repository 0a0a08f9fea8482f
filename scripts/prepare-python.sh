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
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
exe=$(ls -d "$root"/versions/"$version"*/bin/python 2>/dev/null | tail -n1 || true)
[ -n "$exe" ] || exe=$(command -v "python$version" || true)
if [ -z "$exe" ]; then
    echo "error: Python $version not found (set EXTRA_PYTHONS to skip it)" >&2
    exit 1
fi
venv=.venv-$version
exec 9>"$venv.lock"
flock 9
test -x "$venv/bin/python" || "$exe" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet "$@"
VIRTUAL_ENV=$PWD/$venv PYO3_PYTHON=$PWD/$venv/bin/python CARGO_TARGET_DIR=target/py$version \
    "$venv/bin/maturin" develop --release --quiet
