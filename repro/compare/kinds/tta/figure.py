"""The tta kind's figures: its row of the comparison figure (each side's time to accuracy per point) and its
end-of-sweep figure (validation quality against time for every run, the target and the time each run reached
it marked)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.compare.cells import ratio_label
from repro.compare.kinds.tta.metrics import TtaMetrics
from repro.errors import ResultsError
from repro.results.plots import REFERENCE, VALUE_LABEL, Bars, color, draw_bars, figure, finish, legend_entries
from repro.results.record import RunRecord
from repro.workloads.catalog import kind_of


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


def tta_figure(records: Sequence[RunRecord]) -> Any:
    """Validation top-1 against elapsed time for every run, with the target and the time each run reached it."""
    read = [(r, TtaMetrics.model_validate(r.metrics)) for r in records
            if kind_of(r.settings.workload) == "tta" and r.status == "ok"]
    runs = [(r, m) for r, m in read if m.curve]
    if not runs:
        raise ResultsError("nothing to plot: no successful time-to-accuracy run with an accuracy curve")
    fig, (row,) = figure(1)
    ax = row.bars
    several_stacks = len({r.stack.hash for r, _ in runs}) > 1
    for i, (rec, m) in enumerate(runs):
        who = f"{rec.stack.name}, " if several_stacks else ""
        label = f"{who}{rec.settings.workers} worker{'s' if rec.settings.workers != 1 else ''} ({rec.id[-8:]})"
        ax.plot([e.elapsed_s or 0 for e in m.curve], [100 * (e.val_top1 or 0) for e in m.curve],
                marker="o", color=color(i), label=label)
        tta = m.time_to_accuracy_s
        if m.reached and tta is not None:
            ax.axvline(tta, color=color(i), linestyle=":", linewidth=1)
            ax.annotate(f"{tta:.1f} s", (tta, 100 * (m.target or 0)), xytext=(4, -14 - 10 * i),
                        textcoords="offset points", fontsize=8, color=color(i), gid=VALUE_LABEL)
    targets = sorted({float(m.target) for _, m in runs if m.target is not None})
    for t in targets:
        ax.axhline(100 * t, color="#777777", linestyle="--", label=f"target {100 * t:.1f}%", gid=REFERENCE)
    ax.set(xlabel="time since the start of training (s)", ylabel="validation top-1 (%)",
           title="accuracy against time (dotted: time to accuracy)")
    ax.set_ylim(0, 100)
    ax.set_xlim(0, ax.get_xlim()[1] * 1.08)  # room for the time-to-accuracy labels at the right
    ax.grid(alpha=0.3)
    stacks = ", ".join(dict.fromkeys(r.stack.name for r, _ in runs))
    finish(fig, f"{stacks}: time to accuracy", *legend_entries(fig))
    return fig
