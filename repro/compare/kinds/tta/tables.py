"""The tta kind's part of the comparison document (pure): each side's time to accuracy, how many runs reached it,
the speed-up OLD/NEW and its verdict, the final quality."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.compare.cells import (
    constants,
    criterion,
    display_columns,
    interval_text,
    key_cells,
    key_columns,
    number,
    percent,
    ratio_text,
    verdict_text,
)
from repro.compare.kinds.tta.rows import TtaRow, as_dict
from repro.compare.view import View
from repro.formats import Column, Table


def _quality(rows: Sequence[Any]) -> tuple[str, bool]:
    """The quality the rows' runs state (top-1 for repro's own runs; an imported log's metric otherwise) and
    whether it is a fraction shown as a percentage."""
    labels = {side.quality_label for r in rows for side in (r.old, r.new)} or {"top-1"}
    label = labels.pop() if len(labels) == 1 else "final quality"
    return label, label == "top-1"


def tta_table(view: View, rows: Sequence[TtaRow]) -> Table:
    """The tta kind's table: time to accuracy of each side, how many runs reached it, the speed-up."""
    cols = display_columns(view, rows)
    targets = {r.old.target or r.new.target for r in rows}
    quality, fraction = _quality(rows)
    shown = percent if fraction else (lambda v: f"{v:.4g}" if isinstance(v, (int, float)) else "-")
    columns = [*key_columns(cols),
               *([Column("target", True)] if len(targets) > 1 else []),
               *(Column(h, numeric=True) for h in ("TTA OLD (s)", "TTA NEW (s)", "reached OLD", "reached NEW",
                                                   "OLD/NEW", "interval")),
               Column("verdict"), Column(f"{quality} OLD", True), Column(f"{quality} NEW", True), Column("flag")]
    cells = [(*key_cells(r.key, cols), *([shown(r.old.target or r.new.target)] if len(targets) > 1 else []),
              number(r.old.time_to_accuracy_s), number(r.new.time_to_accuracy_s),
              f"{r.old.reached}/{r.old.runs}", f"{r.new.reached}/{r.new.runs}", ratio_text(r.speedup.ratio),
              interval_text(r.speedup), verdict_text(r.speedup), shown(r.old.final_quality), shown(r.new.final_quality),
              r.flag or "") for r in rows]
    known = len(targets) == 1 and (fraction or None not in targets)  # an MLPerf log may state no eval_target
    target = f"target {quality} {shown(next(iter(targets)))}" if known else ""
    if fraction:
        meaning = ("TTA: mean seconds until validation top-1 first reached the target, over the runs that reached it; "
                   "top-1: final validation accuracy (mean over runs)")
    else:  # imported MLPerf runs: the quality each benchmark's rules name (a loss or perplexity is reached from above)
        meaning = (f"TTA: mean seconds from run_start to run_stop, over the runs that reached the benchmark's quality "
                   f"target; {quality}: the last evaluation the logs state (mean over runs)")
    caption = [" · ".join(x for x in (constants(rows, cols), target) if x), meaning,
               f"OLD/NEW: speed-up (>1: NEW is sooner), {view.options.confidence:.0%} interval over runs; "
               f"{criterion(view, [r.speedup for r in rows])}"]
    return Table(tuple(columns), tuple(cells), tuple({"kind": "tta", **dict(r.key), **as_dict(r)} for r in rows),
                 title="Time to accuracy: speed-up = OLD time / NEW time", caption=tuple(x for x in caption if x),
                 name="tta")
