"""Transformer training runs compared (pure): tokens/sec NEW/OLD with interval and verdict, MFU and peak memory
beside it, and the lm kind's regression rule.

tokens/sec is the throughput kind's figure under another unit (repro.results.lm), so each aligned point gets its
ratio, interval and verdict from repro.compare.throughput (paired where the runs were interleaved, conditions
judged where they were not). A point regresses when NEW is significantly slower, or when NEW's peak memory per
rank is more than MEMORY_GROWTH above OLD's (a model that fitted may no longer fit; memory is one figure per run,
so this is a threshold, not a test).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.compare.align import Pair, format_value
from repro.compare.throughput import Options, ThroughputRow, throughput_rows
from repro.formats import Column, Table, number, percent
from repro.results import lm, stats
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
    unit: str = lm.UNIT  # samples/sec where both sides' imported logs count samples (repro.results.lm.unit)
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
        """Why the row is a regression ('' when it is not)."""
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
    return LmSide(lm.mfu(tokens_per_sec, records, workers), lm.tflops_per_device(tokens_per_sec, records, workers),
                  lm.peak_memory(records), lm.mean_metric(records, "loss_last"))


def lm_rows(pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
            options: Options) -> tuple[LmRow, ...]:
    """Every aligned lm point: tokens/sec ratio and verdict, with MFU, memory and loss per side."""
    rows = []
    for base, pair in zip(throughput_rows(pairs, old, new, options), pairs, strict=True):
        workers = base.settings.workers
        units = lm.unit(pair.old.records), lm.unit(pair.new.records)
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


def _said(ratio: stats.RatioResult) -> list[str]:
    """What a row's ratio rests on: its note, and whether its runs were paired."""
    said = [ratio.note] if ratio.note else []
    if ratio.method == stats.PAIRED:
        said.append(f"{ratio.pairs} interleaved pairs: paired comparison")
    return said


def _noise(low: float | None, high: float | None, value: float | None) -> str:
    return percent((high - low) / 2 / value) if value and low is not None and high is not None else "-"


def table(rows: Sequence[LmRow], columns: Sequence[str], confidence: float, threshold: float,
          verdict: Any) -> Table:
    """The lm kind's table of `repro compare`; `columns`: the key settings shown, `verdict`: the verdict's words."""
    conf = f"{confidence:.0%}"
    samples = bool(rows) and all(row.unit == "samples/sec" for row in rows)
    short = "samples/s" if samples else "tok/s"
    # TFLOP/s per device: where the runs give it (the lm workload's FLOPs per token, or stated by imported logs)
    tflops = any(side.tflops_per_device for row in rows for side in (row.old, row.new))
    heads = [*(Column(k.removeprefix("extra."), numeric=k in ("workers", "hosts", "batch_per_worker"))
               for k in columns),
             *(Column(h, numeric=True) for h in (f"OLD {short}", "OLD ±", f"NEW {short}", "NEW ±", "NEW/OLD",
                                                 f"{conf} interval")),
             Column("verdict"), *(Column(h, numeric=True) for h in (("TFLOP/s OLD", "TFLOP/s NEW") if tflops else ())),
             *(Column(h, numeric=True) for h in ("MFU OLD", "MFU NEW", "mem OLD", "mem NEW")),
             Column("regression")]
    cells = []
    for row in rows:
        r, key = row.base, dict(row.key)
        interval = f"[{r.ratio.low:.3f}, {r.ratio.high:.3f}]" if r.ratio.low is not None and r.ratio.high else "-"
        cells.append((*(format_value(key.get(k)) for k in columns), number(r.old.images_per_sec),
                      _noise(r.old.low, r.old.high, r.old.images_per_sec), number(r.new.images_per_sec),
                      _noise(r.new.low, r.new.high, r.new.images_per_sec),
                      f"{r.ratio.ratio:.2f}x" if r.ratio.ratio else "-", interval, verdict(r.ratio),
                      *((number(row.old.tflops_per_device), number(row.new.tflops_per_device)) if tflops else ()),
                      percent(row.old.mfu), percent(row.new.mfu), lm.memory_text(row.old.peak_memory_bytes),
                      lm.memory_text(row.new.peak_memory_bytes), row.why or "-"))
    counted = ("samples/sec, as the logs give it (stated, or their stated batch over time per step)" if samples
               else "tokens/sec")
    caption = (f"{short}: {counted}, geometric mean over runs; ±: half-width of its {conf} Student t interval, "
               "relative",
               f"NEW/OLD and verdict as for images/sec ({conf}; paired t for interleaved pairs; changes under "
               f"{threshold:.0%} are no significant difference)",
               "MFU: tokens/sec per device x model FLOPs per token / the device's sourced peak, or as an imported "
               "log states it ('-': none known); mem: peak memory per rank",
               *(("TFLOP/s: model TFLOP/s per device, derived as MFU is or as an imported log states it",)
                 if tflops else ()),
               f"regression: {'samples/sec' if samples else 'tokens/sec'} significantly slower, or peak memory more "
               f"than {MEMORY_GROWTH:.0%} higher")
    notes = tuple(f"{', '.join(f'{k} {v}' for k, v in row.key if k in columns)}: {n}"
                  for row in rows for n in _said(row.base.ratio) + list(row.base.notes) + list(row.notes))
    return Table(tuple(heads), tuple(cells), tuple({"kind": "lm", **dict(r.key), **as_dict(r)} for r in rows),
                 title=f"Transformer training ({'samples/sec' if samples else 'tokens/sec'}): NEW/OLD",
                 caption=caption, notes=notes, name="lm")
