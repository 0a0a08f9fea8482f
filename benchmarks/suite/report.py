"""Results on disk: results.json, table.md and chart.png under results/<date>-<scenario>/."""

import json
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from . import paths
from .measure import Outcome, Plan, Settings

Result = dict[str, Any]


def value(result: Result, server: str, cell: str, metric: str) -> float | None:
    entry = result["results"].get(server, {}).get(cell)
    if entry is None:
        return None
    got = entry["median"].get(metric)
    return float(got) if isinstance(got, int | float) else None


def num(x: float | None, digits: int = 0, suffix: str = "") -> str:
    if x is None:
        return "–"
    return f"{x:,.{digits}f}{suffix}"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def measured_servers(result: Result) -> list[str]:
    return [name for name in result["servers"] if name in result["results"]]


def missing_servers(result: Result) -> str:
    """A list of the servers that did not run and why, for every page."""
    lines = [
        f"- **{name}**: {info['status']}" for name, info in result["servers"].items() if name not in result["results"]
    ]
    return ("Not measured:\n\n" + "\n".join(lines)) if lines else ""


def build(
    module: ModuleType,
    plan: Plan,
    settings: Settings,
    outcome: Outcome,
    machine: dict[str, Any],
    started: datetime,
    finished: datetime,
) -> Result:
    return {
        "scenario": module.NAME,
        "title": module.TITLE,
        "started": started.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
        "quick": settings.quick,
        "settings": settings.__dict__,
        "workers": plan.workers,
        "machine": machine,
        "servers": outcome.servers,
        "cells": [{"key": c.key, "route": c.route, **c.params} for c in plan.cells],
        "results": outcome.results,
        "commands": outcome.commands,
    }


def commands(result: Result) -> str:
    """The exact command lines, folded away: how each server was started and one load
    command per cell (ports differ from run to run; $REPO is the repo root)."""
    lines = [f"- {name}: `{info['command']}`" for name, info in result["servers"].items() if "command" in info]
    lines += [f"- cell {key}: `{line.replace(str(paths.REPO), '$REPO')}`" for key, line in result["commands"].items()]
    body = "\n".join(lines)
    return f"<details><summary>Exact commands</summary>\n\n{body}\n\n</details>"


def page(module: ModuleType, result: Result, chart_link: str) -> str:
    quick = result["quick"]
    mode = " (quick mode: ~1 s per cell, 1 run; indicative only)" if quick else ""
    make = f"make bench SCENARIO={module.NAME}{' QUICK=1' if quick else ''}"
    # What is measured and how, then the run's table and chart (the reading follows on the page).
    parts = [
        f"## {module.TITLE}",
        "**Method.** " + module.METHOD.strip(),
        f"Run {result['started']} on {result['machine']['cpu']}, {result['machine']['cores']} cores, "
        f"veter {result['machine']['veter']['commit']}{mode}, by `{make}`.",
        module.table(result),
        f"![{module.NAME}]({chart_link})",
        missing_servers(result),
        commands(result),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def save(module: ModuleType, result: Result) -> Path:
    day = result["started"][:10]
    # Quick runs get their own folder so a CI smoke run never replaces a full run's data.
    out = paths.RESULTS / f"{day}-{module.NAME}{'-quick' if result['quick'] else ''}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    module.chart(result, out / "chart.png")
    (out / "table.md").write_text(page(module, result, "chart.png"))
    return out
