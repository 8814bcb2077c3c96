"""Drawing blocks for report-ready figures (matplotlib with the Agg backend, imported only when drawing).

    target = check_target(args.plot)            # before any work: extension, writable directory
    fig, rows = figure(n_rows, speedup=[True, False])
    draw_bars(rows[0].bars, ["1", "2", "4"], [Bars("tf114", [..], lows, highs)], ylabel="images/sec")
    draw_speedup(rows[0].speedup, [Line("tf114", [1, 2, 4], [1.0, 1.9, 3.7])])
    finish(fig, title, handles); save(fig, target)

Bars of several series sit side by side per group with error bars from the intervals and a value label
over each bar; labels that would overlap are turned upright, then made smaller (`declutter`). The
speedup panel draws the ideal (linear) line. Colours are the Okabe-Ito palette (safe for colour-blind
readers); the first series is grey-blue, the second orange, as a reader of "old vs new" expects.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.errors import InputError
from repro.extras import need

SUFFIXES = (".png", ".svg")
PALETTE = ("#56B4E9", "#E69F00", "#009E73", "#CC79A7", "#0072B2", "#D55E00", "#F0E442", "#000000")
IDEAL_COLOR = "#777777"
VALUE_LABEL = "value-label"  # gid of every value label (tests and declutter find them by it)
POINT_LABEL = "point-label"  # gid of the labels of points on lines (never turned: hidden when they overlap)
REFERENCE = "reference"  # gid of reference lines (ideal speedup, link speed, target): last in the legend
ROW_HEIGHT, WIDTH, DPI = 3.9, 11.0, 150


def check_target(path: str | Path, flag: str = "--plot") -> Path:
    """The plot file, checked before any work: a .png or .svg name in a directory that is (or can be) written, and
    matplotlib installed (the `plot` extra)."""
    p = Path(path).expanduser()
    if p.suffix.lower() not in SUFFIXES:
        raise InputError(f"{flag} {path}: expected a file name ending in .png or .svg")
    if p.is_dir():
        raise InputError(f"{flag} {path}: is a directory; give a file name ending in .png or .svg")
    parent = p.parent if str(p.parent) else Path(".")
    existing = next((d for d in (parent, *parent.parents) if d.exists()), Path("."))
    if not existing.is_dir():
        raise InputError(f"{flag} {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path}: the directory {existing} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"{flag} {path}: the file exists and is not writable")
    need("matplotlib", "plot", flag)
    return p


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    matplotlib = need("matplotlib", "plot", "--plot")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@dataclass(frozen=True)
class Bars:
    """One series of bars: a label (a stack), a value per group and its interval (None where there is none), and
    its colour's index (the same stack has the same colour in every panel)."""

    label: str
    values: Sequence[float | None]
    lows: Sequence[float | None] = ()
    highs: Sequence[float | None] = ()
    color: int = 0


