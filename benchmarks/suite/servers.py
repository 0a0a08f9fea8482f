"""The servers under test: how each is started the way its docs recommend for production.

Every peer serves the same routes (see ROUTES) with access logs off. The server gets
one CPU (it is pinned), so "(2 x cores) + 1" sync workers means 3.
"""

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import nginx, paths

# Route name -> URL path. Every app serves the routes it lists in Server.routes.
ROUTES = {
    "plaintext": "/",
    "json": "/json",
    "sleep1": "/sleep1",
    "sleep10": "/sleep10",
    "sleep50": "/sleep50",
    "sleep100": "/sleep100",
    "hard": "/hard",
    "block": "/block",
    "db": "/db",
    "redis": "/redis",
    "fanout": "/fanout/7",
    "cpu5": "/cpu5",
    "ws": "/ws",  # WebSocket echo (the ws scenario)
    # The typed scenario: a validated JSON body echoed, three typed query parameters,
    # and the same two untyped (veter only).
    "order": "/order",
    "items": "/items?limit=20&offset=40&q=shoes",
    "order-raw": "/order-raw",
    "items-raw": "/items-raw?limit=20&offset=40&q=shoes",
    "upload": "/upload",  # the http2 scenario's POST: the body's length answered
}
HELLO = frozenset({"plaintext", "json"})
H2 = HELLO | {"upload"}
ASYNC = HELLO | {"sleep1", "sleep10", "sleep50", "sleep100", "hard", "block"}
TYPED = frozenset({"order", "items"})
SYNC_WORKERS = 3

Argv = Callable[[int, int], list[str]]


@dataclass(frozen=True)
class Server:
    name: str
    what: str
    routes: frozenset[str]
    argv: Argv
    cwd: Path = paths.APPS
    env: dict[str, str] = field(default_factory=dict)
    needs: tuple[Path, ...] = ()
    prepare: Callable[[Path, int, int], None] | None = None
    cpus: str | None = None  # taskset CPU list; None = paths.SERVER_CPU
    ready_route: str | None = None  # the route polled for its first 200; None = the plan's

    def unavailable(self) -> str | None:
        """Why this server cannot run here, or None."""
        for need in self.needs:
            if not need.exists():
                return f"{need} is missing (run `make -C benchmarks install`)"
        return None


def _py(venv_bin: Path) -> str:
    return str(venv_bin / "python")


def _uvicorn(
    module: str, http: str = "httptools", loop: str = "uvloop", bin_dir: Path = paths.PEERS_BIN, http2: bool = False
) -> Argv:
    """uvicorn; with `http2`, HTTP/2 beside HTTP/1.1 on the port (`--http2`, zttp only)."""

    def argv(port: int, workers: int) -> list[str]:
        return [
            str(bin_dir / "uvicorn"),
            module,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--loop",
            loop,
            "--http",
            http,
            "--no-access-log",
            "--log-level",
            "warning",
            "--lifespan",
            "off",
            "--backlog",
            "4096",
            "--workers",
            str(workers),
            *(["--http2"] if http2 else []),
        ]

    return argv


def _granian(interface: str, module: str, http: str = "1") -> Argv:
    """Granian; `http` is its --http: 1, 2 (HTTP/2 only) or auto (both on the port)."""

    def argv(port: int, workers: int) -> list[str]:
        return [
            str(paths.PEERS_BIN / "granian"),
            "--interface",
            interface,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--loop",
            "uvloop",
            "--http",
            http,
            "--no-ws",
            "--log-level",
            "warning",
            "--backlog",
            "4096",
            module,
        ]

    return argv


def _hypercorn(module: str) -> Argv:
    """Hypercorn on uvloop: HTTP/1.1, and HTTP/2 over cleartext (prior knowledge or
    Upgrade), on the port; no access log unless one is asked for."""

    def argv(port: int, workers: int) -> list[str]:
        return [
            str(paths.PEERS_BIN / "hypercorn"),
            module,
            "--bind",
            f"127.0.0.1:{port}",
            "--worker-class",
            "uvloop",
            "--workers",
            str(workers),
            "--backlog",
            "4096",
            "--log-level",
            "warning",
        ]

    return argv


def _script(python: str, script: str, *extra: str) -> Argv:
    def argv(port: int, workers: int) -> list[str]:
        return [python, script, *extra]

    return argv


def _veter(port: int, workers: int) -> list[str]:
    argv = [*paths.veter_run("benchmarks.apps.veter_app:app")]
    return [*argv, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]


