"""The throughput kind's part of the comparison document (pure): its table, notes, summary per model and JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.compare.align import format_value
from repro.compare.cells import (
    column_label,
    constants,
    criterion,
    display_columns,
    interval_text,
    key_cells,
    key_columns,
    number,
    percent,
    points,
    ratio_text,
    verdict_text,
)
from repro.compare.kinds.throughput.rows import Side, ThroughputRow
from repro.compare.kinds.throughput.sweep import STEP_FOOTNOTE
from repro.compare.view import View
from repro.formats import Column, Table
from repro.results import stats


def _noise(side: Side) -> str:
    """The ± of a side; '*' marks one run's interval, which covers step noise only."""
    text = percent(side.noise)
    return f"{text}*" if text != "-" and side.scope == stats.STEPS_SCOPE else text



def throughput_table(view: View, rows: Sequence[ThroughputRow]) -> Table:
    """The throughput kind's table: images/sec of each side, NEW/OLD, its interval and verdict, efficiencies."""
    cols = display_columns(view, rows)
    conf = f"{view.options.confidence:.0%}"
    columns = [*key_columns(cols),
               *(Column(h, numeric=True) for h in ("OLD img/s", "OLD ±", "NEW img/s", "NEW ±", "NEW/OLD",
                                                   f"{conf} interval")),
               Column("verdict"), *(Column(h, numeric=True) for h in ("eff OLD", "eff NEW", "Δ eff"))]
    cells = [(*key_cells(r.key, cols), number(r.old.images_per_sec), _noise(r.old), number(r.new.images_per_sec),
              _noise(r.new), ratio_text(r.ratio.ratio), interval_text(r.ratio), verdict_text(r.ratio),
              percent(r.old.efficiency), percent(r.new.efficiency), points(r.efficiency_change)) for r in rows]
    caption = [constants(rows, cols),
               f"img/s: geometric mean over runs; ±: half-width of its {conf} Student t interval over runs, relative",
               f"NEW/OLD: ratio of the geometric means; interval: {conf}, Welch's t on log figures of runs (paired t "
               "for interleaved pairs)",
               criterion(view, [r.ratio for r in rows]),
               "eff: scaling efficiency (speedup / workers) of each side; Δ eff in percentage points; "
               "docs/statistics.md has the method"]
    return Table(tuple(columns), tuple(cells), tuple({"kind": "throughput", **dict(r.key), **row_dict(r)}
                                                     for r in rows),
                 title="Throughput (images/sec): NEW/OLD", caption=tuple(x for x in caption if x),
                 notes=tuple(_throughput_notes(view, rows)), name="throughput")


def _point_name(view: View, rows: Sequence[ThroughputRow], key: Sequence[tuple[str, Any]]) -> str:
    values = dict(key)
    return ", ".join(f"{column_label(k)} {format_value(values.get(k))}" for k in display_columns(view, rows))


def _throughput_notes(view: View, rows: Sequence[ThroughputRow]) -> list[str]:
    """What the table's figures rest on: few runs, step-only intervals, pairing, assumptions, warm-up."""
    lines = []
    if any(side.scope == stats.STEPS_SCOPE and side.noise is not None
           for r in rows for side in (r.old, r.new)):
        lines.append(STEP_FOOTNOTE)
    for r in rows:
        said = [r.ratio.note] if r.ratio.note else []
        if r.ratio.method == stats.PAIRED:
            said.append(f"{r.ratio.pairs} interleaved pairs: paired comparison")
        said += [f"efficiency {side}: {s.efficiency_note}" for side, s in (("OLD", r.old), ("NEW", r.new))
                 if s.efficiency_note]
        said += list(r.notes)
        lines += [f"{_point_name(view, rows, r.key)}: {text}" for text in said]
    return lines



def summary_lines(summaries: Sequence[Any]) -> list[str]:
    """The throughput kind's summary per model: geometric mean of NEW/OLD and the count of each verdict."""
    lines = []
    for s in summaries:
        gm = ratio_text(s.geomean)
        lines.append(f"{s.model}: {gm} (geometric mean of {s.points} point{'s' if s.points != 1 else ''}: "
                     f"{s.faster} faster, {s.slower} slower, {s.same} no significant difference, "
                     f"{s.not_enough} {stats.NOT_ENOUGH}"
                     + (f", {s.equivalent} {stats.EQUIVALENT}" if s.equivalent else "")
                     + (f", {s.inconclusive} {stats.INCONCLUSIVE}" if s.inconclusive else "")
                     + (f", {s.conditions} {stats.CONDITIONS}" if s.conditions else "") + ")")
    return lines



def row_dict(r: ThroughputRow) -> dict[str, Any]:
    """A throughput row's figures as plain data."""
    return {
        "images_per_sec_old": r.old.images_per_sec, "images_per_sec_new": r.new.images_per_sec,
        "low_old": r.old.low, "high_old": r.old.high, "low_new": r.new.low, "high_new": r.new.high,
        "noise_old": r.old.noise, "noise_new": r.new.noise, "interval_old": r.old.scope or None,
        "interval_new": r.new.scope or None,
        "ratio": r.ratio.ratio, "low": r.ratio.low, "high": r.ratio.high, "verdict": r.ratio.verdict,
        "method": r.ratio.method or None, "pairs": r.ratio.pairs, "note": r.ratio.note or None,
        "efficiency_old": r.old.efficiency, "efficiency_new": r.new.efficiency,
        "efficiency_change": r.efficiency_change, "runs_old": r.old.runs, "runs_new": r.new.runs,
        "failed_old": r.old.failed, "failed_new": r.new.failed,
        "published_old": r.old.published, "published_new": r.new.published,
        "efficiency_note_old": r.old.efficiency_note or None, "efficiency_note_new": r.new.efficiency_note or None,
        "notes": list(r.notes),
    }
