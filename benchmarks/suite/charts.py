"""PNG charts with matplotlib (Agg backend, no display needed)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from .report import Result, measured_servers, value

VETER_COLOUR = "#d62728"


def bars(result: Result, cells: list[str], metric: str, path: Path, xlabel: str, log: bool = False) -> None:
    """Horizontal grouped bars: one group per server (best first), one bar per cell."""
    servers = _best_first(result, cells[0], metric)
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.13 * len(servers) * max(1, len(cells))))
    _bar_panel(ax, result, servers, cells, metric, xlabel, log)
    ax.set_title(result["title"])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bar_panels(result: Result, cells: list[str], panels: list[tuple[str, str, bool]], path: Path) -> None:
    """`bars` side by side, one panel per (metric, xlabel, log), servers in the same order
    in every panel (best first by the first panel's metric on the first cell)."""
    servers = _best_first(result, cells[0], panels[0][0])
    height = 2.0 + 0.2 * len(servers) * max(1, len(cells))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), height), squeeze=False)
    for ax, (metric, xlabel, log) in zip(axes[0], panels, strict=True):
        _bar_panel(ax, result, servers, cells, metric, xlabel, log)
    fig.suptitle(result["title"])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _best_first(result: Result, cell: str, metric: str) -> list[str]:
    lower_is_better = metric.endswith("_ms")
    return sorted(
        measured_servers(result),
        key=lambda s: (value(result, s, cell, metric) or 0.0) * (1 if lower_is_better else -1),
    )


def _bar_panel(ax, result: Result, servers: list[str], cells: list[str], metric: str, xlabel: str, log: bool) -> None:
    height = 0.8 / max(1, len(cells))
    for i, cell in enumerate(cells):
        ys = [n + i * height for n in range(len(servers))]
        xs = [value(result, s, cell, metric) or 0.0 for s in servers]
        ax.barh(ys, xs, height=height, label=cell)
    ax.set_yticks([n + 0.4 - height / 2 for n in range(len(servers))], servers)
    for tick in ax.get_yticklabels():
        if tick.get_text() == "veter":
            tick.set_color(VETER_COLOUR)
            tick.set_fontweight("bold")
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")


def latency_curves(result: Result, path: Path) -> None:
    """p50 (dashed) and p99 (solid) against the offered rate, both axes log scale."""
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for server in measured_servers(result):
        rates, p50s, p99s = [], [], []
        for cell in result["cells"]:
            p99 = value(result, server, cell["key"], "p99_ms")
            if p99 is None:
                continue
            rates.append(cell["rate"])
            p50s.append(value(result, server, cell["key"], "p50_ms"))
            p99s.append(p99)
        if not rates:
            continue
        width = 2.5 if server == "veter" else 1.2
        (line,) = ax.plot(rates, p99s, marker="o", linewidth=width, label=f"{server} p99")
        ax.plot(rates, p50s, linestyle="--", color=line.get_color(), linewidth=width * 0.7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("offered rate, requests/s (open loop)")
    ax.set_ylabel("latency, ms (solid p99, dashed p50)")
    ax.axhline(1000, color="grey", linestyle=":", linewidth=1)
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize="small", ncol=2)
    ax.set_title(result["title"])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def heatmaps(result: Result, rows: list[int], cols: list[int], metric: str, path: Path) -> None:
    """One heat map per server: handler sleep (rows) x clients (columns). The colour is
    `metric` minus the handler's own sleep (the server's added delay), on one scale for
    all servers so they compare at a glance; the numbers printed are the same."""
    servers = measured_servers(result)
    grids: dict[str, list[list[float]]] = {}
    for server in servers:
        grid = []
        for sleep in rows:
            row = []
            for clients in cols:
                cell = next(
                    (c["key"] for c in result["cells"] if c.get("sleep") == sleep and c.get("clients") == clients),
                    None,
                )
                got = value(result, server, cell, metric) if cell else None
                row.append(got - sleep if got is not None else float("nan"))
            grid.append(row)
        grids[server] = grid
    top = max((v for g in grids.values() for r in g for v in r if v == v), default=1.0)
    fig, axes = plt.subplots(1, max(1, len(servers)), figsize=(4.2 * max(1, len(servers)), 4), squeeze=False)
    for ax, server in zip(axes[0], servers, strict=False):
        grid = grids[server]
        image = ax.imshow(grid, cmap="magma_r", aspect="auto", vmin=0, vmax=top)
        for y, row in enumerate(grid):
            for x, got in enumerate(row):
                known = got == got  # NaN marks a cell that was not measured
                colour = "white" if known and got > top * 0.6 else "black"
                ax.text(x, y, f"{got:.1f}" if known else "–", ha="center", va="center", fontsize=8, color=colour)
        ax.set_xticks(range(len(cols)), [str(c) for c in cols])
        ax.set_yticks(range(len(rows)), [f"{r} ms" for r in rows])
        ax.set_xlabel("concurrent clients")
        ax.set_ylabel("handler sleep")
        ax.set_title(f"{server}: {metric.replace('_ms', '')} minus sleep, ms")
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def grouped_panels(
    rows: list[str],
    columns: list[str],
    panels: list[tuple[dict[tuple[str, str], float | None], str]],
    path: Path,
    title: str,
) -> None:
    """Vertical grouped bars side by side, one panel per (values by (row, column), label):
    one group per column, one bar per row in the rows' order (missing values left out)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.5), squeeze=False)
    width = 0.8 / max(1, len(rows))
    for ax, (values, label) in zip(axes[0], panels, strict=True):
        for i, row in enumerate(rows):
            xs = [n + i * width for n in range(len(columns))]
            ax.bar(xs, [values.get((row, c)) or 0.0 for c in columns], width=width, label=row)
        ax.set_xticks([n + 0.4 - width / 2 for n in range(len(columns))], columns)
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
