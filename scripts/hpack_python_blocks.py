"""Writes src/http2/hpack/testdata/python_hpack.json: header blocks from python-hpack's
encoder (an independent HPACK implementation) for random field lists, which the Rust
test `python_hpack_blocks_decode` decodes and compares.

The lists mix static names, custom names, repeats (so the dynamic table is used),
arbitrary bytes in values, never-indexed fields, Huffman on and off, and table size
changes (which python-hpack signals at the start of the next block). Deterministic:
rerunning it with the same hpack version gives the same file.

    python scripts/hpack_python_blocks.py   # needs `pip install hpack`
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import hpack
from hpack.struct import NeverIndexedHeaderTuple

OUT = Path(__file__).resolve().parent.parent / "src" / "http2" / "hpack" / "testdata" / "python_hpack.json"
NAMES = [b":status", b"content-type", b"date", b"server", b"x-custom", b"set-cookie", b"accept", b":path"]


def field(rng: random.Random, recent: list[tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
    r = rng.random()
    if r < 0.3 and recent:
        return rng.choice(recent)
    if r < 0.6:
        return rng.choice(NAMES), bytes(rng.randrange(256) for _ in range(rng.randrange(20)))
    name = bytes(rng.choice(b"abcxyz-") for _ in range(1 + rng.randrange(12)))
    return name, bytes(rng.choice(b"abcdefghijklmnop0123456789 ;=/") for _ in range(rng.randrange(32)))


def main() -> None:
    rng = random.Random(7541)
    encoder = hpack.Encoder()
    blocks = []
    recent: list[tuple[bytes, bytes]] = []
    for _ in range(150):
        if rng.random() < 0.1:
            encoder.header_table_size = rng.choice([0, 64, 256, 1000, 4096])
        fields = [field(rng, recent) for _ in range(rng.randrange(10))]
        recent.extend(fields)
        tuples = [NeverIndexedHeaderTuple(n, v) if rng.random() < 0.1 else (n, v) for n, v in fields]
        block = encoder.encode(tuples, huffman=rng.random() < 0.7)
        blocks.append({"block": block.hex(), "fields": [[n.hex(), v.hex()] for n, v in fields]})
    # One block per line, so that a change to the generator shows as a readable diff.
    lines = ",\n".join(json.dumps(b, separators=(",", ":")) for b in blocks)
    generator = json.dumps(f"scripts/hpack_python_blocks.py, hpack {hpack.__version__}")
    OUT.write_text(f'{{"generator":{generator},"blocks":[\n{lines}\n]}}\n')
    print(f"wrote {len(blocks)} blocks to {OUT}")


if __name__ == "__main__":
    main()
