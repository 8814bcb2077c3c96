"""The throughput kind's rows of the comparison figure: per series (a model and every varying setting but the
worker and host counts) images/sec bars per worker count, the two sides side by side, error bars from each
side's interval, the ratio NEW/OLD under each worker count, and the speedup of each side against the ideal line.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from repro.compare.align import format_value
from repro.compare.cells import column_label, display_columns, ratio_label, setting_words
from repro.compare.kind import Panel
from repro.compare.view import View
from repro.results.plots import Bars, Line, draw_bars, draw_speedup


def _series(view: View, compared: Sequence[Any], unit: str = "images/sec") -> tuple[str, dict[str, list[Any]]]:
    """(the settings every series shares, {a series' own settings: its rows})."""
    cols = [k for k in display_columns(view, compared) if k not in ("workers", "hosts")]  # x axis: workers (hosts)
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


def throughput_panels(view: View, compared: Sequence[Any], unit: str = "images/sec") -> tuple[Panel, ...]:
    """The throughput kind's rows of the figure: one per series, with a speedup plot where it has two points (the
    lm kind draws its tokens/sec with them: `unit`)."""
    shared, series = _series(view, compared, unit)
    wording = f"error bars: each side's {view.options.confidence:.0%} interval"

    def panel(title: str, rows: list[Any]) -> Panel:
        speedup = sum(r.old.efficiency is not None or r.new.efficiency is not None for r in rows) > 1
        return Panel(lambda row, labels: _throughput_row(row, title, rows, labels, unit), speedup=speedup,
                     title=shared, note=wording)

    return tuple(panel(title, rows) for title, rows in series.items())