def _veter_module(module: str, python: Path | None = None) -> Argv:
    """veter serving a veter.App of apps/ (on VETER_PYTHON unless `python` is named)."""

    def argv(port: int, workers: int) -> list[str]:
        run = paths.veter_run(f"benchmarks.apps.{module}", python)
        return [*run, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]

    return argv


def _veter_hosting(module: str, python: Path | None = None) -> Argv:
    """veter serving an ASGI app of apps/ (the same module its peers serve)."""

    def argv(port: int, workers: int) -> list[str]:
        run = paths.veter_run(f"benchmarks.apps.{module}", python)
        return [*run, "--lifespan", "off", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]

    return argv


def _veter_abi3(port: int, workers: int) -> list[str]:
    argv = [str(paths.ABI3_PYTHON), "-m", "veter", "run", "benchmarks.apps.veter_app:app", "--access-log", "off"]
    return [*argv, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]


def _sanic(port: int, workers: int) -> list[str]:
    return [
        str(paths.PEERS_BIN / "sanic"),
        "sanic_app:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-access-logs",
        "--no-motd",
    ]


def _gunicorn_falcon(port: int, workers: int) -> list[str]:
    return [
        str(paths.PEERS_BIN / "gunicorn"),
        "falcon_app:app",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(max(workers, SYNC_WORKERS)),
        "--worker-class",
        "sync",
        "--backlog",
        "4096",
    ]


def _gunicorn_flask(port: int, workers: int) -> list[str]:
    # Issue 14's baseline: the sync worker, one process (the server has one CPU).
    return [
        str(paths.PEERS_BIN / "gunicorn"),
        "flask_app:app",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        "sync",
        "--backlog",
        "4096",
    ]


def _nginx(port: int, workers: int) -> list[str]:
    return ["/usr/sbin/nginx", "-p", str(nginx.prefix(port)), "-c", "nginx.conf", "-e", "error.log"]


def veter_unavailable(python: Path | None = None) -> str | None:
    python = python or paths.VETER_PYTHON
    if not python.exists():
        return f"veter not available: {python} does not exist"
    probe = subprocess.run(
        [str(python), "-c", "import veter; veter.App"],
        cwd=paths.REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["unknown error"])[-1]
        return f"veter not available: {reason}"
    return None


@dataclass(frozen=True)
class Veter(Server):
    python: Path | None = None  # None: VETER_PYTHON

    def unavailable(self) -> str | None:
        return super().unavailable() or veter_unavailable(self.python)


#: What the pythons scenario serves on each Python: kind -> (how, what, routes, ready route).
ON_EACH_PYTHON: dict[str, tuple[Callable[[str, Path], Argv], str, frozenset[str], str]] = {
    "native": (_veter_module, "veter's own def handlers", HELLO, "plaintext"),
    "async": (_veter_module, "veter's own async def handlers", frozenset({"plaintext"}), "plaintext"),
    "asgi": (_veter_hosting, "veter hosting the raw ASGI app", HELLO, "plaintext"),
    "typed": (_veter_module, "veter, typed handler (msgspec Struct body)", frozenset({"order"}), "items"),
}
ON_EACH_PYTHON_APPS = {"native": "veter_app:app", "async": "veter_async:app", "asgi": "asgi_raw:app"}


def on_python(kind: str, version: str) -> str:
    """The name of the pythons scenario's server of `kind` on Python `version`."""
    return f"veter-{version}" if kind == "native" else f"veter-{kind}-{version}"


#: zuvloop where veter asks uvloop for its loop (micro/force_loop), on Python 3.14: the
#: pythons scenario's measure of zuvloop under veter.
FORCE_ZUVLOOP = {
    "PYTHONPATH": f"{paths.BENCH / 'micro' / 'force_loop'}:{paths.ZUVLOOP_314}",
    "VETER_FORCE_LOOP": "zuvloop",
}


