#!/usr/bin/env bash
# Instructions per request on the core's in-memory path (callgrind): the count for
# 3000 reads of 16 requests minus the count for none, divided by 48,000.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
count() {
    N=$1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$PY" benchmarks/micro/core_path.py 2>&1 \
        | awk '/Collected/ {gsub(",", "", $4); print $4}'
}
base=$(count 0)
loaded=$(count 3000)
echo "instructions/request: $(( (loaded - base) / 48000 ))"
