"""Transformer training runs compared (pure): tokens/sec NEW/OLD with interval and verdict, MFU and peak memory
beside it, and the lm kind's regression rule.

tokens/sec is the throughput kind's figure under another unit (metrics.py), so each aligned point gets its ratio,
interval and verdict from the throughput kind's rows (paired where the runs were interleaved, conditions judged
where they were not). A point regresses when NEW is significantly slower, or when NEW's peak memory per rank is
more than MEMORY_GROWTH above OLD's (a model that fitted may no longer fit; memory is one figure per run, so this
is a threshold, not a test).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.compare.align import Pair
from repro.compare.kinds.lm import metrics
from repro.compare.kinds.throughput.rows import ThroughputRow, throughput_rows
from repro.compare.options import Options
from repro.results import stats
from repro.results.record import RunRecord

MEMORY_GROWTH = 0.10


@dataclass(frozen=True)
class LmSide:
    """What one side of a point shows beside tokens/sec."""

    mfu: float | None
    tflops_per_device: float | None
    peak_memory_bytes: float | None
    loss_last: float | None


@dataclass(frozen=True)
class LmRow:
    """One aligned point: the throughput row (tokens/sec) and each side's MFU, memory and last loss."""

    base: ThroughputRow
    old: LmSide
    new: LmSide
    unit: str = metrics.UNIT  # samples/sec where both sides' imported logs count samples (metrics.unit)
    notes: tuple[str, ...] = ()

    @property
    def key(self) -> Any:
        return self.base.key

    @property
    def ratio(self) -> stats.RatioResult:
        return self.base.ratio

    @property
    def memory_ratio(self) -> float | None:
        a, b = self.old.peak_memory_bytes, self.new.peak_memory_bytes
        return b / a if a and b else None

    @property
    def why(self) -> str:
        """Why the row is a regression ('' when it is not): the lm kind's regression rule."""
        said = []
        if self.base.ratio.verdict == stats.SLOWER:
            said.append(f"{self.unit} slower")
        if self.memory_ratio is not None and self.memory_ratio > 1 + MEMORY_GROWTH:
            said.append(f"peak memory +{self.memory_ratio - 1:.0%}")
        return "; ".join(said)

    @property
    def regression(self) -> bool:
        return bool(self.why)


def _side(records: Sequence[RunRecord], tokens_per_sec: float | None, workers: int) -> LmSide:
    return LmSide(metrics.mfu(tokens_per_sec, records, workers),
                  metrics.tflops_per_device(tokens_per_sec, records, workers), metrics.peak_memory(records),
                  metrics.losses(records)[1])


def lm_rows(pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
            options: Options) -> tuple[LmRow, ...]:
    """Every aligned lm point: tokens/sec ratio and verdict, with MFU, memory and loss per side."""
    rows = []
    for base, pair in zip(throughput_rows(pairs, old, new, options), pairs, strict=True):
        workers = base.settings.workers
        units = metrics.unit(pair.old.records), metrics.unit(pair.new.records)
        # a ratio of samples/sec to tokens/sec means nothing: said beside the row (imported logs count either)
        notes = (f"OLD counts {units[0]}, NEW {units[1]}: NEW/OLD compares different units",) \
            if units[0] != units[1] else ()
        rows.append(LmRow(base, _side(pair.old.records, base.old.images_per_sec, workers),
                          _side(pair.new.records, base.new.images_per_sec, workers), units[0], notes))
    return tuple(rows)


def as_dict(row: LmRow) -> dict[str, Any]:
    """A row's raw numbers (json, csv)."""
    r = row.base
    figure = "samples_per_sec" if row.unit == "samples/sec" else "tokens_per_sec"
    out: dict[str, Any] = {f"{figure}_old": r.old.images_per_sec, f"{figure}_new": r.new.images_per_sec,
                           "ratio": r.ratio.ratio, "low": r.ratio.low, "high": r.ratio.high,
                           "verdict": r.ratio.verdict, "method": r.ratio.method, "runs_old": r.old.runs,
                           "runs_new": r.new.runs, "memory_ratio": row.memory_ratio, "regression": row.regression,
                           "regression_why": row.why}
    for name, side in (("old", row.old), ("new", row.new)):
        for field in ("mfu", "tflops_per_device", "peak_memory_bytes", "loss_last"):
            out[f"{field}_{name}"] = getattr(side, field)
    return out
