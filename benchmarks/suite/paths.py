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
#: The peers on Python 3.14 (uvicorn on zuvloop, which needs 3.14+); setup/install.sh
#: makes it from scripts/find-python.sh 3.14.
PEERS_314_BIN = WORK / "venv-peers-3.14" / "bin"
#: zuvloop for veter's 3.14 (pip --target, so the repo's .venv-3.14 stays as made).
ZUVLOOP_314 = WORK / "zuvloop-3.14"
OHA = WORK / "cargo" / "bin" / "oha"
WRK = Path("/usr/bin/wrk")
H2LOAD = Path("/usr/bin/h2load")  # nghttp2-client: the HTTP/2 load generator
GO_BIN = WORK / "bin" / "gohttp"
WSLOAD = WORK / "bin" / "wsload"  # go/wsload, the WebSocket echo load generator

#: veter built as one abi3 wheel (the stable ABI, Python 3.11+), for the wheels scenario.
ABI3_VENV = WORK / "venv-abi3"
ABI3_PYTHON = ABI3_VENV / "bin" / "python"

VETER_PYTHON = Path(os.environ.get("VETER_PYTHON", str(REPO / ".venv" / "bin" / "python")))

#: veter on each supported Python: the repo's venvs (.venv is the lead's 3.11; the others
#: are made by `make py-versions-prepare`, veter built into each, release).
VETER_PYTHONS = {
    "3.11": REPO / ".venv" / "bin" / "python",
    **{v: REPO / f".venv-{v}" / "bin" / "python" for v in ("3.12", "3.13", "3.14", "3.15")},
}
#: veter on Debian's own 3.11 (/usr/bin/python3.11, built by Debian with PGO and LTO, as
#: 3.14 and 3.15 above are; pyenv's 3.11-3.13 are built without): a wheel of the current
#: code installed into a venv of .work by setup/install.sh.
VETER_DEBIAN_311 = WORK / "venv-veter-3.11-debian" / "bin" / "python"

SERVER_CPU = os.environ.get("BENCH_SERVER_CPU", "0")
LOADGEN_CPU = os.environ.get("BENCH_LOADGEN_CPU", "1")


def veter_run(module: str, python: Path | None = None) -> list[str]:
    """`python -m veter run MODULE` with the access log off: no peer logs requests in
    these scenarios (the accesslog scenario measures what logging costs). By
    VETER_PYTHON unless another interpreter is named."""
    return [str(python or VETER_PYTHON), "-m", "veter", "run", module, "--access-log", "off"]