@dataclass(frozen=True)
class Line:
    """One series of points: a label, x and y values, its colour's index."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float | None]
    color: int = 0


@dataclass(frozen=True)
class Row:
    """The axes of one row of a figure: bars, and the speedup panel where the row has one."""

    bars: Any
    speedup: Any | None


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def figure(rows: int, speedup: Sequence[bool] = (), *, height: float = ROW_HEIGHT) -> tuple[Any, list[Row]]:
    """A figure of `rows` rows; a row with speedup has a bars panel (3/5) and a speedup panel (2/5), a row without
    gives the whole width to its bars (no empty panel)."""
    plt = pyplot()
    fig = plt.figure(figsize=(WIDTH, height * rows + 0.9), layout="constrained")
    grid = fig.add_gridspec(rows, 5)
    out = []
    for i in range(rows):
        has = speedup[i] if i < len(speedup) else False
        bars = fig.add_subplot(grid[i, 0:3] if has else grid[i, :])
        out.append(Row(bars, fig.add_subplot(grid[i, 3:5]) if has else None))
    return fig, out


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _errors(s: Bars) -> tuple[list[float], list[float]] | None:
    """Asymmetric error bar lengths from the intervals (0 where a value has none); None when none has one."""
    if not any(_finite(lo) for lo in s.lows):
        return None
    below, above = [], []
    for i, v in enumerate(s.values):
        lo = s.lows[i] if i < len(s.lows) else None
        hi = s.highs[i] if i < len(s.highs) else None
        ok = _finite(v) and _finite(lo) and _finite(hi)
        below.append(max(0.0, v - lo) if ok else 0.0)  # type: ignore[operator]
        above.append(max(0.0, hi - v) if ok else 0.0)  # type: ignore[operator]
    return below, above


def value_text(value: float, digits: int | None = None) -> str:
    """A value label: no decimals from 100 on, one below 100, two below 10 (as the tables round)."""
    if digits is None:
        digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return f"{value:,.{digits}f}"


def draw_bars(ax: Any, groups: Sequence[str], series: Sequence[Bars], *, ylabel: str, xlabel: str = "",
              digits: int | None = None) -> None:
    """Bars of every series side by side per group, error bars from the intervals, a value label over each bar."""
    n = max(1, len(series))
    width = min(0.8 / n, 0.4)
    top = 0.0
    for i, s in enumerate(series):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        values = [v if _finite(v) else 0.0 for v in s.values]
        errors = _errors(s)
        ax.bar(xs, values, width * 0.92, label=s.label, color=color(s.color), edgecolor="white", linewidth=0.5,
               yerr=errors, capsize=3 if errors else 0, error_kw={"elinewidth": 1, "ecolor": "#333333"})
        for j, (x, v) in enumerate(zip(xs, s.values, strict=True)):
            if not _finite(v):
                continue
            over = v + (errors[1][j] if errors else 0.0)  # type: ignore[operator]
            top = max(top, over)
            ax.annotate(value_text(v, digits), (x, over), xytext=(0, 2), textcoords="offset points", ha="center",
                        va="bottom", fontsize=8, gid=VALUE_LABEL)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.set_ylim(0, (top or 1.0) * 1.18)
    ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def draw_speedup(ax: Any, lines: Sequence[Line], *, xlabel: str = "workers") -> None:
    """Speedup per worker count for every series, against the ideal (linear) line, each point labelled."""
    xs = sorted({x for line in lines for x in line.xs})
    if xs:
        ax.plot([min(1, xs[0]), xs[-1]], [min(1, xs[0]), xs[-1]], linestyle="--", color=IDEAL_COLOR,
                label="ideal (linear)", gid=REFERENCE)
    highest: dict[float, float] = {}
    placed: set[float] = set()
    for line in lines:
        for x, y in zip(line.xs, line.ys, strict=True):
            if _finite(y):
                highest[x] = max(highest.get(x, y), y)  # type: ignore[type-var]
    for line in lines:
        pts = [(x, y) for x, y in zip(line.xs, line.ys, strict=True) if _finite(y)]
        if not pts:
            continue
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=color(line.color), label=line.label)
        for x, y in pts:  # the highest value's label above its point (the first of equals), the others' below
            above = y == highest[x] and x not in placed
            placed.update([x] if above else [])
            ax.annotate(f"{y:.2f}x", (x, y), xytext=(0, 7 if above else -8), textcoords="offset points",
                        ha="center", va="bottom" if above else "top", fontsize=8, color=color(line.color),
                        gid=POINT_LABEL, bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(int(x)) if float(x).is_integer() else str(x) for x in xs])
    if xs:
        ax.set_xlim(min(1, xs[0]) / 1.3, xs[-1] * 1.3)  # room for the labels of the first and last points
    ax.minorticks_off()
    top = max([*(y for line in lines for y in line.ys if _finite(y)), *xs, 1.0])
    ax.set_ylim(0, top * 1.15)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("speedup (x)")
    ax.set_title("speedup against the ideal (linear) line", fontsize=10)
    ax.grid(alpha=0.3)


LABELS = (VALUE_LABEL, POINT_LABEL)


def value_labels(fig: Any) -> list[Any]:
    """Every label of a value (over a bar, or by a point) in the figure."""
    return [t for ax in fig.axes for t in ax.texts if t.get_gid() in LABELS]


def overlapping(fig: Any) -> list[tuple[Any, Any]]:
    """Pairs of visible value labels whose boxes overlap (after a draw), within each axes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        texts = [t for t in ax.texts if t.get_gid() in LABELS and t.get_visible()]
        boxes = [t.get_window_extent(renderer) for t in texts]
        out += [(texts[i], texts[j]) for i in range(len(texts)) for j in range(i + 1, len(texts))
                if boxes[i].overlaps(boxes[j])]
    return out


