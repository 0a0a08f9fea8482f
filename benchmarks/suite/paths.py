"""Where things live: the suite, its scratch space, tools and interpreters."""

import os
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent
APPS = BENCH / "apps"
WORK = BENCH / ".work"
RESULTS = BENCH / "results"
DOCS_PAGE = REPO / "docs" / "benchmarks.md"
NOTES = BENCH / "notes"  # per scenario: what its latest run means, then its History
LUA_SCRIPT = BENCH / "lua" / "wrk_report.lua"

PEERS_VENV = WORK / "venv-peers"
JAPRONTO_VENV = WORK / "venv-japronto"
PEERS_BIN = PEERS_VENV / "bin"
OHA = WORK / "cargo" / "bin" / "oha"
WRK = Path("/usr/bin/wrk")
GO_BIN = WORK / "bin" / "gohttp"
WSLOAD = WORK / "bin" / "wsload"  # go/wsload, the WebSocket echo load generator

#: veter built as one abi3 wheel (the stable ABI, Python 3.11+), for the wheels scenario.
ABI3_VENV = WORK / "venv-abi3"
ABI3_PYTHON = ABI3_VENV / "bin" / "python"

VETER_PYTHON = Path(os.environ.get("VETER_PYTHON", str(REPO / ".venv" / "bin" / "python")))

SERVER_CPU = os.environ.get("BENCH_SERVER_CPU", "0")
LOADGEN_CPU = os.environ.get("BENCH_LOADGEN_CPU", "1")


def veter_run(module: str) -> list[str]:
    """`python -m veter run MODULE` with the access log off: no peer logs requests in
    these scenarios (the accesslog scenario measures what logging costs)."""
    return [str(VETER_PYTHON), "-m", "veter", "run", module, "--access-log", "off"]
