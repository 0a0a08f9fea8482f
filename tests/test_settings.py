"""Layered settings: flags > environment > config file > defaults, with errors that
name the key and its source."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veter.cli import _layered, main
from veter.config import ServerConfig
from veter.settings import SettingsError, load, load_settings, read_config_file, sources_of
from veter.supervisor import MasterConfig


def layered(
    cwd: Path, environ: dict[str, str], flags: dict[str, object] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    file = read_config_file(cwd, environ)
    loaded = load(
        (ServerConfig, MasterConfig),
        file_values=file.server,
        file_label=file.label,
        env_prefix="VETER_",
        environ=environ,
        flags=flags,
    )
    return loaded.values, loaded.sources


def test_each_layer_overrides_the_one_below(tmp_path: Path) -> None:
    (tmp_path / "veter.toml").write_text("port = 9000\nbacklog = 10\nkeepalive_timeout = 2\nworkers = 3\n")
    environ = {"VETER_BACKLOG": "20", "VETER_KEEPALIVE_TIMEOUT": "3.5"}
    values, sources = layered(tmp_path, environ, {"keepalive_timeout": 4.0})
    assert values == {"port": 9000, "backlog": 20, "keepalive_timeout": 4.0, "workers": 3}
    assert sources == {
        "port": "veter.toml",
        "backlog": "env VETER_BACKLOG",
        "keepalive_timeout": "flag --keepalive-timeout",
        "workers": "veter.toml",
    }


def test_pyproject_tool_veter_is_read_when_there_is_no_veter_toml(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.veter]\nport = 7000\n[tool.veter.app]\na = 1\n'
    )
    file = read_config_file(tmp_path, {})
    assert (file.label, dict(file.server), dict(file.app)) == (
        "pyproject.toml [tool.veter]",
        {"port": 7000},
        {"a": 1},
    )
    (tmp_path / "veter.toml").write_text("port = 7001\n")
    assert read_config_file(tmp_path, {}).server == {"port": 7001}


def test_veter_config_names_the_file(tmp_path: Path) -> None:
    other = tmp_path / "prod.toml"
    other.write_text("port = 80\n")
    assert read_config_file(tmp_path, {"VETER_CONFIG": str(other)}).server == {"port": 80}
    with pytest.raises(SettingsError, match="VETER_CONFIG: no such file"):
        read_config_file(tmp_path, {"VETER_CONFIG": str(tmp_path / "missing.toml")})


@pytest.mark.parametrize(
    ("toml", "environ", "message"),
    [
        ("prot = 1\n", {}, r"veter.toml: unknown setting 'prot' \(did you mean 'port'\?\)"),
        ('port = "x"\n', {}, "veter.toml: port: expected an integer, got 'x'"),
        ("port = true\n", {}, "veter.toml: port: expected an integer"),
        ("backlog = 1.5\n", {}, "veter.toml: backlog: expected an integer"),
        ('loop = "trio"\n', {}, "veter.toml: loop: expected one of"),
        ("", {"VETER_PORT": "eighty"}, "env VETER_PORT: expected an integer, got 'eighty'"),
        ("", {"VETER_REUSE_PORT": "maybe"}, "env VETER_REUSE_PORT: expected true or false"),
        ("", {"VETER_WORKERS": "many"}, "env VETER_WORKERS"),
        ("port = [\n", {}, "not valid TOML"),
    ],
)
def test_bad_values_name_the_key_and_the_source(
    tmp_path: Path, toml: str, environ: dict[str, str], message: str
) -> None:
    (tmp_path / "veter.toml").write_text(toml)
    with pytest.raises(SettingsError, match=message):
        layered(tmp_path, environ)


def test_text_values_are_converted(tmp_path: Path) -> None:
    environ = {
        "VETER_SERVER_HEADER": "none",
        "VETER_REUSE_PORT": "yes",
        "VETER_WORKERS": "auto",
        "VETER_LOOP": "asyncio",
    }
    values, _ = layered(tmp_path, environ)
    assert values == {"server_header": None, "reuse_port": True, "workers": "auto", "loop": "asyncio"}


def test_cli_layering_checks_the_combined_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "veter.toml").write_text("queue_timeout = 0.5\n")
    monkeypatch.setenv("VETER_MAX_CONCURRENCY", "8")
    server, master = _layered({"workers": 2})
    assert server == {"queue_timeout": 0.5, "max_concurrency": 8}
    assert master.workers == 2


@dataclass(frozen=True)
class AppSettings:
    database_url: str = "postgresql://localhost/app"
    page_size: int = 50
    debug: bool = False
    timeout: float | None = None


def test_app_settings_layer_the_same_way(tmp_path: Path) -> None:
    (tmp_path / "veter.toml").write_text(
        'port = 1\n[app]\npage_size = 20\ndatabase_url = "postgresql://db/app"\n'
    )
    settings = load_settings(
        AppSettings,
        env_prefix="ORDERS_",
        environ={"ORDERS_PAGE_SIZE": "30", "ORDERS_DEBUG": "1"},
        cwd=tmp_path,
    )
    assert settings == AppSettings("postgresql://db/app", 30, True, None)
    assert sources_of(settings) == {
        "database_url": "veter.toml [app]",
        "page_size": "env ORDERS_PAGE_SIZE",
        "debug": "env ORDERS_DEBUG",
    }


def test_a_bad_app_setting_names_key_and_source(tmp_path: Path) -> None:
    (tmp_path / "veter.toml").write_text("[app]\npage_sise = 20\n")
    with pytest.raises(
        SettingsError, match=r"veter.toml \[app\]: unknown setting 'page_sise' \(did you mean 'page_size'\?\)"
    ):
        load_settings(AppSettings, env_prefix="ORDERS_", environ={}, cwd=tmp_path)
    (tmp_path / "veter.toml").unlink()
    with pytest.raises(SettingsError, match="env ORDERS_TIMEOUT: expected a number, got 'soon'"):
        load_settings(AppSettings, env_prefix="ORDERS_", environ={"ORDERS_TIMEOUT": "soon"}, cwd=tmp_path)


def test_veter_config_prints_values_and_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "veter.toml").write_text("port = 9000\n")
    (tmp_path / "svc.py").write_text(
        "import veter\n"
        "from dataclasses import dataclass\n"
        "from veter.settings import load_settings\n"
        "@dataclass(frozen=True)\n"
        "class S:\n    greeting: str = 'hi'\n"
        "settings = load_settings(S, env_prefix='SVC_')\n"
        "app = veter.App(backlog=64)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("VETER_KEEPALIVE_TIMEOUT", "9")
    monkeypatch.setenv("SVC_GREETING", "hello")
    result = CliRunner().invoke(main, ["config", "svc:app"])
    assert result.exit_code == 0, result.output
    lines = {line.split("=")[0].strip(): line for line in result.output.splitlines() if "=" in line}
    assert lines["port"].endswith("# veter.toml") and "9000" in lines["port"]
    assert lines["keepalive_timeout"].endswith("# env VETER_KEEPALIVE_TIMEOUT")
    assert lines["backlog"].endswith("# App(...)") and "64" in lines["backlog"]
    assert lines["host"].endswith("# default")
    assert lines["greeting"].endswith("# env SVC_GREETING") and "'hello'" in lines["greeting"]


def test_list_settings_from_the_file_the_environment_and_flags(tmp_path: Path) -> None:
    (tmp_path / "veter.toml").write_text('bind = ["127.0.0.1:8000", "[::1]:8000", "unix:/run/a.sock"]\n')
    values, sources = layered(tmp_path, {})
    assert values == {"bind": ("127.0.0.1:8000", "[::1]:8000", "unix:/run/a.sock")}
    assert sources == {"bind": "veter.toml"}
    values, sources = layered(tmp_path, {"VETER_BIND": " 0.0.0.0:80 , fd://3 "})
    assert values == {"bind": ("0.0.0.0:80", "fd://3")}
    assert sources == {"bind": "env VETER_BIND"}
    values, _ = layered(tmp_path, {}, {"bind": ("unix:/tmp/b.sock",)})
    assert values == {"bind": ("unix:/tmp/b.sock",)}
    (tmp_path / "veter.toml").write_text('bind = "127.0.0.1:8000"\n')
    with pytest.raises(SettingsError, match=r"veter\.toml.*bind.*expected a list"):
        layered(tmp_path, {})
    (tmp_path / "veter.toml").write_text("bind = [8000]\n")
    with pytest.raises(SettingsError, match=r"bind\[0\].*expected a string"):
        layered(tmp_path, {})
