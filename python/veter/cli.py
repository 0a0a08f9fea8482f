"""The ``veter`` command: ``veter run module:app``, ``veter routes module:app``."""

from __future__ import annotations

import sys
import traceback
from typing import Any

import click

from veter.config import ServerConfig
from veter.importer import AppImportError, import_app

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
def run(app_ref: str, no_server_header: bool, **options: Any) -> None:
    """Serve MODULE:APP until SIGINT or SIGTERM."""
    from veter.server import run as serve

    app = _load(app_ref)
    changes = {k: v for k, v in options.items() if v is not None}
    if no_server_header:
        changes["server_header"] = None
    try:
        config = app.config.with_(**changes)
    except (TypeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    serve(app, config)


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
