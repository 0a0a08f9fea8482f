#!/usr/bin/env bash
# Prints the path of a CPython VERSION (e.g. 3.12) to test and build with: pyenv's,
# else one on PATH, else (3.14 and later, which Debian bookworm does not package) one
# unpacked from Debian sid's packages into a private root (scripts/install-python.sh).
# Usage: scripts/find-python.sh VERSION
set -euo pipefail
version=${1:?usage: find-python.sh VERSION}
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
exe=$(ls -d "$root"/versions/"$version".*/bin/python 2>/dev/null | tail -n1 || true)
[ -n "$exe" ] || exe=$(command -v "python$version" || true)
if [ -z "$exe" ]; then
    minor=${version#3.}
    if [ "${version%%.*}" = 3 ] && [ "$minor" -ge 14 ] 2>/dev/null; then
        exe=$(bash "$(dirname "$0")/install-python.sh" "$version")
    fi
fi
if [ -z "$exe" ]; then
    echo "error: Python $version not found (set EXTRA_PYTHONS to skip it)" >&2
    exit 1
fi
echo "$exe"