def declutter(fig: Any) -> None:
    """No label collisions: bar labels that overlap are turned upright, then made smaller; after that the later
    of two overlapping labels is hidden (its value is in the table)."""
    for change in ({"rotation": 90}, {"fontsize": 6}):
        crowded = {t.axes for pair in overlapping(fig) for t in pair if t.get_gid() == VALUE_LABEL}
        if not crowded:
            break
        for ax in crowded:
            for t in ax.texts:
                if t.get_gid() == VALUE_LABEL:
                    t.set(**change)
            low, high = ax.get_ylim()
            ax.set_ylim(low, high * 1.12)  # room for upright labels
    for _, later in overlapping(fig):
        later.set_visible(False)


def log_if_wide(ax: Any) -> str:
    """'log' when the axes' lines span more than a decade of y, else 'linear' (log ticks of a narrow range are
    unreadable)."""
    ys = [y for line in ax.get_lines() for y in line.get_ydata() if _finite(y) and y > 0]
    return "log" if ys and max(ys) > 10 * min(ys) else "linear"


def finish(fig: Any, title: str, handles: Sequence[Any] = (), labels: Sequence[str] = ()) -> None:
    """One legend for the whole figure (the series are the same in every panel), under the panels; the title,
    its lines wrapped to the figure's width."""
    import textwrap

    if handles:
        fit_legend(fig, handles, labels)
    width = int(fig.get_figwidth() * 11)  # characters of 11 pt text across the figure
    fig.suptitle("\n".join(textwrap.fill(line, width) for line in title.splitlines()), fontsize=11)
    declutter(fig)


def fit_legend(fig: Any, handles: Sequence[Any], labels: Sequence[str]) -> Any:
    """The figure's legend under the panels, in as many columns (at most 4) as fit across the figure, each label
    wrapped to its column: a legend wider than the figure is clipped when it is saved."""
    import textwrap

    legend = None
    for ncol in range(min(len(labels), 4), 0, -1):
        chars = max(12, int(fig.get_figwidth() * 12 / ncol) - 6)  # characters of 9 pt text in one column
        wrapped = ["\n".join(textwrap.wrap(label, chars)) or label for label in labels]
        if legend is not None:
            legend.remove()
        legend = fig.legend(handles, wrapped, loc="outside lower center", ncol=ncol, frameon=False, fontsize=9)
        renderer = fig.canvas.get_renderer()
        if legend.get_window_extent(renderer).width <= fig.bbox.width:
            break
    return legend


def legend_entries(fig: Any) -> tuple[list[Any], list[str]]:
    """Every distinct labelled artist of the figure's axes, series first, then reference lines (one legend names
    each once)."""
    seen: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    order = sorted(seen, key=lambda label: getattr(seen[label], "get_gid", lambda: None)() == REFERENCE)
    return [seen[label] for label in order], order


def save(fig: Any, path: str | Path) -> Path:
    """Write the figure as PNG or SVG (by the file name) and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=path.suffix.lower().lstrip("."), dpi=DPI)
    pyplot().close(fig)
    return path
