"""The ``veter`` command: ``veter run module:app``, ``veter routes module:app``."""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import fields
from pathlib import Path
from typing import Any

import click

from veter.binds import BindError
from veter.config import ServerConfig
from veter.importer import AppImportError, import_app
from veter.options import click_options, none_flags, reference
from veter.supervisor.config import MasterConfig

__all__ = ["main"]

_DEFAULTS = ServerConfig()


def _load(ref: str, interface: str = "auto") -> Any:
    try:
        return import_app(ref, interface)
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
@click_options(ServerConfig)
@click_options(MasterConfig)
@click.option("--single-process", is_flag=True, help="Serve in this process, without a master (debugging).")
@click.option(
    "--reload", is_flag=True, help="Restart workers when Python files under the current directory change."
)
def run(app_ref: str, single_process: bool, reload: bool, **options: Any) -> None:
    """Serve MODULE:APP until SIGINT or SIGTERM.

    By default a master process supervises --workers worker processes that share
    one listening socket; --single-process serves without a master. Every option
    can also come from VETER_<OPTION> or a config file (docs/guide.md, "Settings").
    """
    from veter.server import configure_logging

    flags = _flags(options)
    server_changes, master_options = _layered(flags)
    try:
        logging_config = ServerConfig().with_(**server_changes)
    except (TypeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    configure_logging(logging_config)
    if single_process:
        from veter.server import run as serve

        app = _load(app_ref, server_changes.get("interface", "auto"))
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


def _flags(options: dict[str, Any]) -> dict[str, Any]:
    """The settings given on the command line (click leaves the others None)."""
    options = dict(options)
    chosen_none = [name for name, param in none_flags(ServerConfig).items() if options.pop(param, False)]
    # Absent options are None (plain flags too: default=None), so a False here was
    # asked for (--no-ws-deflate) and overrides the environment and config file.
    flags = {k: v for k, v in options.items() if v is not None and v != ()}
    for name in chosen_none:  # --no-server-header, --no-request-id
        flags[name] = None
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


def settings_page() -> str:
    """docs/settings.md, whole (``make docs-settings`` writes it)."""
    return f"""# Settings reference

Every setting of `veter run`, made from its one declaration (`python/veter/config.py`
for the server, `python/veter/supervisor/config.py` for the master, through
`veter.options.setting`); `make docs-settings` writes this page and
`tests/test_options.py` fails when it is out of date. How the sources
layer (flag, then `VETER_<NAME>`, then `veter.toml` or `[tool.veter]`, then the
app's `App(...)` keywords, then these defaults) is in [guide.md](guide.md),
"Settings". A setting whose default is "off" is set to nothing with `none` (or an
empty value) in the environment; `access_log`, `request_id_header` and
`metrics_path` also take `off`, from anywhere.

## Server

Also keywords of `veter.App(...)` and fields of `veter.config.ServerConfig`.

{reference(ServerConfig)}
## Master

Read by `veter run` only (the master process; `--single-process` has none).

{reference(MasterConfig)}"""
