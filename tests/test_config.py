from __future__ import annotations

import pytest

from veter.config import ServerConfig


def test_defaults_are_documented_values() -> None:
    c = ServerConfig()
    assert (c.max_start_line, c.max_header_count, c.max_header_bytes) == (8192, 100, 16384)
    assert c.max_body_bytes == 10 * 1024 * 1024
    assert (c.keepalive_timeout, c.graceful_timeout, c.max_pipelined) == (5.0, 30.0, 64)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_header_count", 0, "max_header_count must be at least 1"),
        ("max_body_bytes", -1, "max_body_bytes must be >= 0"),
        ("keepalive_timeout", 0, "keepalive_timeout must be a positive"),
        ("port", 70000, "port must be 0 to 65535, got 70000"),
        ("loop", "trio", "loop must be auto, uvloop or asyncio"),
    ],
)
def test_bad_values_name_the_setting(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ServerConfig().with_(**{field: value})


def test_unknown_setting() -> None:
    with pytest.raises(TypeError, match="unknown server setting"):
        ServerConfig().with_(nope=1)
