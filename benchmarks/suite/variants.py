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


# name -> (what, argv builder, worker counts it can use or None for any)
KINDS: dict[str, tuple[str, AppArgv, list[int] | None]] = {
    "veter": ("veter --workers N (a master supervising N workers)", veter, None),
    "uvicorn-starlette": ("Starlette on uvicorn --workers N", uvicorn, None),
    "aiohttp": ("aiohttp on gunicorn, GunicornUVLoopWebWorker", gunicorn_aiohttp, None),
    "sanic": ("Sanic --workers N", sanic, None),
    "gunicorn-falcon": ("Falcon on gunicorn sync workers", gunicorn_sync, None),
}


def extra_pythonpath() -> str:
    """veter runs on the lead's interpreter: the db/redis clients come from a --target
    dir installed for that interpreter, and the shared app helpers from apps/."""
    return f"{paths.APPS}:{paths.WORK / 'veter-extras'}"
