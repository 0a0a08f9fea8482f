"""Run a plan: rounds of servers interleaved (A B C A B C), each cell once per round, medians.

A server is started fresh for each round, warmed up, measured on every cell it
serves, and stopped. A server that cannot start in the first round is dropped and
its reason recorded; the run goes on.
"""

import shlex
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import loadgen, procs
from .loadgen import Metrics
from .paths import REPO, SERVER_CPU, WORK
from .servers import ROUTES, Server


@dataclass(frozen=True)
class Settings:
    quick: bool
    runs: int
    seconds: int  # closed-loop cells
    latency_seconds: float  # open-loop cells
    warmup: int

    @classmethod
    def make(cls, quick: bool, runs: int | None = None, seconds: int | None = None) -> "Settings":
        if quick:
            return cls(quick, runs or 1, seconds or 1, float(seconds or 1), 1)
        return cls(quick, runs or 3, seconds or 5, float(seconds or 10), 2)


@dataclass
class Target:
    """What a cell gets to measure: the running server and its base URL."""

    server: Server
    running: procs.Running
    settings: Settings

    def url(self, route: str) -> str:
        return f"http://127.0.0.1:{self.running.port}{ROUTES[route]}"


@dataclass(frozen=True)
class Cell:
    key: str
    route: str
    run: Callable[[Target], Metrics]
    ladder: str | None = None  # cells of one ladder stop for a server after its first failure
    failed: Callable[[Metrics], bool] | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    scenario: str
    servers: list[Server]
    cells: list[Cell]
    workers: int = 1
    server_env: dict[str, str] = field(default_factory=dict)
    ready_route: str = "plaintext"
    # How readiness is asked (port, path -> status): HTTP/1.1 unless named (h2c.status).
    ready_probe: Callable[[int, str], int | None] = procs.http_status
    warmup_route: str | None = None  # None: the ready route
    warmup: Callable[[Target], Metrics] | None = None  # None: wrk on warmup_route
    # Run after each server stops, with that round's cell metrics; stored as cell AFTER_KEY.
    after: Callable[[Target, list[Metrics]], Metrics] | None = None


AFTER_KEY = "after run"


