"""Instructions one JSON encoder call costs alone, counted by callgrind as
instructions.py counts a request: two runs of N calls (LOW and HIGH), the difference
divided by the calls in between, so start-up and imports drop out.

    .venv/bin/python benchmarks/micro/json_alone.py [ENCODER ...]

Each call encodes the guard's JSON answer, ``{"message": "Hello, World!"}``, and is
made from C (``map`` over ``itertools.repeat`` into a zero-length deque), as the
core calls an encoder: no Python frame runs per call. Encoders:

- ``len``: the driver alone (a C function of one argument returning a cached int);
  subtract it from the others for the encoder's own cost;
- ``orjson``: ``orjson.dumps``, what veter called for every dict or list answer;
- ``msgspec``: ``msgspec.json.encode``, for comparison;
- ``json_fast``: veter's own encoder (src/json_fast.rs) through ``_core.json_fast``,
  which also makes a ``bytes`` object for its result (the core's answer path does
  not: it writes the text into the response).
"""

from __future__ import annotations

import collections
import itertools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

VALUE = {"message": "Hello, World!"}


def _encoder(name: str) -> Callable[[Any], object]:
    if name == "len":
        return len
    if name == "orjson":
        import orjson

        return orjson.dumps
    if name == "msgspec":
        import msgspec

        return msgspec.json.encode
    if name == "json_fast":
        from veter import _core

        return _core.json_fast
    raise SystemExit(f"unknown encoder {name!r}")


ENCODERS = ("len", "orjson", "msgspec", "json_fast")


def drive() -> None:
    encode = _encoder(os.environ.get("SCENARIO", "orjson"))
    collections.deque(map(encode, itertools.repeat(VALUE, int(os.environ.get("N", "1000")))), maxlen=0)


def main() -> None:
    from instructions import HIGH, LOW, _count

    for name in sys.argv[1:] or ENCODERS:
        low, high = (_count(sys.executable, name, n, "json_alone.py") for n in (LOW, HIGH))
        print(f"{name:10} {round((high - low) / (HIGH - LOW)):>6,} instructions/call", flush=True)


if __name__ == "__main__":
    if "SCENARIO" in os.environ:
        drive()
    else:
        main()
