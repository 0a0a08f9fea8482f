"""Private PostgreSQL, Redis and MariaDB servers for the integration tests.

Each runs from a data directory of its own on a free loopback port, never the system
service, and can be stopped and started again on the same port (to test a database
that goes away while serving). Readiness is polled, never slept for. The binaries are
installed by scripts/install-services.sh (called by ``make test``).

Postgres and MariaDB refuse to run as root: when the tests run as root they run the
servers as the ``postgres`` / ``mysql`` users the packages create.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

START_TIMEOUT = 60.0


class ServiceError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _poll(ready: Callable[[], bool], proc: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        if proc.poll() is not None:
            raise ServiceError(f"{what} exited with {proc.returncode}: {_tail(log)}")
        if time.monotonic() > deadline:
            raise ServiceError(f"{what} not ready after {START_TIMEOUT} s: {_tail(log)}")
        time.sleep(0.02)


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-2000:]
    except OSError:
        return "(no log)"


def _service_user(name: str) -> pwd.struct_passwd | None:
    """The account to run a server as when we are root, else None (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(name)
    except KeyError as exc:
        raise ServiceError(f"running as root but there is no {name!r} user to run the server as") from exc


def _own(path: Path, user: pwd.struct_passwd | None) -> None:
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Service:
    """A server process we start and stop; subclasses say how."""

    name = "service"
    stop_signal = signal.SIGTERM

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"veter-{self.name}-"))
        self.port = free_port()
        self.log = self.root / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.user: pwd.struct_passwd | None = None

    def argv(self) -> list[str]:
        raise NotImplementedError

    def ready(self) -> bool:
        raise NotImplementedError

    def start(self) -> None:
        if self.proc is not None:
            raise ServiceError(f"{self.name} is already running")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv(),
                stdout=log,
                stderr=subprocess.STDOUT,
                user=self.user.pw_uid if self.user else None,
                group=self.user.pw_gid if self.user else None,
                start_new_session=True,
            )
        _poll(self.ready, self.proc, self.name, self.log)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and wait until its port is closed."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.send_signal(self.stop_signal)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def _pg_bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise ServiceError("PostgreSQL is not installed: run scripts/install-services.sh")
    return Path(found[-1]).parent


