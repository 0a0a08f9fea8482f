"""Hosted WSGI apps: the same Flask app on veter, gunicorn and Granian (issue 14)."""

from pathlib import Path

from ..charts import bars
from ..measure import Plan, Settings
from ..report import Result
from . import hosted

NAME = "wsgi"
TITLE = "Hosted WSGI apps: Flask on veter, gunicorn and Granian"
METHOD = """
The same Flask module (`apps/flask_app.py`) served by `veter run` (the WSGI bridge,
its default pool of 10 threads), by gunicorn with one sync worker (issue 14's
baseline) and by Granian's WSGI interface (its defaults). One process per server,
pinned to CPU 0; wrk (one thread) pinned to CPU 1, closed loop, c=100, not
pipelined (gunicorn's sync worker closes every connection: it has no keep-alive).
CPU per request: oha open loop at a fixed rate, server CPU time from /proc divided
by the 2xx responses. Access logs off. Servers interleaved per run, medians.
"""

SERVERS = ["veter-flask", "gunicorn-flask", "granian-wsgi"]
PAIRS = [("veter-flask", "gunicorn-flask"), ("veter-flask", "granian-wsgi")]
PLAIN, JSON = hosted.CELLS
CHECKS: list[hosted.Check] = [
    ("Flask plaintext ≥ 3x gunicorn sync, 1 worker", "veter-flask", "gunicorn-flask", PLAIN, 3.0),
    ("Flask plaintext ≥ 1.3x Granian WSGI", "veter-flask", "granian-wsgi", PLAIN, 1.3),
]


def plan(settings: Settings) -> Plan:
    return hosted.plan(NAME, SERVERS, settings)


def table(result: Result) -> str:
    return hosted.table(result, SERVERS, PAIRS, CHECKS)


def chart(result: Result, path: Path) -> None:
    bars(result, hosted.CELLS, "rps", path, "requests/s (closed loop, wrk)")
