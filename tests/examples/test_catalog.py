"""examples/catalog.py served by `veter run` and tested by Schemathesis from its own
OpenAPI document: every operation, valid and invalid requests, and stateful
sequences (an item created, then read and given an image). No answer may be a 5xx,
and every answer must conform to the document: its status documented, its content
type and body matching the schema."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.processes import Proc

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


def test_schemathesis_finds_no_error_and_no_deviation() -> None:
    assert SCHEMATHESIS.exists() or shutil.which("schemathesis"), "schemathesis is not installed"
    server = Proc(["run", "examples.catalog:app", "--port", "0", "--workers", "1", "--access-log", "off"])
    try:
        port = server.wait_ready()
        run = subprocess.run(
            [
                str(SCHEMATHESIS),
                "run",
                f"http://127.0.0.1:{port}/openapi.json",
                "--checks",
                "all",
                "--max-examples",
                "100",
                "--workers",
                "1",
                "--seed",
                "20261126",
                "--header",
                "X-Token: editor-schemathesis",
                "--request-timeout",
                "10",
            ],
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\nserver log:\n{server.output()[-3000:]}"
        assert "passed" in run.stdout
        assert " 5xx" not in run.stdout
    finally:
        server.close()
