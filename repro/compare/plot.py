"""Plots of a Comparison (matplotlib, Agg; imported only when a plot is asked for), PNG or SVG.

Throughput, per series (a model and every varying setting but the worker and host counts): images/sec
bars per worker count, the two stacks side by side (named in the legend), error bars from each side's
interval, a value label over each bar and the ratio NEW/OLD under each worker count; next to them the
speedup of each side against the ideal line. All-reduce: latency and bus bandwidth per message size,
both stacks and both paths. Time to accuracy: the time of each side per point, labelled.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from repro.compare.align import format_value
from repro.compare.core import Comparison, SideInfo
from repro.compare.kind import KINDS, Panel
from repro.compare.render import PATH_LABEL, column_label, display_columns, setting_words
from repro.errors import ResultsError
from repro.results.plots import (
    Bars,
    Line,
    check_target,
    color,
    draw_bars,
    draw_speedup,
    figure,
    finish,
    legend_entries,
    log_if_wide,
    save,
)
from repro.results.stats import CONDITIONS

MARK = {"faster": " ▲", "slower": " ▼", CONDITIONS: " ≠"}  # ≠: no verdict, the sides ran under other conditions


def ratio_label(ratio: Any) -> str:
    """A ratio under its bars: '1.08x ▲' and, where there is one, its interval '[1.03, 1.13]' on the next line."""
    if ratio.ratio is None:
        return ""
    text = f"\n{ratio.ratio:.2f}x{MARK.get(ratio.verdict, '')}"
    return text + (f"\n[{ratio.low:.2f}, {ratio.high:.2f}]" if ratio.low is not None and ratio.high is not None
                   else "")


def side_label(side: SideInfo, other: SideInfo) -> str:
    """The stack names of one side; with the hash where both sides carry the same names, and the side where
    they carry the same stacks (a stack compared with itself)."""
    names = ", ".join(side.stacks) or side.label
    if names != ", ".join(other.stacks):
        return names
    if side.stack_hashes != other.stack_hashes:
        return f"{names} ({', '.join(h[:7] for h in side.stack_hashes)})"
    return f"{names} ({side.label})"


def _series(c: Comparison, compared: Sequence[Any], unit: str = "images/sec") -> tuple[str, dict[str, list[Any]]]:
    """(the settings every series shares, {a series' own settings: its rows})."""
    cols = [k for k in display_columns(c, compared) if k not in ("workers", "hosts")]  # x axis: workers (hosts)
    out: dict[str, list[Any]] = defaultdict(list)
    for row in compared:
        values = dict(row.key)
        out[" · ".join(f"{column_label(k)} {format_value(values.get(k))}" for k in cols) or unit].append(row)
    first = dict(compared[0].key) if compared else {}
    workload = first.get("workload")
    shared = " · ".join(setting_words(k, v, workload=workload) for k, v in first.items() if k not in cols and k not in
                        ("workers", "hosts") and v is not None)
    return shared, out


def _hosts(n: int | None) -> str:
    return "? hosts" if n is None else f"{n} host{'s' if n > 1 else ''}"  # ?: unknown (imported log)


def _throughput_row(row: Any, title: str, rows: list[Any], labels: tuple[str, str], unit: str = "images/sec") -> None:
    rows = sorted(rows, key=lambda r: (r.settings.workers, r.settings.hosts or 0))
    several_hosts = len({r.settings.hosts for r in rows}) > 1
    groups = [(f"{r.settings.workers} ({_hosts(r.settings.hosts)})" if several_hosts else str(r.settings.workers))
              + ratio_label(r.ratio)
              for r in rows]
    sides = [Bars(label, [getattr(r, side).images_per_sec for r in rows], [getattr(r, side).low for r in rows],
                  [getattr(r, side).high for r in rows], i) for i, (side, label) in enumerate(zip(("old", "new"),
                                                                                                 labels, strict=True))]
    draw_bars(row.bars, groups, sides, ylabel=unit, xlabel="workers (under each: NEW/OLD, ▲ faster, "
              "▼ slower, ≠ conditions differed: no verdict; and its interval over runs)")
    row.bars.set_title(title, fontsize=10)
    if row.speedup is not None:
        lines = [Line(label, [r.settings.workers for r in rows if getattr(r, side).efficiency is not None],
                      [getattr(r, side).efficiency * r.settings.workers for r in rows
                       if getattr(r, side).efficiency is not None], i)
                 for i, (side, label) in enumerate(zip(("old", "new"), labels, strict=True))]
        draw_speedup(row.speedup, lines)


def throughput_panels(c: Comparison, compared: Sequence[Any], unit: str = "images/sec") -> tuple[Panel, ...]:
    """The throughput kind's rows of the figure: one per series, with a speedup plot where it has two points (the
    lm kind draws its tokens/sec with them: `unit`)."""
    shared, series = _series(c, compared, unit)
    wording = f"error bars: each side's {c.options.confidence:.0%} interval"

    def panel(title: str, rows: list[Any]) -> Panel:
        speedup = sum(r.old.efficiency is not None or r.new.efficiency is not None for r in rows) > 1
        return Panel(lambda row, labels: _throughput_row(row, title, rows, labels, unit), speedup=speedup,
                     title=shared, note=wording)

    return tuple(panel(title, rows) for title, rows in series.items())


def allreduce_row(row: Any, compared: Sequence[Any], labels: tuple[str, str]) -> None:
    """The allreduce kind's row of the figure: latency and bus bandwidth per message size."""
    lat, bw = row.bars, row.speedup
    for i, (side, label) in enumerate(zip(("old", "new"), labels, strict=True)):
        for path, style in (("horovod", "-"), ("raw", "--")):
            pts = sorted((r.bytes, getattr(r, side)) for r in compared if r.path == path)
            if not pts:
                continue
            name = f"{label}: {PATH_LABEL.get(path, path)} ({pts[0][1].backend})" if path == "horovod" else \
                f"{label}: raw"
            lat.plot([p[0] for p in pts], [(p[1].time_s or 0) * 1e6 for p in pts], style, marker=".",
                     color=color(i), label=name)
            bw.plot([p[0] for p in pts], [(p[1].busbw or 0) / 1e9 for p in pts], style, marker=".",
                    color=color(i), label=name)
    lat.set(xscale="log", yscale=log_if_wide(lat), xlabel="message size (bytes)", ylabel="latency (us)",
            title="all-reduce time (geometric mean over runs)")
    bw.set(xscale="log", xlabel="message size (bytes)", ylabel="bus bandwidth (GB/s)", title="bus bandwidth")
    for ax in (lat, bw):
        ax.grid(True, which="both", alpha=0.3)


def tta_row(row: Any, compared: Sequence[Any], labels: tuple[str, str]) -> None:
    """The tta kind's row of the figure: each side's time to accuracy per point."""
    groups = []
    for r in compared:
        n = dict(r.key).get("workers")
        ratio = ratio_label(r.speedup)
        groups.append(f"{n} worker{'s' if n != 1 else ''}{ratio}")
    draw_bars(row.bars, groups, [Bars(labels[0], [r.old.time_to_accuracy_s for r in compared], color=0),
                                 Bars(labels[1], [r.new.time_to_accuracy_s for r in compared], color=1)],
              ylabel="time to accuracy (s)", xlabel="(under each: OLD time / NEW time and its interval over runs)")
    row.bars.set_title("time to accuracy (mean over the runs that reached the target)", fontsize=10)


def comparison_figure(c: Comparison) -> Any:
    """The figure of a comparison (matplotlib Figure; the caller saves or inspects it)."""
    panels = [p for name, part in c.sections.items() if part.rows for p in KINDS.get(name).panels(c, part)]
    if not panels:
        raise ResultsError("nothing to plot: no point was measured on both sides")
    fig, rows = figure(len(panels), [p.speedup for p in panels])
    labels = (side_label(c.old, c.new), side_label(c.new, c.old))
    for panel, row in zip(panels, rows, strict=True):
        panel.draw(row, labels)
    headline = c.changes.headline()
    shared = next((p.title for p in panels if p.title), "")
    title = f"OLD {labels[0]} vs NEW {labels[1]}" + (f" · {shared}" if shared else "")
    wording = "; ".join(dict.fromkeys(p.note for p in panels if p.note))
    finish(fig, "\n".join(x for x in (title, headline, wording) if x), *legend_entries(fig))
    return fig


def plot(c: Comparison, path: str | Path) -> Path:
    """Write the comparison's plot to a .png or .svg file; returns its path."""
    target = check_target(path)
    return save(comparison_figure(c), target)
