"""h2spec, the HTTP/2 conformance suite (RFC 9113 and RFC 7541), over h2c and over
TLS: every case must pass. `make test` installs it (`go install`, scripts/
install-h2spec.sh); a machine without it fails here rather than skipping.

One case cannot pass on a port that serves HTTP/1.1 too (the default): h2spec's
"invalid connection preface" is, to such a port, an HTTP/1.1 request it cannot
parse, answered 400 before the close (RFC 9112 asks for that answer), and h2spec
reads the answer as a frame. On an HTTP/2-only port (`http1=False`) the connection
is closed unanswered and the case passes: both are checked."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import veter

from .conftest import RunningServer
from .test_tls import cert  # noqa: F401  (the module's certificate fixture)


def h2spec() -> str:
    found = shutil.which("h2spec") or str(
        Path(os.environ.get("GOPATH", Path.home() / "go")) / "bin" / "h2spec"
    )
    if not Path(found).exists():
        pytest.fail("h2spec is not installed: go install github.com/summerwind/h2spec/cmd/h2spec@latest")
    return found


def app() -> veter.App:
    app = veter.App()

    # h2spec sends GET and POST to "/" and reads any 2xx answer.
    @app.route("/", methods=["GET", "POST", "HEAD", "OPTIONS"])
    async def root(request: veter.Request) -> str:
        await request.body()
        return "ok"

    return app


#: How h2spec marks a failed case.
FAILED_MARK = "\u00d7"


def run_h2spec(port: int, *extra: str, may_fail: tuple[str, ...] = ()) -> str:
    done = subprocess.run(
        [h2spec(), "-h", "127.0.0.1", "-p", str(port), "-o", "5", *extra],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    summary = re.search(r"(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed", done.stdout)
    assert summary, done.stdout[-3000:] + done.stderr[-2000:]
    total, passed, skipped, failed = map(int, summary.groups())
    # A failed case's line (h2spec prints it in the run and again under "Failures").
    failures = sorted({line.strip() for line in done.stdout.splitlines() if FAILED_MARK in line})
    assert len(failures) >= min(failed, 1), done.stdout[-6000:]
    unexpected = [f for f in failures if not any(f.startswith(m) for m in may_fail)]
    assert not unexpected and failed <= len(may_fail), (
        f"{failed} of {total} h2spec cases failed:\n" + "\n".join(failures)
    )
    assert passed + skipped + failed == total and passed >= 140
    return done.stdout


def test_h2spec_over_h2c(serve: Callable[..., RunningServer]) -> None:
    running = serve(app(), http1=False)
    run_h2spec(running.port)


def test_h2spec_over_h2c_beside_http1(serve: Callable[..., RunningServer]) -> None:
    running = serve(app())
    run_h2spec(running.port, may_fail=(f"{FAILED_MARK} 2: Sends invalid connection preface",))


def test_h2spec_over_tls(serve: Callable[..., RunningServer], cert: tuple[Path, Path]) -> None:  # noqa: F811
    running = serve(app(), ssl_certfile=str(cert[0]), ssl_keyfile=str(cert[1]))
    run_h2spec(running.port, "-t", "-k")
