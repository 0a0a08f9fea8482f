"""The fuzzer's long run and replays:

python -m tests.hosted.fuzz --minutes 30            # fixed seeds, then more
VETER_FUZZ_SEED=3 VETER_FUZZ_CASE=17 python -m tests.hosted.fuzz   # one case
python -m tests.hosted.fuzz --http2 --minutes 30    # HTTP/2: veter against Hypercorn
"""

from __future__ import annotations

import argparse
import os
import sys

from tests.hosted.fuzz.h2run import run_h2
from tests.hosted.fuzz.run import run
from tests.hosted.fuzz.servers import H2_PEER, PEERS, VETER, start

SEEDS = (1, 2, 3, 4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.hosted.fuzz")
    parser.add_argument("--minutes", type=float, default=1.0, help="time bound over all seeds")
    parser.add_argument("--seed", type=int, action="append", help="seeds (default: VETER_FUZZ_SEED or 1-4)")
    parser.add_argument("--case", type=int, default=None, help="replay this case of the (single) seed")
    parser.add_argument("--max-failures", type=int, default=20)
    parser.add_argument("--http2", action="store_true", help="HTTP/2 (h2c) against Hypercorn")
    args = parser.parse_args(argv)
    env_seed = os.environ.get("VETER_FUZZ_SEED")
    env_case = os.environ.get("VETER_FUZZ_CASE")
    seeds = args.seed or ([int(env_seed)] if env_seed else list(SEEDS))
    case = args.case if args.case is not None else (int(env_case) if env_case else None)
    servers = start([VETER["asgi"], H2_PEER] if args.http2 else [*VETER.values(), *PEERS])
    try:
        how = run_h2 if args.http2 else run
        report = how(servers, seeds, args.minutes * 60, only_case=case, max_failures=args.max_failures)
    finally:
        for server in servers.values():
            server.close()
    for failure in report.failures:
        print(failure, end="\n\n")
    print(report.summary())
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
