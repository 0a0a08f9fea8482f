"""Seeds the fuzz corpora (fuzz/corpus/<target>/, git-ignored) from the request corpus.

Run from anywhere: ``python fuzz/seeds.py``. Each corpus case becomes a parse_head
input and a connection input (every case) and, when it has a chunked body, a chunked
input (the bytes after the head). The hpack target is seeded with the header blocks of
RFC 7541 Appendix C, each example's blocks in sequence on one decoder. The first bytes of each seed pick the target's mode and limits the way
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
# hpack raw mode (even byte): bits 1-3 pick a table limit, 4096 for C.3 and C.4 (6) and
# 256 for C.5 and C.6 (5); bits 4-7 pick the list size limit, none (4).
HPACK_4096 = b"\x4c"
HPACK_256 = b"\x4a"
#: RFC 7541 C.3 to C.6: three blocks each, decoded in sequence.
HPACK_EXAMPLES = [
    (
        HPACK_4096,
        [
            "828684410f7777772e6578616d706c652e636f6d",
            "828684be58086e6f2d6361636865",
            "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
        ],
    ),
    (
        HPACK_4096,
        [
            "828684418cf1e3c2e5f23a6ba0ab90f4ff",
            "828684be5886a8eb10649cbf",
            "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
        ],
    ),
    (
        HPACK_256,
        [
            "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a"
            "323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
            "4803333037c1c0bf",
            "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69"
            "707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d6178"
            "2d6167653d333630303b2076657273696f6e3d31",
        ],
    ),
    (
        HPACK_256,
        [
            "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29"
            "ad171863c78f0b97c8e9ae82ae43d3",
            "4883640effc1c0bf",
            "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7"
            "f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d50"
            "07",
        ],
    ),
]


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
    for mode, blocks in HPACK_EXAMPLES:
        seed = bytearray(mode)
        for block in blocks:
            raw = bytes.fromhex(block)
            seed += bytes([len(raw)]) + raw
        write("hpack", bytes(seed))
    print(f"seeded the fuzz corpora from {count} corpus cases and the RFC 7541 examples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