class Postgres(Service):
    name = "postgres"
    stop_signal = signal.SIGINT  # fast shutdown (SIGTERM waits for every client to leave)

    def __init__(self) -> None:
        super().__init__()
        self.bindir = _pg_bindir()
        self.user = _service_user("postgres")
        self.data = self.root / "data"
        _own(self.root, self.user)
        subprocess.run(
            [str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync"],
            check=True,
            capture_output=True,
            user=self.user.pw_uid if self.user else None,
            group=self.user.pw_gid if self.user else None,
        )

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def argv(self) -> list[str]:
        return [
            str(self.bindir / "postgres"),
            "-D",
            str(self.data),
            "-p",
            str(self.port),
            "-k",
            str(self.root),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=200",
        ]

    def ready(self) -> bool:
        probe = subprocess.run(
            [str(self.bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-t", "1"],
            check=False,
        )
        return probe.returncode == 0


class Redis(Service):
    name = "redis"

    def __init__(self) -> None:
        super().__init__()
        if shutil.which("redis-server") is None:
            raise ServiceError("redis-server is not installed: run scripts/install-services.sh")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def argv(self) -> list[str]:
        return [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.root),
        ]

    def ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False


def _mariadbd() -> str:
    found = shutil.which("mariadbd") or (
        "/usr/sbin/mariadbd" if os.path.exists("/usr/sbin/mariadbd") else None
    )
    if found is None:
        raise ServiceError("mariadbd is not installed: run scripts/install-services.sh")
    return found


class MariaDB(Service):
    """MariaDB with a passwordless ``root`` reachable over TCP from 127.0.0.1 and a
    database ``test``."""

    name = "mariadb"

    def __init__(self) -> None:
        super().__init__()
        self.binary = _mariadbd()
        self.user = _service_user("mysql")
        self.data = self.root / "data"
        _own(self.root, self.user)
        install = [
            "mariadb-install-db",
            "--no-defaults",
            f"--datadir={self.data}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ]
        if self.user is not None:
            install.append(f"--user={self.user.pw_name}")
        done = subprocess.run(install, check=False, capture_output=True)
        if done.returncode != 0:
            raise ServiceError(f"mariadb-install-db failed: {done.stderr.decode(errors='replace')[-1000:]}")
        self._bootstrapped = False

    @property
    def url(self) -> str:
        return f"mysql://root@127.0.0.1:{self.port}/test"

    def argv(self) -> list[str]:
        return [
            self.binary,
            "--no-defaults",
            f"--datadir={self.data}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={self.root / 'mysqld.sock'}",
            f"--pid-file={self.root / 'mysqld.pid'}",
            "--skip-name-resolve",
            "--skip-log-bin",
            "--innodb-flush-log-at-trx-commit=0",
            "--innodb-buffer-pool-size=64M",
            "--max-connections=300",
        ]

    def ready(self) -> bool:
        if not _accepts(self.port):
            return False
        ping = subprocess.run(
            ["mariadb-admin", "--no-defaults", "-uroot", f"--socket={self.root / 'mysqld.sock'}", "ping"],
            check=False,
            capture_output=True,
        )
        return ping.returncode == 0

    def start(self) -> None:
        super().start()
        if not self._bootstrapped:
            # root@localhost exists; TCP clients come from 127.0.0.1 (no name resolution).
            self.sql(
                "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; "
                "GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION; "
                "CREATE DATABASE IF NOT EXISTS test;"
            )
            self._bootstrapped = True

    def sql(self, statements: str) -> None:
        """Run SQL as root over the server's socket (the server must be running)."""
        done = subprocess.run(
            ["mariadb", "--no-defaults", "-uroot", f"--socket={self.root / 'mysqld.sock'}", "-e", statements],
            check=False,
            capture_output=True,
        )
        if done.returncode != 0:
            raise ServiceError(f"mariadb client failed: {done.stderr.decode(errors='replace')}")


#: The proxy settings docs/deploy.md recommends for nginx (keep the two in step).
_NGINX_RECOMMENDED = """        client_max_body_size 10m;
        large_client_header_buffers 4 16k;
        location / {
            proxy_pass http://veter;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host              $host;
            proxy_set_header X-Forwarded-For   $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_connect_timeout 1s;
            proxy_read_timeout 65s;
        }"""


#: nginx in front of veter's clear-text HTTP/2 (docs/deploy.md, "HTTP/2 behind a proxy").
_NGINX_H2 = """        client_max_body_size 10m;
        location / {
            grpc_pass grpc://veter;
            grpc_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            grpc_connect_timeout 1s;
            grpc_read_timeout 65s;
        }"""


class Nginx(Service):
    """nginx as a reverse proxy in front of ``upstreams`` (loopback ports).

    By default set up as docs/deploy.md shows: HTTP/1.1 keep-alive to the upstreams,
    closed by nginx after 4 s idle (below veter's 5 s keep-alive timeout), proxy
    headers, limits and timeouts matching veter's, and the default retry rule
    (``error timeout``: a refused connect goes to the next upstream, a POST already
    sent is never retried). ``stock=True``: nothing but ``proxy_pass``, as a fresh
    install has it (HTTP/1.0 upstream with ``Connection: close``, so a new upstream
    connection per request)."""

    name = "nginx"
    stop_signal = signal.SIGQUIT  # nginx's graceful stop

    def __init__(self, upstreams: list[int], *, stock: bool = False, h2: bool = False) -> None:
        super().__init__()
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(binary):
            raise ServiceError("nginx is not installed: run scripts/install-services.sh")
        self.binary = binary
        # Where nginx writes (a private directory): in the stock set-up too, since
        # it changes no behaviour. Run as root, nginx's workers are ``nobody``: they
        # must reach the directories the master makes for them (bodies over 16 KiB
        # go to client_body/ first), which mkdtemp's 0700 forbids.
        os.chmod(self.root, 0o755)
        temp = "\n".join(
            f"    {kind}_temp_path {self.root}/{kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        if stock:
            upstream = "\n".join(f"        server 127.0.0.1:{p};" for p in upstreams)
            server = "        location / {\n            proxy_pass http://veter;\n        }"
        elif h2:
            # HTTP/2 upstream (h2c) through the gRPC module, as docs/deploy.md shows.
            servers = [f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=1s;" for p in upstreams]
            upstream = "\n".join([*servers, "        keepalive 32;"])
            server = _NGINX_H2
        else:
            servers = [f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=1s;" for p in upstreams]
            upstream = "\n".join([*servers, "        keepalive 32;", "        keepalive_timeout 4s;"])
            server = _NGINX_RECOMMENDED
        (self.root / "nginx.conf").write_text(
            f"""daemon off;
worker_processes 1;
pid {self.root}/nginx.pid;
error_log {self.root}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
{temp}
    upstream veter {{
{upstream}
    }}
    server {{
        listen 127.0.0.1:{self.port};
{server}
    }}
}}
"""
        )

    def argv(self) -> list[str]:
        return [
            self.binary,
            "-p",
            str(self.root),
            "-c",
            str(self.root / "nginx.conf"),
            "-e",
            str(self.root / "error.log"),
        ]

    def ready(self) -> bool:
        return _accepts(self.port)

    def errors(self) -> str:
        return _tail(self.root / "error.log")

    def error_lines(self) -> list[str]:
        """Every line of the error log (``errors`` is its tail)."""
        try:
            return (self.root / "error.log").read_text(errors="replace").splitlines()
        except OSError:
            return []


class HAProxy(Service):
    """HAProxy (the Debian package's, 2.6) in ``mode http`` in front of ``upstreams``,
    set up as docs/deploy.md recommends (keep this and that in step): HAProxy's
    default connection handling (HTTP keep-alive on both sides, idle upstream
    connections shared under ``http-reuse safe``), ``option forwardfor``, a 1 s
    connect timeout and a server timeout above veter's request timeout.
    ``server_close=True`` adds ``option http-server-close``: ``Connection: close``
    upstream, a new upstream connection per request. Only failed or abnormal
    requests are logged (``option dontlog-normal``), to the log file (``errors``).
    ``h2=True``: HTTP/2 to the upstreams (``proto h2``)."""

    name = "haproxy"

    def __init__(self, upstreams: list[int], *, server_close: bool = False, h2: bool = False) -> None:
        super().__init__()
        binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
        if not os.path.exists(binary):
            raise ServiceError("haproxy is not installed: run scripts/install-services.sh")
        self.binary = binary
        proto = " proto h2" if h2 else ""  # HTTP/2 (h2c) to the upstreams
        servers = "\n".join(f"    server app{n} 127.0.0.1:{p}{proto}" for n, p in enumerate(upstreams))
        option = "    option http-server-close\n" if server_close else ""
        (self.root / "haproxy.cfg").write_text(
            f"""global
    log stderr format raw local0 info

defaults
    mode http
    log global
    option httplog
    option dontlognull
    option dontlog-normal
    timeout connect 1s
    timeout client 50s
    timeout server 65s
{option}
frontend web
    bind 127.0.0.1:{self.port}
    option forwardfor
    default_backend veter

backend veter
{servers}
"""
        )

    def argv(self) -> list[str]:
        # -db: in the foreground, as the tests' other services run.
        return [self.binary, "-db", "-f", str(self.root / "haproxy.cfg")]

    def ready(self) -> bool:
        return _accepts(self.port)

    def errors(self) -> str:
        return _tail(self.log)
