"""The lm kind's figures, the throughput kind's drawn in tokens/sec: its rows of the comparison figure (per
series tokens/sec bars per worker count, NEW/OLD under each, speedup) and its end-of-sweep figure (tokens/sec per
worker count, stacks side by side, speedup against the ideal line)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.compare.kind import Panel
from repro.compare.kinds.lm.metrics import UNIT
from repro.compare.kinds.lm.rows import LmRow
from repro.compare.kinds.throughput.figure import scaling_figure
from repro.compare.kinds.throughput.panels import throughput_panels
from repro.compare.view import View
from repro.results import metrics
from repro.results.record import RunRecord


def lm_panels(view: View, rows: Sequence[LmRow]) -> tuple[Panel, ...]:
    """The lm kind's rows of the comparison figure: the throughput rows under them, in tokens/sec."""
    return throughput_panels(view, [r.base for r in rows], unit=UNIT)


def lm_figure(records: Sequence[RunRecord], *, warmup: str = "fixed", baseline_workers: int | None = None) -> Any:
    """tokens/sec per worker count, stacks side by side, and speedup against the ideal line, per series."""
    pts = metrics.points(records, warmup=warmup)
    return scaling_figure(metrics.scaling(pts, baseline_workers=baseline_workers), unit=UNIT)
