"""``veter profile``: sample every worker of a running master with py-spy and draw
one flame graph of all of them.

py-spy reads a process's Python stacks from outside (ptrace), so the workers are not
slowed down or restarted. Each worker is recorded at once, in parallel, as collapsed
stacks (``frame;frame;frame count``); identical stacks from different workers add up,
and the total is drawn as an SVG flame graph: the root at the bottom, each frame as
wide as the share of samples it was on the stack for.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

__all__ = ["ProfileError", "Recording", "children_of", "record", "render_svg"]


class ProfileError(RuntimeError):
    """Profiling could not be done (no py-spy, no such process, nothing recorded)."""


def children_of(pid: int) -> list[int]:
    """The direct children of ``pid`` (a master's workers), from /proc."""
    if not Path(f"/proc/{pid}").exists():
        raise ProfileError(f"no process {pid}")
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields follow the last ')'.
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
            found.append(int(entry))
    return sorted(found)


@dataclass
class Recording:
    """Collapsed stacks summed over the recorded processes, and what went wrong."""

    stacks: Counter[str] = field(default_factory=Counter)
    recorded: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)

    @property
    def samples(self) -> int:
        return sum(self.stacks.values())


def py_spy_path() -> str:
    """py-spy next to this interpreter, or on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.exists():
        return str(beside)
    found = shutil.which("py-spy")
    if found is None:
        raise ProfileError("py-spy is not installed: pip install 'veter[profile]'")
    return found


def record(pids: list[int], duration: float, rate: int = 100) -> Recording:
    """Samples ``pids`` for ``duration`` seconds, all at once."""
    if not pids:
        raise ProfileError("no process to record")
    if duration <= 0 or rate <= 0:
        raise ProfileError("duration and rate must be positive")
    spy = py_spy_path()
    result = Recording()
    with tempfile.TemporaryDirectory(prefix="veter-profile-") as scratch:
        running = []
        for pid in pids:
            out = Path(scratch) / f"{pid}.txt"
            argv = [spy, "record", "--pid", str(pid), "--duration", str(max(1, round(duration)))]
            argv += ["--rate", str(rate), "--format", "raw", "--nonblocking", "--output", str(out)]
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            running.append((pid, proc, out))
        for pid, proc, out in running:
            try:
                log, _ = proc.communicate(timeout=duration + 30)
            except subprocess.TimeoutExpired:
                proc.kill()
                log, _ = proc.communicate()
            if proc.returncode != 0 or not out.exists():
                lines = (log or "").strip().splitlines()
                result.failed[pid] = lines[-1] if lines else f"py-spy exited with {proc.returncode}"
                continue
            result.recorded.append(pid)
            for line in out.read_text().splitlines():
                stack, _, count = line.rpartition(" ")
                if stack and count.isdigit():
                    result.stacks[stack] += int(count)
    if not result.recorded:
        reasons = "; ".join(f"{pid}: {why}" for pid, why in result.failed.items())
        raise ProfileError(f"nothing recorded ({reasons})")
    return result


# -- the SVG -----------------------------------------------------------------------

WIDTH = 1200
ROW = 17
FONT = 11


@dataclass
class _Node:
    name: str
    count: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def _tree(stacks: Counter[str]) -> _Node:
    root = _Node("all")
    for stack, count in stacks.items():
        root.count += count
        node = root
        for frame in stack.split(";"):
            node = node.children.setdefault(frame, _Node(frame))
            node.count += count
    return root


def _depth(node: _Node) -> int:
    return 1 + max((_depth(c) for c in node.children.values()), default=0)


def _colour(name: str) -> str:
    digest = hashlib.blake2b(name.encode(), digest_size=3).digest()
    return f"rgb({205 + digest[0] % 50},{90 + digest[1] % 130},{digest[2] % 55})"


def render_svg(stacks: Counter[str], title: str) -> str:
    """A flame graph of ``stacks`` (collapsed: ``a;b;c`` -> samples), as SVG text."""
    root = _tree(stacks)
    if root.count == 0:
        raise ProfileError("no samples to draw")
    rows = _depth(root)
    height = (rows + 2) * ROW
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="monospace" font-size="{FONT}">',
        f'<text x="{WIDTH / 2}" y="{ROW}" text-anchor="middle" font-size="{FONT + 3}">{escape(title)}</text>',
    ]
    scale = WIDTH / root.count

    def draw(node: _Node, x: float, level: int) -> None:
        width = node.count * scale
        if width < 0.3:
            return
        y = height - (level + 1) * ROW
        share = 100.0 * node.count / root.count
        label = f"{node.name} ({node.count} samples, {share:.2f}%)"
        parts.append(f"<g><title>{escape(label)}</title>")
        parts.append(
            f'<rect x="{x:.2f}" y="{y}" width="{width:.2f}" height="{ROW - 1}" fill="{_colour(node.name)}"/>'
        )
        fits = int(width / (FONT * 0.6))
        if fits >= 3:
            text = node.name if len(node.name) <= fits else node.name[: fits - 2] + ".."
            parts.append(f'<text x="{x + 2:.2f}" y="{y + ROW - 5}">{escape(text)}</text>')
        parts.append("</g>")
        offset = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            draw(child, offset, level + 1)
            offset += child.count * scale

    draw(root, 0.0, 0)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
