"""The shape of the code: dependencies that only point one way, and files small
enough to read (issue 13).

Python (python/veter/): no import cycle among its modules, counting imports made
inside functions too (only ``if TYPE_CHECKING:`` imports are left out, as they
never run), and no module over ``MAX_LINES``.

Rust (src/): the same rules, as a ratchet while the connection core is split: the
cycles and long files that are left are listed here, a new one fails, and one that
is gone must be taken off the list.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "veter"
SRC = ROOT / "src"
MAX_LINES = 600

#: Rust modules (top level of src/) that still depend on each other in a ring.
RUST_CYCLES_LEFT: set[frozenset[str]] = set()
#: Rust files still over MAX_LINES.
RUST_LONG_FILES_LEFT: set[str] = set()
#: What the connection core (src/conn/, no Python in it) may use of the crate.
CORE_USES = {"http1", "timeouts"}


def cycles(graph: Mapping[str, Iterable[str]]) -> set[frozenset[str]]:
    """The strongly connected groups of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                found.add(frozenset(group))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def python_modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement loads: ``from p import m`` loads the
    module ``p.m`` when there is one, else takes a name from ``p``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    return [f"{base}.{alias.name}" for alias in node.names]


def python_graph() -> dict[str, set[str]]:
    modules = python_modules()
    known = set(modules) | {"veter._core"}  # the extension module: a leaf
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in runtime_imports(ast.parse(path.read_text()).body):
            for target in imported(node, name, path.name == "__init__.py"):
                # "from veter import App" needs veter/__init__, "from veter import
                # _core" only the module (the package is loaded already).
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target.startswith("veter") and target != name:
                    deps.add(target)
        graph[name] = deps
    return graph


def runtime_imports(body: list[ast.stmt]) -> Iterable[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from runtime_imports(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from runtime_imports([child])
            elif isinstance(child, ast.ExceptHandler):
                yield from runtime_imports(child.body)


def rust_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.rs"):
        module = path.relative_to(SRC).with_suffix("").parts[0]
        used = set(re.findall(r"\bcrate::(\w+)", path.read_text()))
        graph.setdefault(module, set()).update(used - {module})
    return graph


def long_files(root: Path, pattern: str) -> set[str]:
    return {
        str(path.relative_to(root))
        for path in root.rglob(pattern)
        if len(path.read_text().splitlines()) > MAX_LINES
    }


def test_python_modules_import_without_cycles() -> None:
    assert cycles(python_graph()) == set()


def test_python_modules_are_short() -> None:
    assert long_files(PACKAGE, "*.py") == set()


def test_rust_module_cycles_only_shrink() -> None:
    found = cycles(rust_graph())
    new = {c for c in found if not any(c <= left for left in RUST_CYCLES_LEFT)}
    assert not new, f"new dependency cycles in src/: {sorted(map(sorted, new))}"
    changed = RUST_CYCLES_LEFT - found
    assert not changed, f"cycles gone or smaller, update RUST_CYCLES_LEFT: {sorted(map(sorted, changed))}"


def test_rust_files_over_the_limit_only_shrink() -> None:
    found = long_files(SRC, "*.rs")
    assert found <= RUST_LONG_FILES_LEFT, (
        f"new files over {MAX_LINES} lines: {sorted(found - RUST_LONG_FILES_LEFT)}"
    )
    gone = RUST_LONG_FILES_LEFT - found
    assert not gone, f"now under {MAX_LINES} lines, take them off RUST_LONG_FILES_LEFT: {sorted(gone)}"


def test_the_connection_core_has_no_python() -> None:
    """src/conn/ is the sans-IO state machine: tested and fuzzed without Python, so it
    may not use PyO3 or any module that does."""
    for path in (SRC / "conn").rglob("*.rs"):
        text = path.read_text()
        assert "pyo3" not in text, f"{path.relative_to(ROOT)} uses PyO3"
        used = set(re.findall(r"\bcrate::(\w+)", text)) - {"conn"}
        assert used <= CORE_USES, f"{path.relative_to(ROOT)} uses {sorted(used - CORE_USES)}"


def test_the_checks_see_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {frozenset("abc")}
    assert cycles({"a": {"b"}, "b": set()}) == set()
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from veter.app import App\n"
        "def f():\n    from veter.server import run\n"
    )
    names = [n for node in runtime_imports(tree.body) for n in imported(node, "veter.x", False)]
    assert "veter.server.run" in names
    assert "veter.app.App" not in names
