"""The throughput kind's end-of-sweep figure (`repro results scaling --plot`, `repro bench --plot`): per series
(model and every setting but the worker and host counts), images/sec bars per worker count with the stacks side
by side, value labels and error bars from the intervals, and the speedup against the ideal line (the
whitepaper's figures, seed 003)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from repro.compare.kinds.throughput.sweep import setting_text
from repro.errors import ResultsError
from repro.results.metrics import ScalingRow
from repro.results.plots import (
    Bars,
    Line,
    figure,
    finish,
    legend_entries,
    save,
)

SERIES_KEYS = ("workload", "model", "batch", "precision", "xla", "data", "threads")


def stack_labels(rows: Sequence[ScalingRow]) -> dict[str, str]:
    """hash -> the stack's name, with its hash where two stacks share a name."""
    names: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        names[r.point.stack].add(r.point.stack_hash)
    return {r.point.stack_hash: r.point.stack + (f" ({r.point.stack_hash[:7]})" if len(names[r.point.stack]) > 1
                                                  else "") for r in rows}


def _words(row: ScalingRow) -> dict[str, str]:
    from repro.compare.kinds.throughput.sweep import scaling_data

    d = scaling_data(row)
    return {k: t for k in SERIES_KEYS if (t := setting_text(k, d))}


def _series(rows: Sequence[ScalingRow], unit: str = "images/sec") -> tuple[str, dict[str, list[ScalingRow]]]:
    """(what every series shares, {what a series has of its own: its rows}); points without a figure left out."""
    rows = [r for r in rows if r.point.images_per_sec is not None]
    words = [_words(r) for r in rows]
    keys = [k for k in SERIES_KEYS if len({w.get(k) for w in words}) > 1]
    shared = " · ".join(t for k in SERIES_KEYS if k not in keys and (t := words[0].get(k))) if words else ""
    out: dict[str, list[ScalingRow]] = defaultdict(list)
    for r, w in zip(rows, words, strict=True):
        out[" · ".join(t for k in keys if (t := w.get(k))) or unit].append(r)
    return shared, out


def _groups(rows: Sequence[ScalingRow]) -> list[tuple[int, int | None]]:
    return sorted({(r.point.workers, r.point.settings.hosts) for r in rows}, key=lambda g: (g[0], g[1] or 0))


def _group_label(group: tuple[int, int | None], hosts_vary: bool) -> str:
    workers, hosts = group
    if not hosts_vary:
        return str(workers)
    return f"{workers}\n({'?' if hosts is None else hosts} host{'s' if hosts != 1 else ''})"


def _stacks(rows: Sequence[ScalingRow]) -> list[str]:
    return list(dict.fromkeys(r.point.stack_hash for r in rows))


def _bars(rows: Sequence[ScalingRow], groups: Sequence[tuple[int, int | None]], labels: dict[str, str],
          colors: dict[str, int]) -> list[Bars]:
    out = []
    for stack in _stacks(rows):
        at = {(r.point.workers, r.point.settings.hosts): r.point for r in rows if r.point.stack_hash == stack}
        pts = [at.get(g) for g in groups]
        est = [p.estimate if p else None for p in pts]
        out.append(Bars(labels[stack], [p.images_per_sec if p else None for p in pts],
                        [e.low if e else None for e in est], [e.high if e else None for e in est], colors[stack]))
    return out


def _speedups(rows: Sequence[ScalingRow], labels: dict[str, str], colors: dict[str, int]) -> list[Line]:
    out = []
    for stack in _stacks(rows):
        mine = sorted((r for r in rows if r.point.stack_hash == stack and r.speedup is not None),
                      key=lambda r: r.point.workers)
        out.append(Line(labels[stack], [r.point.workers for r in mine], [r.speedup for r in mine], colors[stack]))
    return out


def scaling_figure(rows: Sequence[ScalingRow], unit: str = "images/sec") -> Any:
    """images/sec (the lm kind: tokens/sec, `unit`) per worker count, stacks side by side, and speedup against the
    ideal line, per series."""
    from repro.results.plots import draw_bars, draw_speedup

    shared, series = _series(rows, unit)
    if not series:
        raise ResultsError("nothing to plot: no throughput point with a figure")
    labels = stack_labels(rows)
    colors = {h: i for i, h in enumerate(_stacks(rows))}
    # a speedup panel where it shows a scaling: two worker counts or more with a speedup
    with_speedup = [sum(r.speedup is not None for r in members) > 1 for members in series.values()]
    fig, panels = figure(len(series), with_speedup)
    for (title, members), row in zip(series.items(), panels, strict=True):
        groups = _groups(members)
        hosts_vary = len({g[1] for g in groups}) > 1
        draw_bars(row.bars, [_group_label(g, hosts_vary) for g in groups], _bars(members, groups, labels, colors),
                  ylabel=unit, xlabel="workers")
        row.bars.set_title(title, fontsize=10)
        if row.speedup is not None:
            draw_speedup(row.speedup, _speedups(members, labels, colors))
    stacks = list(dict.fromkeys(labels[h] for h in colors))
    title = f"{' vs '.join(stacks)}: {unit} (error bars: 95% interval) and speedup"
    finish(fig, title + (f"\n{shared}" if shared else ""), *legend_entries(fig))
    return fig


def plot_scaling(rows: Sequence[ScalingRow], path: str | Path) -> Path:
    return save(scaling_figure(rows), path)

