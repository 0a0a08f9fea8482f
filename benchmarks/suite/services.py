"""PostgreSQL and Redis for the scenarios that need them: private instances on free
loopback ports, data under .work, pinned to the server CPU, stopped afterwards."""

import glob
import os
import pwd
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import paths, procs

ROWS = 10_000
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS items (id integer PRIMARY KEY, name text NOT NULL, qty integer NOT NULL);
INSERT INTO items SELECT g, 'item-' || g, g % 97 FROM generate_series(1, {ROWS}) AS g ON CONFLICT DO NOTHING;
ANALYZE items;
"""


class ServiceError(RuntimeError):
    pass


def _as_postgres(command: str) -> list[str]:
    """initdb and postgres refuse to run as root: run as the `postgres` user then."""
    pinned = f"taskset -c {paths.SERVER_CPU} {command}"
    if os.geteuid() == 0:
        return ["su", "postgres", "-s", "/bin/sh", "-c", pinned]
    return ["sh", "-c", pinned]


def _check(argv: list[str], what: str) -> None:
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise ServiceError(f"{what} failed: {(out.stderr or out.stdout).strip()[-400:]}")


def _pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise ServiceError("PostgreSQL is not installed (apt-get install postgresql)")
    return Path(found[-1]).parent


@contextmanager
def postgres() -> Iterator[str]:
    """Yield a DSN for a database `bench` holding the 10,000-row `items` table."""
    bindir = _pg_bin()
    root = paths.WORK / "pg"
    data = root / "data"
    root.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(root, user.pw_uid, user.pw_gid)
    if not (data / "PG_VERSION").exists():
        _check(_as_postgres(f"{bindir}/initdb -D {data} -A trust -U postgres --no-sync"), "initdb")
    port = procs.free_port()
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300"
    start = f"{bindir}/pg_ctl -D {data} -l {root}/server.log -w -t 60 -o {shlex.quote(options)} start"
    _check(_as_postgres(start), "pg_ctl start")
    try:
        psql = [
            str(bindir / "psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-U",
            "postgres",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
        ]
        exists = subprocess.run(
            [*psql, "-tAc", "SELECT 1 FROM pg_database WHERE datname = 'bench'"],
            capture_output=True,
            text=True,
            check=False,
        )
        if exists.stdout.strip() != "1":
            _check([*psql, "-c", "CREATE DATABASE bench"], "CREATE DATABASE")
        _check([*psql, "-d", "bench", "-c", SCHEMA], "schema")
        yield f"postgresql://postgres@127.0.0.1:{port}/bench"
    finally:
        subprocess.run(_as_postgres(f"{bindir}/pg_ctl -D {data} -m fast -w stop"), capture_output=True, check=False)


def _redis_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def redis() -> Iterator[str]:
    """Yield a URL of a fresh, non-persistent Redis."""
    port = procs.free_port()
    log = paths.WORK / "logs" / "redis.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        "taskset",
        "-c",
        paths.SERVER_CPU,
        "redis-server",
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--logfile",
        str(log),
    ]
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError as exc:
        raise ServiceError(f"redis-server could not start: {exc}") from exc
    try:
        deadline = time.monotonic() + 20
        while not _redis_ping(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ServiceError(f"redis-server did not answer PING (see {log})")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
