"""uvicorn on Python 3.14 with each HTTP parser on each loop: which half of
`--http zttp --loop zuvloop` makes it faster (benchmarks/notes/asgi.md).

The suite's own machinery (server on CPU 0, load on CPU 1, rounds interleaved,
medians): uvicorn from `.work/venv-peers-3.14` serving the raw ASGI app, httptools or
zttp on uvloop or zuvloop; wrk's plaintext c=100 and the CPU per request at 5,000/s
open loop. Printed, not saved.

    cd benchmarks && PYTHONPATH=. .work/venv-peers/bin/python micro/uvicorn_variants.py [ROUNDS]
"""

import sys

from suite import measure, paths
from suite.scenarios.cells import cpu_per_request, throughput
from suite.servers import HELLO, Server, _uvicorn

VARIANTS = [("httptools", "uvloop"), ("httptools", "zuvloop"), ("zttp", "uvloop"), ("zttp", "zuvloop")]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    settings = measure.Settings(quick=False, runs=rounds, seconds=5, latency_seconds=10.0, warmup=2)
    servers = [
        Server(f"uvicorn-3.14 {http} {loop}", "", HELLO, _uvicorn("asgi_raw:app", http, loop, paths.PEERS_314_BIN))
        for http, loop in VARIANTS
    ]
    plan = measure.Plan("uvicorn-variants", servers, [throughput("plaintext", 100), cpu_per_request("plaintext", 5000)])
    outcome = measure.execute(plan, settings)
    for name, cells in outcome.results.items():
        rps = cells["plaintext c=100"]["median"].get("rps")
        cpu = cells["plaintext cpu @5000/s"]["median"].get("cpu_us_per_req")
        print(f"{name:32} {rps:>9,.0f} req/s {cpu:>6.1f} µs/request")


if __name__ == "__main__":
    main()
