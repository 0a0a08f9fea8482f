"""Clients that send one request per connection, as real ones do: ApacheBench
(HTTP/1.0, no keep-alive unless asked) and Python's urllib (HTTP/1.1 with
``Connection: close`` on every request). Each is run as users run it; every
failure it reports (non-2xx, reset, timeout, a wrong answer) is counted.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

__all__ = ["AbRun", "UrllibRun", "apachebench", "urllib_load"]

#: The headers an answer carries, lower-case names.
Headers = dict[str, str]


@dataclass
class AbRun:
    """What ``ab`` reported: its counts, and the head of each answer."""

    complete: int
    failed: int  # connect, receive, length and exception failures
    non_2xx: int
    heads: list[Headers]
    output: str


def apachebench(url: str, body: bytes, *, requests: int, concurrency: int, headers: Headers) -> AbRun:
    """POSTs ``body`` to ``url`` ``requests`` times, ``concurrency`` at a time.

    ``-r``: a reset or early close is counted, not fatal; ``-s 10``: a request
    unanswered for 10 s is a timeout (ab stops there and exits non-zero, which
    fails the run); ``-v 2``: ab prints the head of every answer, read here."""
    binary = shutil.which("ab")
    if binary is None:
        raise RuntimeError("ApacheBench is not installed: run scripts/install-services.sh")
    with tempfile.NamedTemporaryFile(prefix="veter-ab-") as fh:
        fh.write(body)
        fh.flush()
        argv = [binary, "-r", "-s", "10", "-v", "2", "-n", str(requests), "-c", str(concurrency)]
        argv += ["-p", fh.name, "-T", "application/octet-stream"]
        for name, value in headers.items():
            argv += ["-H", f"{name}: {value}"]
        done = subprocess.run([*argv, url], capture_output=True, text=True, errors="replace", timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"ab exited with {done.returncode}: {done.stderr[-1000:]}{done.stdout[-1000:]}")
    return AbRun(
        complete=_count(done.stdout, "Complete requests"),
        failed=_count(done.stdout, "Failed requests"),
        non_2xx=_count(done.stdout, "Non-2xx responses"),
        heads=[_headers(head) for head in _AB_HEAD.findall(done.stdout)],
        output=done.stdout,
    )


_AB_HEAD = re.compile(r"LOG: header received:\n(HTTP/1\.[01] .*?)\r?\n\r?\n", re.S)


def _count(output: str, label: str) -> int:
    """A count from ab's summary (ab leaves out 'Non-2xx responses' when 0)."""
    match = re.search(rf"^{label}:\s+(\d+)", output, re.M)
    return int(match.group(1)) if match else 0


def _headers(head: str) -> Headers:
    out = {}
    for line in head.splitlines()[1:]:
        name, _, value = line.partition(":")
        out[name.strip().lower()] = value.strip()
    return out


@dataclass
class UrllibRun:
    failures: list[str] = field(default_factory=list)
    heads: list[Headers] = field(default_factory=list)


def urllib_load(
    url: str,
    count: int,
    payload: Callable[[int], bytes],
    check: Callable[[int, bytes, Headers, bytes], None],
    *,
    threads: int = 4,
) -> UrllibRun:
    """``count`` requests with urllib's opener (what ``urlopen`` uses), ``threads`` at a time:
    request ``i`` is a GET when ``i`` is even, else a POST of ``payload(i)``, to
    ``url?i=<i>``; ``check`` judges each 2xx answer (raising ValueError)."""
    run = UrllibRun()
    # The default opener, without the environment's proxy settings (a test machine's
    # http_proxy must not take loopback requests elsewhere).
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def one(i: int) -> None:
        body = payload(i) if i % 2 else b""
        request = urllib.request.Request(
            f"{url}?i={i}",
            data=body if i % 2 else None,
            headers={"Content-Type": "application/octet-stream"} if i % 2 else {},
        )
        try:
            with opener.open(request, timeout=10) as answer:
                headers = {name.lower(): value for name, value in answer.getheaders()}
                check(i, body, headers, answer.read())
            run.heads.append(headers)
        except urllib.error.HTTPError as exc:  # a non-2xx answer
            run.failures.append(f"{i}: status {exc.code}: {exc.read()[:80]!r}")
        except Exception as exc:  # noqa: BLE001 - every failure counts, whatever it is
            run.failures.append(f"{i}: {type(exc).__name__}: {exc}")

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(count)))
    return run
