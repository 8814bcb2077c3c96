"""Figures of one or more stacks' results (`repro results scaling --plot`, `repro bench --plot`).

- throughput (cnn, tf_cnn_benchmarks, imported logs): per series (model and every setting but the worker
  and host counts), images/sec bars per worker count with the stacks side by side, value labels and
  error bars from the intervals, and the speedup against the ideal line (the whitepaper's figures, seed 003);
- all-reduce: latency and bus bandwidth per message size for both paths (Horovod's and the raw
  MPI_Allreduce), with the link speed as a line;
- time to accuracy: validation top-1 against time for every run, the target as a line and the time each
  run reached it marked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from repro.errors import ResultsError
from repro.results.metrics import ScalingRow
from repro.results.plots import (
    REFERENCE,
    VALUE_LABEL,
    Bars,
    Line,
    color,
    figure,
    finish,
    legend_entries,
    log_if_wide,
    save,
)
from repro.results.record import RunRecord
from repro.results.report import setting_text
from repro.results.summary import GB, AllreduceSweep

SERIES_KEYS = ("workload", "model", "batch", "precision", "xla", "data", "threads")


def stack_labels(rows: Sequence[ScalingRow]) -> dict[str, str]:
    """hash -> the stack's name, with its hash where two stacks share a name."""
    names: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        names[r.point.stack].add(r.point.stack_hash)
    return {r.point.stack_hash: r.point.stack + (f" ({r.point.stack_hash[:7]})" if len(names[r.point.stack]) > 1
                                                  else "") for r in rows}


def _words(row: ScalingRow) -> dict[str, str]:
    from repro.results.report import scaling_data

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


# -- all-reduce -------------------------------------------------------------------------------------

def _sweep_label(sweep: AllreduceSweep, path: str, several: bool) -> str:
    what = f"Horovod ({sweep.backend})" if path == "horovod" else "raw MPI_Allreduce"
    who = f"{sweep.stack}, {sweep.workers} workers" if several else ""
    return f"{who}: {what}" if who else what


def allreduce_figure(sweeps: Sequence[AllreduceSweep]) -> Any:
    """Latency (log-log) and bus bandwidth per message size for both paths, the link speed as a line."""
    if not sweeps:
        raise ResultsError("nothing to plot: no successful all-reduce run")
    fig, (row,) = figure(1, [True])
    lat, bw = row.bars, row.speedup
    several = len(sweeps) > 1
    for i, sweep in enumerate(sweeps):
        for path, style in (("horovod", "-"), ("raw", "--")):
            pts = [(s.bytes, f) for s in sweep.sizes if (f := getattr(s, path)) is not None and f.latency_s]
            if not pts:
                continue
            label = _sweep_label(sweep, path, several)
            c = color(i * 2 + (path == "raw"))
            lat.plot([p[0] for p in pts], [p[1].latency_s * 1e6 for p in pts], style, marker=".", color=c,
                     label=label)
            bw.plot([p[0] for p in pts], [(p[1].busbw or 0) / GB for p in pts], style, marker=".", color=c,
                    label=label)
    link = next((s.link_gbps for s in sweeps if s.link_gbps), None)
    if link:
        bw.axhline(link / 8, color="#777777", linestyle=":", label=f"link {link / 8:g} GB/s ({link:g} Gbit/s)",
                   gid=REFERENCE)
    lat.set(xscale="log", yscale=log_if_wide(lat), xlabel="message size (bytes)", ylabel="latency (us)",
            title="latency per all-reduce (median)")
    averages = ", ".join(f"{'hvd' if p == 'horovod' else p} {v / GB:.2f}" for s in sweeps[:1]
                         for p in ("horovod", "raw") if (v := s.average_busbw(p)) is not None)
    bw.set(xscale="log", xlabel="message size (bytes)", ylabel="bus bandwidth (GB/s)",
           title="bus bandwidth (nccl-tests' busbw)" + (f"\naverage: {averages} GB/s" if averages and not several
                                                          else ""))
    for ax in (lat, bw):
        ax.grid(True, which="both", alpha=0.3)
    first = sweeps[0]
    hosts = "? hosts" if first.hosts is None else f"{first.hosts} host{'s' if first.hosts != 1 else ''}"
    where = "" if several else f"{first.stack}, {first.workers} workers on {hosts}: "
    finish(fig, f"{where}all-reduce, Horovod's path and the raw path", *legend_entries(fig))
    return fig


# -- time to accuracy -------------------------------------------------------------------------------

def tta_figure(records: Sequence[RunRecord]) -> Any:
    """Validation top-1 against elapsed time for every run, with the target and the time each run reached it."""
    from repro.workloads.catalog import kind_of

    runs = [r for r in records if kind_of(r.settings.workload) == "tta" and r.status == "ok" and r.metrics.get("curve")]
    if not runs:
        raise ResultsError("nothing to plot: no successful time-to-accuracy run with an accuracy curve")
    fig, (row,) = figure(1)
    ax = row.bars
    several_stacks = len({r.stack.hash for r in runs}) > 1
    for i, rec in enumerate(runs):
        curve = [e for e in rec.metrics["curve"] if isinstance(e, dict)]
        who = f"{rec.stack.name}, " if several_stacks else ""
        label = f"{who}{rec.settings.workers} worker{'s' if rec.settings.workers != 1 else ''} ({rec.id[-8:]})"
        ax.plot([e.get("elapsed_s", 0) for e in curve], [100 * (e.get("val_top1") or 0) for e in curve],
                marker="o", color=color(i), label=label)
        tta = rec.metrics.get("time_to_accuracy_s")
        if rec.metrics.get("reached") and tta is not None:
            ax.axvline(tta, color=color(i), linestyle=":", linewidth=1)
            ax.annotate(f"{tta:.1f} s", (tta, 100 * (rec.metrics.get("target") or 0)), xytext=(4, -14 - 10 * i),
                        textcoords="offset points", fontsize=8, color=color(i), gid=VALUE_LABEL)
    targets = sorted({float(r.metrics["target"]) for r in runs if r.metrics.get("target") is not None})
    for t in targets:
        ax.axhline(100 * t, color="#777777", linestyle="--", label=f"target {100 * t:.1f}%", gid=REFERENCE)
    ax.set(xlabel="time since the start of training (s)", ylabel="validation top-1 (%)",
           title="accuracy against time (dotted: time to accuracy)")
    ax.set_ylim(0, 100)
    ax.set_xlim(0, ax.get_xlim()[1] * 1.08)  # room for the time-to-accuracy labels at the right
    ax.grid(alpha=0.3)
    stacks = ", ".join(dict.fromkeys(r.stack.name for r in runs))
    finish(fig, f"{stacks}: time to accuracy", *legend_entries(fig))
    return fig


def plot_scaling(rows: Sequence[ScalingRow], path: str | Path) -> Path:
    return save(scaling_figure(rows), path)

