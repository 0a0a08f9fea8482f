"""``veter new NAME``: a runnable service project in one command.

The project's files are the templates under ``templates/`` (each ``*.tmpl``), with
``{{name}}`` (the distribution name), ``{{package}}`` (its import name) and
``{{prefix}}`` (its settings' environment prefix) filled in; ``PACKAGE`` in a path
becomes the import name and a leading ``dot-`` a dot. Lines between
``#if postgres`` / ``#if redis`` (``#if postgres,redis``: either) and ``#endif`` are
kept only with that option.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["Options", "ProjectError", "create_project"]

_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
_BLOCK = re.compile(r"^\s*#if (\w+(?:,\w+)*)\s*$")
_END = re.compile(r"^\s*#endif\s*$")


class ProjectError(ValueError):
    """The project cannot be created as asked (bad name, existing folder)."""


@dataclass(frozen=True)
class Options:
    postgres: bool = False
    redis: bool = False

    def enabled(self, feature: str) -> bool:
        if feature not in ("postgres", "redis"):
            raise ValueError(f"unknown template condition {feature!r}")
        return bool(getattr(self, feature))


def create_project(name: str, parent: Path, options: Options | None = None) -> Path:
    """Writes the project ``name`` into ``parent/name`` and returns that folder."""
    options = options or Options()
    if not _NAME.fullmatch(name):
        raise ProjectError(
            f"project name {name!r}: use lowercase letters, digits, '-' or '_', starting with a letter"
        )
    package = name.replace("-", "_")
    if keyword.iskeyword(package) or package in ("veter", "test", "tests"):
        raise ProjectError(f"project name {name!r} would shadow a Python name; choose another")
    target = parent / name
    if target.exists():
        raise ProjectError(f"{target} already exists; choose another name or remove it")
    values = {"name": name, "package": package, "prefix": package.upper() + "_"}
    templates = resources.files(__package__).joinpath("templates")
    files: dict[Path, str] = {}
    for source, relative in _walk(templates, Path()):
        text = render(source.read_text(encoding="utf-8"), values, options)
        out = Path(str(relative).removesuffix(".tmpl").replace("PACKAGE", package))
        if out.name.startswith("dot-"):
            out = out.with_name("." + out.name.removeprefix("dot-"))
        files[out] = text
    target.mkdir(parents=True)
    for relative, text in sorted(files.items()):
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return target


def _walk(node: resources.abc.Traversable, relative: Path) -> list[tuple[resources.abc.Traversable, Path]]:
    found = []
    for child in node.iterdir():
        if child.is_dir():
            found += _walk(child, relative / child.name)
        elif child.name.endswith(".tmpl"):
            found.append((child, relative / child.name))
    return found


def render(text: str, values: dict[str, str], options: Options) -> str:
    """Fills ``{{key}}`` placeholders and keeps or drops ``#if`` blocks."""
    out: list[str] = []
    keep: list[bool] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if block := _BLOCK.match(line):
            keep.append(any(options.enabled(f) for f in block.group(1).split(",")))
            continue
        if _END.match(line):
            if not keep:
                raise ValueError(f"template line {number}: #endif without #if")
            keep.pop()
            continue
        if all(keep):
            out.append(line)
    if keep:
        raise ValueError("template: #if without #endif")
    rendered = "".join(out)
    for key, value in values.items():
        rendered = rendered.replace("{{" + key + "}}", value)
    if "{{" in rendered:
        raise ValueError(f"template placeholder left unfilled: {rendered[rendered.index('{{') :][:40]!r}")
    return rendered