def _on_each_python() -> list[Server]:
    servers: list[Server] = []
    pythons = {**paths.VETER_PYTHONS, "3.11-debian": paths.VETER_DEBIAN_311}
    for version, python in pythons.items():
        for kind, (how, what, routes, ready) in ON_EACH_PYTHON.items():
            module = ON_EACH_PYTHON_APPS.get(kind, "typed_veter:app")
            name, where = on_python(kind, version), f"{what} on Python {version}"
            start = how(module, python)
            servers.append(
                Veter(name, where, routes, start, cwd=paths.REPO, needs=(python,), ready_route=ready, python=python)
            )
            if version == "3.14":
                servers.append(
                    Veter(
                        f"{name}-zuvloop",
                        f"{where}, on zuvloop",
                        routes,
                        start,
                        cwd=paths.REPO,
                        env=FORCE_ZUVLOOP,
                        needs=(paths.ZUVLOOP_314 / "zuvloop",),
                        ready_route=ready,
                        python=python,
                    )
                )
    return servers


PEERS_PY = _py(paths.PEERS_BIN)
JAPRONTO_PY = _py(paths.JAPRONTO_VENV / "bin")
PEERS_NEED = (paths.PEERS_BIN / "python",)

ALL: dict[str, Server] = {
    s.name: s
    for s in [
        Veter("veter", "veter (Rust HTTP core on uvloop)", ASYNC | {"upload"}, _veter, cwd=paths.REPO),
        Veter(
            "veter-asgi",
            "veter hosting the raw ASGI app",
            HELLO | {"sleep50", "upload"},
            _veter_hosting("asgi_raw:app"),
            cwd=paths.REPO,
        ),
        Veter(
            "veter-async",
            "veter's own async def handlers (the hosted apps' reference)",
            HELLO,
            _veter_module("veter_async:app"),
            cwd=paths.REPO,
        ),
        Veter(
            "veter-fastapi", "veter hosting the FastAPI app", ASYNC, _veter_hosting("fastapi_app:app"), cwd=paths.REPO
        ),
        Veter(
            "veter-starlette",
            "veter hosting the Starlette app",
            ASYNC,
            _veter_hosting("starlette_app:app"),
            cwd=paths.REPO,
        ),
        Veter(
            "veter-flask", "veter hosting the Flask app (WSGI)", HELLO, _veter_hosting("flask_app:app"), cwd=paths.REPO
        ),
        Server(
            "veter-abi3",
            "veter from one abi3 wheel (stable ABI, Python 3.11+)",
            ASYNC,
            _veter_abi3,
            cwd=paths.REPO,
            needs=(paths.ABI3_PYTHON,),
        ),
        Server(
            "pyfloor",
            "raw uvloop Protocol + httptools, fixed response",
            HELLO,
            _script(PEERS_PY, "pyfloor.py"),
            needs=PEERS_NEED,
        ),
        Server(
            "uvicorn-raw",
            "uvicorn (httptools, uvloop), raw ASGI app",
            HELLO,
            _uvicorn("asgi_raw:app"),
            needs=PEERS_NEED,
        ),
        Server(
            "uvicorn-zttp",
            "uvicorn (zttp, uvloop), raw ASGI app",
            HELLO,
            _uvicorn("asgi_raw:app", http="zttp"),
            needs=PEERS_NEED,
        ),
        Server(
            "uvicorn-3.14",
            "uvicorn (httptools, uvloop) on Python 3.14, raw ASGI app",
            HELLO,
            _uvicorn("asgi_raw:app", bin_dir=paths.PEERS_314_BIN),
            needs=(paths.PEERS_314_BIN / "python",),
        ),
        Server(
            "uvicorn-zttp-zuvloop",
            "uvicorn (zttp, zuvloop) on Python 3.14, raw ASGI app",
            HELLO,
            _uvicorn("asgi_raw:app", http="zttp", loop="zuvloop", bin_dir=paths.PEERS_314_BIN),
            needs=(paths.PEERS_314_BIN / "python",),
        ),
        Server(
            "nginx",
            "nginx `return 200`, 1 worker",
            HELLO,
            _nginx,
            needs=(Path("/usr/sbin/nginx"),),
            prepare=nginx.prepare,
        ),
        Server(
            "nginx-h2",
            "nginx `return 200`, 1 worker, h2c (`listen ... http2`)",
            H2,
            _nginx,
            needs=(Path("/usr/sbin/nginx"),),
            prepare=nginx.prepare_h2c,
        ),
        Server(
            "go-nethttp",
            "Go net/http (GOMAXPROCS from the pinned CPU = 1)",
            HELLO,
            lambda port, workers: [str(paths.GO_BIN)],
            needs=(paths.GO_BIN,),
        ),
        Server("uvicorn-starlette", "Starlette on uvicorn", ASYNC, _uvicorn("starlette_app:app"), needs=PEERS_NEED),
        Server("fastapi", "FastAPI on uvicorn", ASYNC, _uvicorn("fastapi_app:app"), needs=PEERS_NEED),
        Veter(
            "veter-typed",
            "veter, typed handlers (msgspec Struct body)",
            TYPED | {"order-raw", "items-raw"},
            lambda port, workers: [
                *paths.veter_run("benchmarks.apps.typed_veter:app"),
                *("--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)),
            ],
            cwd=paths.REPO,
        ),
        Server(
            "fastapi-typed",
            "FastAPI on uvicorn (pydantic models)",
            TYPED,
            _uvicorn("typed_fastapi:app"),
            needs=PEERS_NEED,
        ),
        Server(
            "litestar-typed",
            "Litestar on uvicorn (msgspec models)",
            TYPED,
            _uvicorn("typed_litestar:app"),
            needs=PEERS_NEED,
        ),
        Server(
            "blacksheep-typed",
            "BlackSheep on uvicorn (pydantic models)",
            TYPED,
            _uvicorn("typed_blacksheep:app"),
            needs=PEERS_NEED,
        ),
        Server("granian-rsgi", "Granian, raw RSGI app", HELLO, _granian("rsgi", "granian_rsgi:app"), needs=PEERS_NEED),
        Server("granian-asgi", "Granian, raw ASGI app", HELLO, _granian("asgi", "asgi_raw:app"), needs=PEERS_NEED),
        Server(
            "granian-rsgi-h2",
            "Granian --http auto, raw RSGI app",
            H2,
            _granian("rsgi", "granian_rsgi:app", http="auto"),
            needs=PEERS_NEED,
        ),
        Server(
            "granian-asgi-h2",
            "Granian --http auto, raw ASGI app",
            H2,
            _granian("asgi", "asgi_raw:app", http="auto"),
            needs=PEERS_NEED,
        ),
        Server(
            "uvicorn-zttp-h2",
            "uvicorn --http zttp --http2 (uvloop), raw ASGI app",
            H2,
            _uvicorn("asgi_raw:app", http="zttp", http2=True),
            needs=PEERS_NEED,
        ),
        Server(
            "hypercorn",
            "Hypercorn (uvloop), raw ASGI app",
            H2,
            _hypercorn("asgi_raw:app"),
            needs=(paths.PEERS_BIN / "hypercorn",),
        ),
        Server(
            "granian-wsgi", "Granian, the Flask app (WSGI)", HELLO, _granian("wsgi", "flask_app:app"), needs=PEERS_NEED
        ),
        Server("sanic", "Sanic, 1 worker", ASYNC, _sanic, needs=PEERS_NEED),
        Server("aiohttp", "aiohttp on uvloop", ASYNC, _script(PEERS_PY, "aiohttp_app.py"), needs=PEERS_NEED),
        Server("tornado", "Tornado, async def handlers", ASYNC, _script(PEERS_PY, "tornado_app.py"), needs=PEERS_NEED),
        Server(
            "tornado-gen",
            "Tornado, @gen.coroutine handlers",
            ASYNC,
            _script(PEERS_PY, "tornado_gen_app.py"),
            needs=PEERS_NEED,
        ),
        Server(
            "japronto",
            "Japronto on Python 3.7",
            HELLO,
            _script(JAPRONTO_PY, "japronto_app.py"),
            needs=(paths.JAPRONTO_VENV / "bin" / "python",),
        ),
        Server(
            "socketify", "socketify.py (uWebSockets)", HELLO, _script(PEERS_PY, "socketify_app.py"), needs=PEERS_NEED
        ),
        Server(
            "robyn",
            "Robyn, 1 process 1 worker",
            HELLO,
            _script(PEERS_PY, "robyn_app.py", "--processes", "1", "--workers", "1"),
            needs=PEERS_NEED,
        ),
        Server(
            "blacksheep", "BlackSheep on uvicorn", ASYNC - {"block"}, _uvicorn("blacksheep_app:app"), needs=PEERS_NEED
        ),
        Server(
            "gunicorn-falcon",
            "Falcon on gunicorn, 3 sync workers",
            HELLO | {"block"},
            _gunicorn_falcon,
            needs=PEERS_NEED,
        ),
        Server("gunicorn-flask", "Flask on gunicorn, 1 sync worker", HELLO, _gunicorn_flask, needs=PEERS_NEED),
        *_on_each_python(),
    ]
}


def pick(names: list[str]) -> list[Server]:
    return [ALL[name] for name in names]
