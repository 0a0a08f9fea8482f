"""App servers started with a given worker count, for the db and redis+log scenarios.

Each builder returns argv for (app module, port, workers) the way the server's docs
recommend running it in production with several processes.
"""

from collections.abc import Callable

from . import paths

AppArgv = Callable[[str, int, int], list[str]]


def veter(module: str, port: int, workers: int) -> list[str]:
    argv = [*paths.veter_run(module), "--host", "127.0.0.1", "--port", str(port)]
    return [*argv, "--workers", str(workers)]


def uvicorn(module: str, port: int, workers: int) -> list[str]:
    return [
        str(paths.PEERS_BIN / "uvicorn"),
        module,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--no-access-log",
        "--log-level",
        "warning",
        "--workers",
        str(workers),
        "--backlog",
        "4096",
    ]


def uvicorn_wsgi(module: str, port: int, workers: int) -> list[str]:
    """A WSGI app on uvicorn: its own WSGI middleware, a pool of 10 threads."""
    return [*uvicorn(module, port, workers), "--interface", "wsgi"]


def sanic(module: str, port: int, workers: int) -> list[str]:
    return [
        str(paths.PEERS_BIN / "sanic"),
        module,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-access-logs",
        "--no-motd",
    ]


def gunicorn_aiohttp(module: str, port: int, workers: int) -> list[str]:
    return [
        str(paths.PEERS_BIN / "gunicorn"),
        module,
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        "aiohttp.GunicornUVLoopWebWorker",
        "--backlog",
        "4096",
    ]


def gunicorn_sync(module: str, port: int, workers: int) -> list[str]:
    return [
        str(paths.PEERS_BIN / "gunicorn"),
        module,
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        "sync",
        "--backlog",
        "4096",
    ]


#: Threads per process of the threaded WSGI servers (veter's default pool size).
THREADS = 10


def gunicorn_gthread(module: str, port: int, workers: int) -> list[str]:
    argv = gunicorn_sync(module, port, workers)
    argv[argv.index("sync")] = "gthread"
    return [*argv, "--threads", str(THREADS)]


def uwsgi(module: str, port: int, workers: int) -> list[str]:
    return [
        str(paths.PEERS_BIN / "uwsgi"),
        "--http-socket",
        f"127.0.0.1:{port}",
        "--module",
        module,
        "--virtualenv",
        str(paths.PEERS_VENV),
        "--master",
        "--processes",
        str(workers),
        "--threads",
        str(THREADS),
        "--enable-threads",
        "--lazy-apps",
        "--die-on-term",
        "--disable-logging",
        "--listen",
        "1024",
    ]


def granian_wsgi(module: str, port: int, workers: int) -> list[str]:
    return [
        str(paths.PEERS_BIN / "granian"),
        "--interface",
        "wsgi",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--blocking-threads",
        str(THREADS),
        "--log-level",
        "warning",
        module,
    ]


# name -> (what, argv builder, worker counts it can use or None for any)
KINDS: dict[str, tuple[str, AppArgv, list[int] | None]] = {
    "veter": ("veter --workers N (a master supervising N workers)", veter, None),
    "uvicorn-starlette": ("Starlette on uvicorn --workers N", uvicorn, None),
    "aiohttp": ("aiohttp on gunicorn, GunicornUVLoopWebWorker", gunicorn_aiohttp, None),
    "sanic": ("Sanic --workers N", sanic, None),
    "gunicorn-falcon": ("Falcon on gunicorn sync workers", gunicorn_sync, None),
}

#: The db scenario's hosted apps (issue 14): Flask on each WSGI server, FastAPI on
#: uvicorn and on veter (fewer worker counts: the scenario's run time).
HOSTED_KINDS: dict[str, tuple[str, AppArgv, list[int] | None]] = {
    "veter-flask": (f"Flask on veter's WSGI pool ({THREADS} threads) --workers N", veter, [1, 2, 3]),
    "gunicorn-flask-sync": ("Flask on gunicorn sync workers", gunicorn_sync, [1, 2, 3]),
    "gunicorn-flask-gthread": (f"Flask on gunicorn gthread workers, {THREADS} threads", gunicorn_gthread, [1, 2, 3]),
    "uwsgi-flask": (f"Flask on uWSGI, {THREADS} threads per process", uwsgi, [1, 2, 3]),
    "granian-flask": (f"Flask on Granian WSGI, {THREADS} blocking threads", granian_wsgi, [1, 2, 3]),
    "uvicorn-flask": (f"Flask on uvicorn --interface wsgi, {THREADS} threads", uvicorn_wsgi, [1, 2, 3]),
    "veter-fastapi": ("FastAPI on veter --workers N", veter, [1, 2, 3]),
    "uvicorn-fastapi": ("FastAPI on uvicorn --workers N", uvicorn, [1, 2, 3]),
}


def extra_pythonpath() -> str:
    """veter runs on the lead's interpreter: the db/redis clients come from a --target
    dir installed for that interpreter, and the shared app helpers from apps/."""
    return f"{paths.APPS}:{paths.WORK / 'veter-extras'}"
