#!/usr/bin/env bash
# Installs Autobahn|Testsuite (wstest) into a Python 2.7 virtualenv, for
# tests/e2e/test_autobahn.py. The suite still runs only on Python 2.7, which the
# machine has under pyenv; virtualenv before 20.22 is the last that makes 2.7 envs.
#
#   AUTOBAHN_VENV   where to install (default: .venv-autobahn in the repository)
#   PYTHON27        the Python 2.7 interpreter (default: pyenv's 2.7.x, then python2.7)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
venv=${AUTOBAHN_VENV:-$root/.venv-autobahn}

if [ -x "$venv/bin/wstest" ] && cmp -s "$here/requirements.txt" "$venv/.requirements.txt"; then
    exit 0
fi

py27=${PYTHON27:-}
if [ -z "$py27" ]; then
    pyenv_root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    py27=$(ls -d "$pyenv_root"/versions/2.7*/bin/python 2>/dev/null | tail -n1 || true)
fi
[ -n "$py27" ] || py27=$(command -v python2.7 || true)
if [ -z "$py27" ]; then
    echo "error: Autobahn|Testsuite needs Python 2.7: install it (pyenv install 2.7.18) or set PYTHON27" >&2
    exit 1
fi

echo "== installing Autobahn|Testsuite into $venv (Python 2.7: $py27)"
tools=$venv.tools
rm -rf "$venv" "$tools"
python3 -m venv "$tools"
"$tools/bin/pip" install --quiet --disable-pip-version-check "virtualenv<20.22"
"$tools/bin/virtualenv" --quiet -p "$py27" "$venv"
rm -rf "$tools"
PYTHONWARNINGS=ignore "$venv/bin/pip" install --quiet --disable-pip-version-check --no-python-version-warning \
    -r "$here/requirements.txt"
"$venv/bin/wstest" --help >/dev/null
cp "$here/requirements.txt" "$venv/.requirements.txt"
