"""The ``veter`` command: ``veter run module:app``, ``veter routes module:app``."""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal

import click

from veter.binds import BindError
from veter.config import ServerConfig
from veter.importer import AppImportError, import_app
from veter.supervisor.config import MasterConfig

__all__ = ["main"]

_DEFAULTS = ServerConfig()


def _load(ref: str) -> Any:
    try:
        return import_app(ref)
    except AppImportError as exc:
        raise click.ClickException(str(exc)) from None
    except Exception:  # noqa: BLE001 - any import-time error is reported, then exit 1
        click.echo(f"error: importing {ref} failed:", err=True)
        traceback.print_exc()
        sys.exit(1)


@click.group()
@click.version_option(package_name="veter")
def main() -> None:
    """veter: a fast Python web framework and server for microservices."""


@main.command()
@click.argument("app_ref", metavar="MODULE:APP")
@click.option("--host", default=None, help=f"Interface to bind [default: {_DEFAULTS.host}].")
@click.option("--port", type=int, default=None, help=f"Port to bind [default: {_DEFAULTS.port}].")
@click.option(
    "--bind",
    multiple=True,
    default=None,
    help="Listen here instead of --host/--port; repeat for several: HOST:PORT, [IPV6]:PORT, "
    "unix:PATH or fd://N.",
)
@click.option("--uds", default=None, help="Listen on this Unix socket path instead of --host/--port.")
@click.option(
    "--uds-mode",
    default=None,
    help=f"Permissions of the Unix socket file, octal [default: {_DEFAULTS.uds_mode}].",
)
@click.option(
    "--fd",
    type=int,
    default=None,
    help="Serve this inherited listening socket descriptor instead of --host/--port "
    "(systemd's LISTEN_FDS are used without it).",
)
@click.option(
    "--loop",
    type=click.Choice(["auto", "uvloop", "asyncio"]),
    default=None,
    help="Event loop [default: auto].",
)
@click.option("--backlog", type=int, default=None, help=f"listen(2) backlog [default: {_DEFAULTS.backlog}].")
@click.option(
    "--keepalive-timeout",
    type=float,
    default=None,
    help=f"Idle keep-alive seconds [default: {_DEFAULTS.keepalive_timeout}].",
)
@click.option(
    "--graceful-timeout",
    type=float,
    default=None,
    help=f"Drain seconds on SIGTERM [default: {_DEFAULTS.graceful_timeout}].",
)
@click.option(
    "--header-timeout",
    type=float,
    default=None,
    help=f"Seconds to receive a request head (408 after) [default: {_DEFAULTS.header_timeout}].",
)
@click.option(
    "--body-timeout",
    type=float,
    default=None,
    help=f"Seconds of silence inside a request body (408 after) [default: {_DEFAULTS.body_timeout}].",
)
@click.option(
    "--write-timeout",
    type=float,
    default=None,
    help=f"Seconds a client may leave its response unread [default: {_DEFAULTS.write_timeout}].",
)
@click.option(
    "--request-timeout",
    type=float,
    default=None,
    help=f"Handler deadline in seconds, 504 after it (0: none) [default: {_DEFAULTS.request_timeout}].",
)
@click.option(
    "--max-concurrency",
    type=int,
    default=None,
    help=f"Handlers in flight per worker; above it reading pauses (0: no cap) [default: {_DEFAULTS.max_concurrency}].",
)
@click.option(
    "--max-connections",
    type=int,
    default=None,
    help=f"Connections served at once per worker (0: no cap) [default: {_DEFAULTS.max_connections}].",
)
@click.option(
    "--queue-timeout",
    type=float,
    default=None,
    help=f"Seconds a request may wait for its handler; later ones get 503 (0: off) [default: {_DEFAULTS.queue_timeout}].",
)
@click.option(
    "--lag-threshold",
    type=float,
    default=None,
    help=f"Warn when the loop is blocked this many seconds (0: off) [default: {_DEFAULTS.lag_threshold}].",
)
@click.option("--server-header", default=None, help="Server header value [default: veter].")
@click.option("--no-server-header", is_flag=True, help="Send no Server header.")
@click.option(
    "--max-start-line",
    type=int,
    default=None,
    help=f"Request line limit, bytes [default: {_DEFAULTS.max_start_line}].",
)
@click.option(
    "--max-header-count",
    type=int,
    default=None,
    help=f"Header count limit [default: {_DEFAULTS.max_header_count}].",
)
@click.option(
    "--max-header-bytes",
    type=int,
    default=None,
    help=f"Header bytes limit [default: {_DEFAULTS.max_header_bytes}].",
)
@click.option(
    "--max-body-bytes",
    type=int,
    default=None,
    help=f"Body size limit, bytes [default: {_DEFAULTS.max_body_bytes}].",
)
@click.option(
    "--max-chunk-ext-bytes",
    type=int,
    default=None,
    help=f"Chunk extension bytes per chunk line [default: {_DEFAULTS.max_chunk_ext_bytes}].",
)
@click.option(
    "--max-trailer-bytes",
    type=int,
    default=None,
    help=f"Trailer bytes after a chunked body [default: {_DEFAULTS.max_trailer_bytes}].",
)
@click.option(
    "--max-chunk-count",
    type=int,
    default=None,
    help=f"Chunks per chunked body [default: {_DEFAULTS.max_chunk_count}].",
)
@click.option(
    "--max-pipelined",
    type=int,
    default=None,
    help=f"Handlers in flight per connection [default: {_DEFAULTS.max_pipelined}].",
)
@click.option(
    "--max-threads",
    type=int,
    default=None,
    help=f"Thread pool for blocking handlers [default: {_DEFAULTS.max_threads}].",
)
@click.option("--ssl-certfile", default=None, help="TLS certificate chain (PEM): serve HTTPS [default: off].")
@click.option("--ssl-keyfile", default=None, help="TLS private key (PEM).")
@click.option("--ssl-keyfile-password", default=None, help="Password of an encrypted --ssl-keyfile.")
@click.option(
    "--metrics-path",
    default=None,
    help="Serve Prometheus metrics at this path, e.g. /metrics [default: off].",
)
@click.option(
    "--request-id-header",
    default=None,
    help=f"Header carrying the request id, in and out [default: {_DEFAULTS.request_id_header}].",
)
@click.option("--no-request-id", is_flag=True, help="No request ids (nothing echoed, none in logs).")
@click.option(
    "--access-log",
    default=None,
    metavar="DEST",
    help="Access log: '-' for stdout, a file path, or 'off' [default: -].",
)
@click.option(
    "--access-log-format",
    default=None,
    help="Access log format: text, json, or a template of {fields} [default: text].",
)
@click.option(
    "--access-log-health", is_flag=True, default=None, help="Also log health probes (/healthz, /readyz)."
)
@click.option(
    "--log-buffer-bytes",
    type=int,
    default=None,
    help=f"Access log bytes buffered per worker before a write [default: {_DEFAULTS.log_buffer_bytes}].",
)
@click.option(
    "--log-flush-interval",
    type=float,
    default=None,
    help=f"Seconds an access log line may wait in the buffer (0: end of its loop iteration) [default: {_DEFAULTS.log_flush_interval}].",
)
@click.option("--log-file", default=None, help="Application log file [default: stderr].")
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default=None,
    help="Application log format [default: text].",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error", "critical"], case_sensitive=False),
    default=None,
    help="Application log level [default: info].",
)
@click.option(
    "--log-max-bytes",
    type=int,
    default=None,
    help="Rotate log files when one passes this many bytes (0: never) [default: 0].",
)
@click.option(
    "--log-rotate-interval",
    type=float,
    default=None,
    help="Rotate log files every this many seconds (0: never) [default: 0].",
)
@click.option(
    "--log-backups",
    type=int,
    default=None,
    help=f"Rotated log files kept [default: {_DEFAULTS.log_backups}].",
)
@click.option(
    "--ws-max-message-size",
    type=int,
    default=None,
    help=f"Largest WebSocket message accepted, in bytes [default: {_DEFAULTS.ws_max_message_size}].",
)
@click.option(
    "--ws-max-queue",
    type=int,
    default=None,
    help=f"Received WebSocket bytes held before reading pauses [default: {_DEFAULTS.ws_max_queue}].",
)
@click.option(
    "--ws-ping-interval",
    type=float,
    default=None,
    help=f"Seconds between WebSocket keep-alive pings (0: none) [default: {_DEFAULTS.ws_ping_interval}].",
)
@click.option(
    "--ws-ping-timeout",
    type=float,
    default=None,
    help=f"Seconds a WebSocket ping waits for its pong [default: {_DEFAULTS.ws_ping_timeout}].",
)
@click.option(
    "--ws-close-timeout",
    type=float,
    default=None,
    help=f"Seconds a WebSocket close waits for the peer's [default: {_DEFAULTS.ws_close_timeout}].",
)
@click.option(
    "--ws-deflate/--no-ws-deflate",
    default=None,
    help=f"Agree to permessage-deflate when a WebSocket client offers it [default: {_DEFAULTS.ws_deflate}].",
)
@click.option(
    "--ws-deflate-window-bits",
    type=int,
    default=None,
    help=f"Largest WebSocket compression window, 9-15 [default: {_DEFAULTS.ws_deflate_window_bits}].",
)
@click.option(
    "--ws-deflate-level",
    type=int,
    default=None,
    help=f"zlib level of WebSocket compression, 1-9 [default: {_DEFAULTS.ws_deflate_level}].",
)
@click.option(
    "--ws-deflate-min-size",
    type=int,
    default=None,
    help=f"Smallest WebSocket message sent compressed, in bytes [default: {_DEFAULTS.ws_deflate_min_size}].",
)
@click.option(
    "--drain-delay",
    type=float,
    default=None,
    help="Seconds a stopping instance keeps serving, /readyz answering 503, before it drains "
    f"(Kubernetes: endpoints stop sending it traffic first) [default: {_DEFAULTS.drain_delay}].",
)
@click.option(
    "--proxy-headers/--no-proxy-headers",
    default=None,
    help="Take the client's address, scheme and host from X-Forwarded-* and Forwarded headers "
    f"sent by a trusted proxy (--forwarded-allow-ips) [default: {_DEFAULTS.proxy_headers}].",
)
@click.option(
    "--forwarded-allow-ips",
    default=None,
    help="Comma-separated addresses and CIDR networks of trusted proxies; 'unix' for the Unix "
    f"socket, '*' for anyone [default: {_DEFAULTS.forwarded_allow_ips}].",
)
@click.option(
    "--workers",
    default=None,
    help="Worker processes, or 'auto' for one per CPU this process may use [default: 1].",
)
@click.option("--single-process", is_flag=True, help="Serve in this process, without a master (debugging).")
@click.option(
    "--worker-timeout",
    type=float,
    default=None,
    help="Seconds a worker's loop may stall before it is dumped and replaced [default: 30.0].",
)
@click.option(
    "--max-requests",
    type=int,
    default=None,
    help="Recycle a worker after this many requests (0: never) [default: 0].",
)
@click.option(
    "--max-requests-jitter",
    type=int,
    default=None,
    help="Up to this many more requests, per worker, so they do not recycle together [default: 0].",
)
@click.option(
    "--max-rss",
    type=int,
    default=None,
    help="Recycle a worker whose resident memory passes this many MiB (0: never) [default: 0].",
)
@click.option(
    "--max-lifetime",
    type=float,
    default=None,
    help="Recycle a worker after this many seconds (0: never) [default: 0].",
)
@click.option(
    "--reload", is_flag=True, help="Restart workers when Python files under the current directory change."
)
@click.option(
    "--reuse-port",
    is_flag=True,
    default=None,
    help="Each worker binds its own SO_REUSEPORT socket instead of sharing one.",
)
def run(
    app_ref: str,
    no_server_header: bool,
    no_request_id: bool,
    single_process: bool,
    reload: bool,
    **options: Any,
) -> None:
    """Serve MODULE:APP until SIGINT or SIGTERM.

    By default a master process supervises --workers worker processes that share
    one listening socket; --single-process serves without a master. Every option
    can also come from VETER_<OPTION> or a config file (docs/guide.md, "Settings").
    """
    from veter.server import configure_logging

    flags = _flags(options, no_server_header)
    if no_request_id:
        flags["request_id_header"] = None
    server_changes, master_options = _layered(flags)
    try:
        logging_config = ServerConfig().with_(**server_changes)
    except (TypeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    configure_logging(logging_config)
    if single_process:
        from veter.server import run as serve

        app = _load(app_ref)
        config = _server_config(app.config, server_changes)
        try:
            sys.exit(serve(app, config))
        except BindError as exc:
            raise click.ClickException(str(exc)) from None

    from veter.supervisor import Master

    # The master does not import the app (workers do, after the fork): settings
    # given to veter.App(...) apply in the workers; flags, environment and config
    # file apply everywhere, over them.
    config = _server_config(ServerConfig(), server_changes)
    if reload:
        from veter.supervisor.reload import start_reloader

        start_reloader(Path.cwd())
    try:
        sys.exit(Master(app_ref, config, master_options, overrides=server_changes).run())
    except BindError as exc:
        raise click.ClickException(str(exc)) from None


def _flags(options: dict[str, Any], no_server_header: bool) -> dict[str, Any]:
    """The options given on the command line (click leaves the others None)."""
    # Absent options are None (plain flags too: default=None), so a False here was
    # asked for (--no-ws-deflate) and overrides the environment and config file.
    flags = {k: v for k, v in options.items() if v is not None and v != ()}
    if "workers" in flags:
        flags["workers"] = _parse_workers(flags["workers"])
    if no_server_header:
        flags["server_header"] = None
    return flags


def _layered(flags: dict[str, Any]) -> tuple[dict[str, Any], MasterConfig]:
    """Server settings changed from their defaults, and the master's options, from
    the config file, the environment and ``flags``, each over the one before."""
    from veter.settings import ENV_PREFIX, SettingsError, load, read_config_file

    try:
        file = read_config_file()
        loaded = load(
            (ServerConfig, MasterConfig),
            file_values=file.server,
            file_label=file.label,
            env_prefix=ENV_PREFIX,
            environ=os.environ,
            flags=flags,
        )
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    master_fields = {f.name for f in fields(MasterConfig)}
    server = {k: v for k, v in loaded.values.items() if k not in master_fields}
    try:
        master = MasterConfig(**{k: v for k, v in loaded.values.items() if k in master_fields})
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    return server, master


def _parse_workers(value: str) -> int | Literal["auto"]:
    if value == "auto":
        return "auto"
    try:
        return int(value)
    except ValueError:
        raise click.ClickException(f"--workers must be a number or 'auto', not {value!r}") from None


def _server_config(base: ServerConfig, changes: dict[str, Any]) -> ServerConfig:
    try:
        return base.with_(**changes)
    except (TypeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@click.argument("app_ref", metavar="MODULE:APP")
def routes(app_ref: str) -> None:
    """Print the route table of MODULE:APP (and check it for conflicts)."""
    app = _load(app_ref)
    try:
        app.build_dispatcher()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{'METHODS':<20} {'PATH':<40} HANDLER")
    for route in app.routes:
        click.echo(route.describe())


@main.command()
@click.argument("name")
@click.option("--postgres", is_flag=True, help="Wire a PostgreSQL pool (veter.pools.PostgresPool).")
@click.option("--redis", is_flag=True, help="Wire a Redis pool (veter.pools.RedisPool).")
@click.option(
    "--dir",
    "parent",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(),
    show_default=True,
    help="Folder to create the project in.",
)
def new(name: str, postgres: bool, redis: bool, parent: Path) -> None:
    """Create a runnable service project NAME: app, typed settings, tests, Makefile,
    Dockerfile and a Kubernetes manifest with health probes."""
    from veter.scaffold import Options, ProjectError, create_project

    try:
        target = create_project(name, parent, Options(postgres=postgres, redis=redis))
    except ProjectError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"created {target}")
    click.echo(f"next: cd {target} && make run   (and make test)")


@main.command("config")
@click.argument("app_ref", metavar="MODULE:APP")
def config_command(app_ref: str) -> None:
    """Print the effective settings of MODULE:APP and where each came from (default,
    App(...), config file, environment). Flags given to `veter run` override them."""
    from veter.settings import SettingsError, loaded_settings

    try:
        server_changes, master_options = _layered({})
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    sources = _sources({})
    app = _load(app_ref)
    rows: list[tuple[str, object, str]] = []
    for field in fields(ServerConfig):
        name = field.name
        value = server_changes.get(name, getattr(app.config, name))
        from_app = getattr(app.config, name) != getattr(_DEFAULTS, name)
        rows.append((name, value, sources.get(name) or ("App(...)" if from_app else "default")))
    for field in fields(MasterConfig):
        rows.append((field.name, getattr(master_options, field.name), sources.get(field.name, "default")))
    _print_rows("server", rows)
    for instance, app_sources in loaded_settings():
        app_rows = [
            (f.name, getattr(instance, f.name), app_sources.get(f.name, "default")) for f in fields(instance)
        ]
        _print_rows(f"app settings ({type(instance).__name__})", app_rows)


def _sources(flags: dict[str, Any]) -> dict[str, str]:
    from veter.settings import ENV_PREFIX, load, read_config_file

    file = read_config_file()
    loaded = load(
        (ServerConfig, MasterConfig),
        file_values=file.server,
        file_label=file.label,
        env_prefix=ENV_PREFIX,
        environ=os.environ,
        flags=flags,
    )
    return loaded.sources


def _print_rows(title: str, rows: list[tuple[str, object, str]]) -> None:
    click.echo(f"{title}:")
    width = max(len(f"{name} = {value!r}") for name, value, _ in rows)
    for name, value, source in rows:
        click.echo(f"  {f'{name} = {value!r}':<{width}}  # {source}")


@main.command()
@click.option("--pid", type=int, required=True, help="The master's pid (or a --single-process server's).")
@click.option("--duration", type=float, default=30.0, show_default=True, help="Seconds to record.")
@click.option("--rate", type=int, default=100, show_default=True, help="Samples per second, per worker.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("flame.svg"),
    show_default=True,
    help="The flame graph (SVG) to write.",
)
def profile(pid: int, duration: float, rate: int, output: Path) -> None:
    """Record every worker of a running master with py-spy and write one flame graph."""
    from veter.profiling import ProfileError, children_of, record, render_svg

    try:
        processes = children_of(pid) or [pid]
        click.echo(
            f"recording {len(processes)} process(es) for {duration:g} s: {', '.join(map(str, processes))}"
        )
        recording = record(processes, duration, rate)
        title = f"veter profile of {pid}: {len(recording.recorded)} process(es), {duration:g} s, {recording.samples} samples"
        output.write_text(render_svg(recording.stacks, title))
    except ProfileError as exc:
        raise click.ClickException(str(exc)) from None
    for failed, why in recording.failed.items():
        click.echo(f"warning: process {failed} was not recorded: {why}", err=True)
    click.echo(f"wrote {output} ({recording.samples} samples)")