@dataclass
class Outcome:
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    commands: dict[str, str] = field(default_factory=dict)  # cell key -> first command run


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def median_of(runs: list[Metrics]) -> Metrics:
    keys = {k for run in runs for k, v in run.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    out: Metrics = {}
    for key in sorted(keys):
        values = [run[key] for run in runs if isinstance(run.get(key), int | float)]
        out[key] = statistics.median(values) if values else None
    return out


def _cells_for(server: Server, plan: Plan) -> list[Cell]:
    return [cell for cell in plan.cells if cell.route in server.routes]


def execute(plan: Plan, settings: Settings) -> Outcome:
    outcome = Outcome()
    active: list[Server] = []
    for server in plan.servers:
        reason = server.unavailable()
        outcome.servers[server.name] = {"what": server.what, "status": reason or "ok"}
        if reason:
            say(f"[{plan.scenario}] {server.name}: skipped, {reason}")
        else:
            active.append(server)
    raw: dict[tuple[str, str], list[Metrics]] = {}
    for round_no in range(1, settings.runs + 1):
        this_round = list(active)
        for index, server in enumerate(this_round, start=1):
            head = f"[{plan.scenario} run {round_no}/{settings.runs}] {index}/{len(this_round)} {server.name}"
            target = _start(plan, server, settings, outcome, head, first=round_no == 1)
            if target is None:
                if round_no == 1:
                    active.remove(server)
                continue
            try:
                measured = _measure(plan, target, settings, raw, outcome, head)
            finally:
                target.running.stop()
            if plan.after is not None:
                checked = plan.after(target, measured)
                raw.setdefault((server.name, AFTER_KEY), []).append(checked)
                say(f"{head}: {_brief(checked)}")
    for (server_name, key), runs in raw.items():
        bucket = outcome.results.setdefault(server_name, {})
        bucket[key] = {"median": median_of(runs), "runs": runs}
    return outcome


def _start(plan: Plan, server: Server, settings: Settings, outcome: Outcome, head: str, first: bool) -> Target | None:
    port = procs.free_port()
    log = WORK / "logs" / plan.scenario / f"{server.name}.log"
    run_dir = WORK / "run" / plan.scenario / server.name
    run_dir.mkdir(parents=True, exist_ok=True)
    if server.prepare:
        server.prepare(run_dir, port, plan.workers)
    argv = server.argv(port, plan.workers)
    say(f"{head}: starting")
    try:
        env = {**plan.server_env, **server.env}
        ready = ROUTES[server.ready_route or plan.ready_route]
        running = procs.start(argv, port, ready, log, server.cwd, env, cpus=server.cpus, probe=plan.ready_probe)
    except procs.StartError as exc:
        reason = f"failed to start: {exc}"
        say(f"{head}: {reason}")
        if first:
            outcome.servers[server.name]["status"] = reason
        return None
    if first:
        outcome.servers[server.name]["argv"] = argv
        outcome.servers[server.name]["command"] = _shell_line(server, port, env, argv)
    target = Target(server, running, settings)
    if plan.warmup is not None:
        say(f"{head}: warmed up ({_brief(plan.warmup(target))})")
        return target
    warm_route = plan.warmup_route or server.ready_route or plan.ready_route
    warm = loadgen.wrk(target.url(warm_route), 50, settings.warmup)
    say(f"{head}: warmed up ({warm.get('rps', 0):,.0f} req/s)")
    return target


def _measure(
    plan: Plan,
    target: Target,
    settings: Settings,
    raw: dict[tuple[str, str], list[Metrics]],
    outcome: Outcome,
    head: str,
) -> list[Metrics]:
    cells = _cells_for(target.server, plan)
    broken: set[str] = set()
    measured: list[Metrics] = []
    for number, cell in enumerate(cells, start=1):
        if cell.ladder is not None and cell.ladder in broken:
            continue
        started = time.monotonic()
        metrics = cell.run(target)
        command = metrics.pop("command", None)
        if command:
            outcome.commands.setdefault(cell.key, command)
        raw.setdefault((target.server.name, cell.key), []).append(metrics)
        measured.append(metrics)
        say(f"{head} cell {number}/{len(cells)} {cell.key}: {_brief(metrics)} ({time.monotonic() - started:.1f}s)")
        if cell.ladder is not None and cell.failed is not None and cell.failed(metrics):
            broken.add(cell.ladder)
            say(f"{head}: gave up on {cell.ladder} after {cell.key}")
    return measured


def _shell_line(server: Server, port: int, env: dict[str, str], argv: list[str]) -> str:
    """The start command as one shell line, with $REPO for the repo root."""
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in {"PORT": str(port), **env}.items())
    line = f"cd {server.cwd} && {assignments} taskset -c {server.cpus or SERVER_CPU} {shlex.join(argv)}"
    return line.replace(str(REPO), "$REPO")


def _brief(metrics: Metrics) -> str:
    if "error" in metrics:
        return f"error: {metrics['error']}"
    if "round_trips_per_s" in metrics:
        p99 = metrics.get("p99_ms")
        p99_text = f"{p99:.1f} ms" if p99 is not None else "n/a"
        return f"{metrics['round_trips_per_s']:,.0f} round trips/s, p99 {p99_text}, {metrics.get('errors', 0)} errors"
    if "rps" in metrics:
        return f"{metrics['rps']:,.0f} req/s, {metrics.get('errors', 0)} errors"
    if "p99_ms" in metrics:
        p99 = metrics["p99_ms"]
        p99_text = f"{p99:.1f} ms" if p99 is not None else "n/a"
        return f"p99 {p99_text}, success {metrics.get('success', 0):.1%}, {metrics.get('achieved_rps', 0):,.0f} req/s"
    return ", ".join(f"{k}={v}" for k, v in metrics.items() if not isinstance(v, dict))
