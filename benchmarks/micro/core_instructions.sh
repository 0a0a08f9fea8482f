#!/usr/bin/env bash
# Instructions per request on the core's in-memory path (callgrind), for every
# scenario of core_path.py or the ones named: see instructions.py.
#   benchmarks/micro/core_instructions.sh [SCENARIO ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
exec "${PY:-.venv/bin/python}" benchmarks/micro/instructions.py "$@"
