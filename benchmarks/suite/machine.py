"""What the results were measured on: the machine and the versions of everything."""

import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from . import paths


def _run(argv: list[str], cwd: Path | None = None) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else f"exit {out.returncode}"


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 1024 / 1024, 1)
    return 0.0


def _pip_versions(python: Path) -> dict[str, str]:
    if not python.exists():
        return {}
    out = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return {row["name"].lower(): row["version"] for row in json.loads(out.stdout)}
    except json.JSONDecodeError:
        return {}


def describe() -> dict[str, Any]:
    veter_version = _run(
        [str(paths.VETER_PYTHON), "-c", "import veter; print(getattr(veter, '__version__', '?'))"], cwd=paths.REPO
    )
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "kernel": platform.release(),
        "server_cpu": paths.SERVER_CPU,
        "loadgen_cpu": paths.LOADGEN_CPU,
        "network": "loopback (127.0.0.1)",
        "tools": {
            "wrk": _run([str(paths.WRK), "-v"]),
            "oha": _run([str(paths.OHA), "--version"]),
            "h2load": _run([str(paths.H2LOAD), "--version"]),
            "nginx": _run(["/usr/sbin/nginx", "-v"]),
            "go": _run(["go", "version"]),
            "wsload": _run([str(paths.WSLOAD), "-version"]),
            "python (peers)": _run([str(paths.PEERS_BIN / "python"), "--version"]),
            "python (japronto)": _run([str(paths.JAPRONTO_VENV / "bin" / "python"), "--version"]),
            "python (veter)": _run([str(paths.VETER_PYTHON), "--version"]),
            "python (peers 3.14)": _run([str(paths.PEERS_314_BIN / "python"), "--version"]),
            **{f"python (veter {v})": _run([str(py), "--version"]) for v, py in paths.VETER_PYTHONS.items()},
            "python (veter 3.11, Debian's)": _run([str(paths.VETER_DEBIAN_311), "--version"]),
            "postgres": _run(["bash", "-c", "ls /usr/lib/postgresql | sort -n | tail -1"]),
            "redis": _run(["redis-server", "--version"]),
        },
        "veter": {
            "commit": _run(["git", "describe", "--always", "--dirty"], cwd=paths.REPO),
            "version": veter_version,
        },
        "packages": _pip_versions(paths.PEERS_BIN / "python"),
        "packages_japronto": _pip_versions(paths.JAPRONTO_VENV / "bin" / "python"),
        "packages_peers_3.14": _pip_versions(paths.PEERS_314_BIN / "python"),
        **{f"packages_veter_{v}": _pip_versions(py) for v, py in paths.VETER_PYTHONS.items() if v != "3.11"},
    }
