"""`veter new`: the project generator, down to installing a project and running its tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from veter.cli import main
from veter.scaffold import Options, ProjectError, create_project, render

EVERYTHING = Options(postgres=True, redis=True)


def test_render_keeps_blocks_of_enabled_options_only() -> None:
    text = "a\n#if postgres\nb {{name}}\n#endif\n#if redis\nc\n#endif\n#if postgres,redis\nd\n#endif\n"
    assert render(text, {"name": "x"}, Options(postgres=True)) == "a\nb x\nd\n"
    assert render(text, {"name": "x"}, Options()) == "a\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#if mongo\nx\n#endif\n", "unknown template condition"),
        ("x\n#endif\n", "#endif without #if"),
        ("#if redis\nx\n", "#if without #endif"),
        ("{{nope}}\n", "unfilled"),
    ],
)
def test_render_rejects_broken_templates(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        render(text, {}, Options())


def test_the_project_has_everything_the_quick_start_needs(tmp_path: Path) -> None:
    root = create_project("orders-api", tmp_path, EVERYTHING)
    files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert files == {
        ".gitignore",
        "Dockerfile",
        "Makefile",
        "README.md",
        "k8s/deployment.yaml",
        "pyproject.toml",
        "src/orders_api/__init__.py",
        "src/orders_api/app.py",
        "src/orders_api/settings.py",
        "tests/test_app.py",
    }
    manifest = (root / "k8s/deployment.yaml").read_text()
    assert "path: /healthz" in manifest and "path: /readyz" in manifest
    assert "ORDERS_API_DATABASE_URL" in manifest
    assert "make run" in (root / "README.md").read_text()
    app = (root / "src/orders_api/app.py").read_text()
    assert "PostgresPool" in app and "RedisPool" in app


def test_options_leave_out_what_was_not_asked_for(tmp_path: Path) -> None:
    root = create_project("plain", tmp_path)
    text = "".join(p.read_text() for p in root.rglob("*") if p.is_file())
    assert "Pool" not in text and "DATABASE_URL" not in text and "#if" not in text


@pytest.mark.parametrize("name", ["Orders", "1api", "a b", "x--y", "class", "veter", ""])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ProjectError):
        create_project(name, tmp_path)


def test_an_existing_folder_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "keep.txt").write_text("mine")
    result = CliRunner().invoke(main, ["new", "svc", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "already exists" in result.output
    assert (tmp_path / "svc" / "keep.txt").read_text() == "mine"


def test_a_generated_project_installs_and_its_tests_pass(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["new", "orders-api", "--postgres", "--redis", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "orders-api"
    site = tmp_path / "site"
    # Install it (a real build through its pyproject.toml), then run its tests against
    # the installed copy, not its source folder.
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(root)],
        check=True,
        timeout=300,
    )
    assert (site / "orders_api" / "app.py").exists()
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:warnings"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "9 passed" in done.stdout, done.stdout


@pytest.mark.parametrize("options", ["everything", "plain"])
def test_the_manifest_is_valid_kubernetes(tmp_path: Path, options: str) -> None:
    """Checked against the schema of a current Kubernetes release, strictly (an
    unknown or misspelt field fails), and for graceful shutdown: the grace period
    outlasts the drain delay plus the graceful timeout."""
    root = create_project("orders-api", tmp_path, EVERYTHING if options == "everything" else Options())
    version = kubernetes_validate.latest_version()
    assert tuple(int(p) for p in version.split(".")[:2]) >= (1, 37)
    documents = [d for d in yaml.safe_load_all((root / "k8s/deployment.yaml").read_text()) if d]
    assert {d["kind"] for d in documents} == {"Deployment", "Service"}
    for document in documents:
        kubernetes_validate.validate(document, version, strict=True)
    (deployment,) = (d for d in documents if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    drain_delay = float(env["VETER_DRAIN_DELAY"])
    command = (root / "Dockerfile").read_text().split("CMD", 1)[1]
    graceful = float(command.split('"--graceful-timeout", "', 1)[1].split('"', 1)[0])
    assert drain_delay > 0
    assert pod["terminationGracePeriodSeconds"] > drain_delay + graceful
    broken = {**deployment, "spec": {**deployment["spec"], "replicaz": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)
