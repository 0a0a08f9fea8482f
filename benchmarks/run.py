"""Run benchmark scenarios and refresh docs/benchmarks.md.

    python run.py [--scenario NAME|all] [--quick] [--runs N] [--seconds S] [--servers N] [--only A,B]
                  [--docs-only]

Run it with the peers' virtualenv (benchmarks/.work/venv-peers), as the Makefile does.
"""

import argparse
import resource
import sys
import time
from datetime import datetime
from types import ModuleType

from suite import docs, machine, measure, report
from suite.scenarios import BY_NAME, ORDER
from suite.services import ServiceError


def run_with_services(module: ModuleType, plan: measure.Plan, settings: measure.Settings) -> measure.Outcome:
    """Start the scenario's databases (if any) around the run; if they fail, every
    server is recorded as not run, with the reason."""
    services = getattr(module, "services", None)
    if services is None:
        return measure.execute(plan, settings)
    try:
        with services() as env:
            plan.server_env.update(env)
            return measure.execute(plan, settings)
    except ServiceError as exc:
        measure.say(f"== {module.NAME}: {exc}")
        outcome = measure.Outcome()
        for server in plan.servers:
            outcome.servers[server.name] = {"what": server.what, "status": f"not run: {exc}"}
        return outcome


def raise_file_limit() -> None:
    """Thousands of connections need descriptors on both ends; children inherit this."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="all", help=f"all or one of: {', '.join(BY_NAME)}")
    parser.add_argument("--quick", action="store_true", help="~1 s per cell, 1 run, fewer rates")
    parser.add_argument("--runs", type=int, help="runs per cell (default 3, quick 1)")
    parser.add_argument("--seconds", type=int, help="seconds per cell")
    parser.add_argument("--docs-only", action="store_true", help="only regenerate docs/benchmarks.md")
    parser.add_argument(
        "--servers", type=int, help="only the first N servers of each scenario (CI's smoke run: veter and a peer)"
    )
    parser.add_argument(
        "--only", help="only these servers (comma-separated names) of each scenario that has them, e.g. the peers"
    )
    args = parser.parse_args()

    if args.scenario != "all" and args.scenario not in BY_NAME:
        parser.error(f"unknown scenario {args.scenario!r}; choose all or one of {', '.join(BY_NAME)}")
    chosen = ORDER if args.scenario == "all" else [BY_NAME[args.scenario]]
    if not args.docs_only:
        raise_file_limit()
        settings = measure.Settings.make(args.quick, args.runs, args.seconds)
        about = machine.describe()
        for module in chosen:
            began = time.monotonic()
            started = datetime.now().astimezone()
            plan = module.plan(settings)
            if args.servers:
                plan.servers = plan.servers[: args.servers]
            if args.only:
                wanted = set(args.only.split(","))
                plan.servers = [server for server in plan.servers if server.name in wanted]
                if not plan.servers:
                    measure.say(f"== {module.NAME}: none of {args.only} is a server of this scenario; skipped")
                    continue
            measure.say(
                f"== {module.NAME}: {len(plan.servers)} servers x {len(plan.cells)} cells x {settings.runs} runs"
            )
            outcome = run_with_services(module, plan, settings)
            result = report.build(module, plan, settings, outcome, about, started, datetime.now().astimezone())
            out = report.save(module, result)
            measure.say(f"== {module.NAME}: done in {time.monotonic() - began:.0f}s -> {out}")
    page = docs.regenerate(ORDER)
    measure.say(f"== wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
