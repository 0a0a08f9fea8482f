"""Cell builders shared by the scenarios."""

from pathlib import Path

from ..loadgen import Metrics, oha, wrk
from ..measure import Cell, Target

P99_LIMIT_MS = 1000.0
SUCCESS_FLOOR = 0.99


def throughput(route: str, connections: int, pipeline: int = 1) -> Cell:
    label = f"{route} c={connections}" + (f" pipelined x{pipeline}" if pipeline > 1 else "")

    def run(target: Target) -> Metrics:
        return wrk(target.url(route), connections, target.settings.seconds, pipeline)

    return Cell(label, route, run, params={"route": route, "c": connections, "pipeline": pipeline})


def over_limit(metrics: Metrics) -> bool:
    """The field's give-up rule: p99 past 1 s or under 99 % success."""
    p99 = metrics.get("p99_ms")
    return "error" in metrics or p99 is None or p99 > P99_LIMIT_MS or metrics.get("success", 0) < SUCCESS_FLOOR


def open_loop(route: str, rate: int, connections: int, ladder: str | None = None) -> Cell:
    def run(target: Target) -> Metrics:
        return oha(target.url(route), rate, target.settings.latency_seconds, connections)

    return Cell(
        f"{route} @{rate}/s",
        route,
        run,
        ladder=ladder,
        failed=over_limit if ladder else None,
        params={"route": route, "rate": rate, "c": connections},
    )


def closed_clients(route: str, clients: int) -> Cell:
    def run(target: Target) -> Metrics:
        return oha(target.url(route), None, target.settings.latency_seconds, clients)

    return Cell(f"{route} x{clients} clients", route, run, params={"route": route, "clients": clients})


def cpu_per_request(route: str, rate: int, body: Path | None = None, connections: int = 64) -> Cell:
    """Server CPU time per request at a fixed open-loop rate (for when wrk is the bottleneck);
    with `body`, POSTs of that file's bytes as JSON. A slow route needs more `connections`
    than the default: at least its rate times its latency, or the load generator, not the
    server, sets the rate."""

    def run(target: Target) -> Metrics:
        before = target.running.cpu_seconds()
        metrics = oha(target.url(route), rate, target.settings.latency_seconds, connections, body=body)
        used = target.running.cpu_seconds() - before
        served = metrics.get("ok", 0)
        metrics["cpu_s"] = used
        metrics["cpu_us_per_req"] = used / served * 1e6 if served else None
        return metrics

    return Cell(f"{route} cpu @{rate}/s", route, run, params={"route": route, "rate": rate, "c": connections})
