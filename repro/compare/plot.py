"""Plots of a Comparison (matplotlib, Agg backend, imported only when a plot is asked for).

Throughput: per series (a model and every varying setting but the worker count), grouped bars of
images/sec per worker count for OLD and NEW with the ratio NEW/OLD over each pair, and the scaling
efficiency of each side as lines on a second axis. All-reduce: bus bandwidth per message size.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from repro.compare.align import format_value
from repro.compare.core import Comparison
from repro.compare.render import column_label, display_columns
from repro.errors import InputError, ResultsError
from repro.extras import need

SUFFIXES = (".png", ".svg")
OLD_COLOR, NEW_COLOR = "#7f7f7f", "#1f77b4"
LEGEND = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.45), "ncol": 4, "fontsize": 7, "frameon": False}


def _series(c: Comparison) -> dict[str, list[Any]]:
    cols = [k for k in display_columns(c) if k not in ("workers", "hosts")]  # the x axis: workers (hosts)
    out: dict[str, list[Any]] = defaultdict(list)
    for row in c.throughput:
        values = dict(row.key)
        title = ", ".join(f"{column_label(k)} {format_value(values.get(k))}" if k != "model" else
                          format_value(values.get(k)) for k in cols)
        out[title or "throughput"].append(row)
    return out


def _hosts(n: int | None) -> str:
    return "? hosts" if n is None else f"{n} host{'s' if n > 1 else ''}"  # ?: unknown (imported log)


def _throughput_axes(ax: Any, title: str, rows: list[Any]) -> None:
    rows = sorted(rows, key=lambda r: (r.settings.workers, r.settings.hosts or 0))
    xs = list(range(len(rows)))
    width = 0.38
    old = [r.old.images_per_sec or 0 for r in rows]
    new = [r.new.images_per_sec or 0 for r in rows]
    ax.bar([x - width / 2 for x in xs], old, width, label="OLD", color=OLD_COLOR)
    ax.bar([x + width / 2 for x in xs], new, width, label="NEW", color=NEW_COLOR)
    top = max([*old, *new, 1.0])
    for x, r, a, b in zip(xs, rows, old, new, strict=True):
        if r.ratio.ratio is not None:
            mark = {"faster": "▲", "slower": "▼"}.get(r.ratio.verdict, "")
            ax.annotate(f"{r.ratio.ratio:.2f}x{mark}", (x, max(a, b) + top * 0.02), ha="center", fontsize=8)
    several_hosts = len({r.settings.hosts for r in rows}) > 1
    ax.set_xticks(xs, [f"{r.settings.workers}\n({_hosts(r.settings.hosts)})" if several_hosts
                       else str(r.settings.workers) for r in rows])
    ax.set_xlabel("workers")
    ax.set_ylabel("images/sec")
    ax.set_ylim(0, top * 1.18)
    ax.set_title(title, fontsize=10)
    eff_old = [(x, r.old.efficiency) for x, r in zip(xs, rows, strict=True) if r.old.efficiency is not None]
    eff_new = [(x, r.new.efficiency) for x, r in zip(xs, rows, strict=True) if r.new.efficiency is not None]
    if eff_old or eff_new:
        twin = ax.twinx()
        for pts, color, label in ((eff_old, OLD_COLOR, "efficiency OLD"), (eff_new, NEW_COLOR, "efficiency NEW")):
            if pts:
                twin.plot([p[0] for p in pts], [p[1] * 100 for p in pts], marker="o", color=color, label=label,
                          linestyle="--")
        twin.set_ylabel("scaling efficiency (%)")
        peak = max([p[1] * 100 for p in (*eff_old, *eff_new)] + [100.0])
        twin.set_ylim(0, peak * 1.2)
        lines, labels = ax.get_legend_handles_labels()
        lines2, labels2 = twin.get_legend_handles_labels()
        ax.legend(lines + lines2, labels + labels2, **LEGEND)
    else:
        ax.legend(**LEGEND)


def _allreduce_axes(ax: Any, c: Comparison) -> None:
    by_side: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for r in c.allreduce:
        if r.old.busbw_median:
            by_side[f"OLD {r.old.backend} {r.dtype}"].append((r.bytes, r.old.busbw_median / 1e9))
        if r.new.busbw_median:
            by_side[f"NEW {r.new.backend} {r.dtype}"].append((r.bytes, r.new.busbw_median / 1e9))
    for label, pts in sorted(by_side.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=label,
                color=OLD_COLOR if label.startswith("OLD") else NEW_COLOR,
                linestyle="--" if label.startswith("OLD") else "-")
    ax.set_xscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title("all-reduce", fontsize=10)
    ax.legend(fontsize=7)


def _tta_axes(ax: Any, c: Comparison) -> None:
    xs = list(range(len(c.tta)))
    ax.bar([x - 0.19 for x in xs], [r.old.time_to_accuracy_s or 0 for r in c.tta], 0.38, label="OLD",
           color=OLD_COLOR)
    ax.bar([x + 0.19 for x in xs], [r.new.time_to_accuracy_s or 0 for r in c.tta], 0.38, label="NEW",
           color=NEW_COLOR)
    ax.set_xticks(xs, [f"{dict(r.key).get('workers')} workers" for r in c.tta])
    ax.set_ylabel("time to accuracy (s)")
    ax.set_title("time to accuracy", fontsize=10)
    ax.legend(fontsize=7)


def plot(c: Comparison, path: str | Path) -> Path:
    """Write the comparison's plot to a .png or .svg file; returns its path."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise InputError(f"--plot {path}: expected a file name ending in .png or .svg")
    series = _series(c)
    panels = len(series) + (1 if c.allreduce else 0) + (1 if c.tta else 0)
    if not panels:
        raise ResultsError("nothing to plot: no point was measured on both sides")
    matplotlib = need("matplotlib", "plot", "--plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(panels, 1, figsize=(8, 3.6 * panels), squeeze=False)
    flat = [a[0] for a in axes]
    i = 0
    for title, rows in series.items():
        _throughput_axes(flat[i], title, rows)
        i += 1
    if c.allreduce:
        _allreduce_axes(flat[i], c)
        i += 1
    if c.tta:
        _tta_axes(flat[i], c)
    old, new = ", ".join(c.old.stacks), ", ".join(c.new.stacks)
    headline = c.changes.headline()
    fig.suptitle(f"OLD {old} vs NEW {new}" + (f"\n{headline}" if headline else ""), fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=path.suffix.lower().lstrip("."))
    plt.close(fig)
    return path
