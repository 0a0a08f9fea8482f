"""Seeds the fuzz corpora (fuzz/corpus/<target>/, git-ignored) from the request corpus.

Run from anywhere: ``python fuzz/seeds.py``. Each corpus case becomes a parse_head
input and a connection input (every case) and, when it has a chunked body, a chunked
input (the bytes after the head). The first bytes of each seed pick the target's mode and limits the way
fuzz/src/lib.rs and the targets read them: here always the defaults.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "corpus" / "cases"
OUT = ROOT / "fuzz" / "corpus"

DEFAULT_LIMITS = b"\x00"  # selector byte < 0x80: Limits::default()
CHUNKED_RAW = b"\x00"  # even first byte: raw mode
PIECE_SIZE = b"\x06"  # the split run feeds 7-byte pieces
CONNECTION_MODE = b"\x00"  # one handler at a time, answering at once, no special routes


def case_input(case: dict[str, object]) -> bytes:
    out = bytearray()
    for part in case["input"]:  # type: ignore[attr-defined]
        if isinstance(part, str):
            out += part.encode("latin-1")
        else:
            out += part["repeat"].encode("latin-1") * part["times"]
    return bytes(out)


def write(target: str, data: bytes) -> None:
    folder = OUT / target
    folder.mkdir(parents=True, exist_ok=True)
    # Named by content, as libFuzzer names its own inputs, so reruns add nothing twice.
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main() -> int:
    count = 0
    for path in sorted(CASES.rglob("*.json")):
        raw = case_input(json.loads(path.read_text()))
        if len(raw) > 65536:
            continue
        write("parse_head", DEFAULT_LIMITS + raw)
        write("connection", CONNECTION_MODE + PIECE_SIZE + DEFAULT_LIMITS + raw)
        head_end = raw.find(b"\r\n\r\n")
        if b"chunked" in raw[:head_end].lower() and head_end >= 0:
            write("chunked", CHUNKED_RAW + DEFAULT_LIMITS + PIECE_SIZE + raw[head_end + 4 :])
        count += 1
    print(f"seeded the fuzz corpora from {count} corpus cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
