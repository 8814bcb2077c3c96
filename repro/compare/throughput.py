"""Throughput figures of aligned points (pure): images/sec per side, ratio with verdict, efficiency.

The ratio new/old is the whitepaper's "speed-up factor". Its interval and verdict come from
repro.results.stats.compare over the raw per-repeat step-time groups. Imported published figures have
no raw samples: they give a ratio with the verdict "not enough data", and so do imported runs whose log
gave only its summary figure. An imported run's figure is its log's own summary; its samples, scaled to
that figure (repro.results.metrics.sample_times), give the interval.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from repro.compare.align import Key, Pair
from repro.errors import ResultsError
from repro.results import metrics, stats
from repro.results.metrics import Point, ScalingRow
from repro.results.record import RunRecord, Settings


@dataclass(frozen=True)
class Options:
    """How a comparison decides: significance threshold, confidence, bootstrap size and seed."""

    threshold: float = stats.DEFAULT_THRESHOLD
    confidence: float = stats.DEFAULT_CONFIDENCE
    allow_different_hardware: bool = False
    resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = 0


@dataclass(frozen=True)
class Side:
    """One side of one aligned point."""

    stack: str
    runs: int  # successful repeats
    failed: int
    images_per_sec: float | None
    low: float | None
    high: float | None
    efficiency: float | None  # scaling efficiency of the point within its own side
    published: bool

    @property
    def noise(self) -> float | None:
        """Relative half-width of the interval (None without raw samples)."""
        if self.images_per_sec and self.low is not None and self.high is not None:
            return (self.high - self.low) / 2 / self.images_per_sec
        return None


@dataclass(frozen=True)
class ThroughputRow:
    """One aligned point: OLD and NEW images/sec, ratio NEW/OLD with interval and verdict."""

    key: Key
    settings: Settings
    old: Side
    new: Side
    ratio: stats.RatioResult

    @property
    def efficiency_change(self) -> float | None:
        if self.old.efficiency is None or self.new.efficiency is None:
            return None
        return self.new.efficiency - self.old.efficiency

    @property
    def regression(self) -> bool:
        return self.ratio.verdict == stats.SLOWER


@dataclass(frozen=True)
class ModelSummary:
    """The geometric mean of one model's ratios, with how many points were faster, slower, the same."""

    model: str
    points: int
    geomean: float | None
    faster: int
    slower: int
    same: int
    not_enough: int


def _isfinite(x: float) -> bool:
    return x == x and x not in (float("inf"), float("-inf"))


def _one_point(records: Sequence[RunRecord], confidence: float, where: str) -> Point:
    pts = metrics.points(records, confidence=confidence)
    if len(pts) > 1:
        stacks = ", ".join(f"{p.stack} ({p.stack_hash})" for p in pts)
        raise ResultsError(f"{where} holds runs of several stacks for the same point: {stacks}",
                           hint="select one stack per side (by hash or manifest file)")
    return pts[0]


def _efficiencies(records: Sequence[RunRecord], confidence: float) -> dict[tuple, ScalingRow]:
    rows = metrics.scaling(metrics.points(records, confidence=confidence))
    return {(r.point.stack_hash, r.point.settings.key()): r for r in rows}


def _side(point: Point, eff: dict[tuple, ScalingRow]) -> Side:
    row = eff.get((point.stack_hash, point.settings.key()))
    est = point.estimate
    low = est.low if est and _isfinite(est.low) else None
    high = est.high if est and _isfinite(est.high) else None
    return Side(point.stack, len(point.records), point.failed, point.images_per_sec, low, high,
                row.efficiency if row else None, any(r.published is not None for r in point.records))


def _sampled(point: Point) -> bool:
    """Whether every repeat of the point has step samples (published figures and summaries alone have none)."""
    return bool(point.records) and all(point.groups) and len(point.groups) == len(point.records)


def _items(point: Point) -> int:
    measured = [r for r in point.records if r.published is None and r.ranks]
    return metrics.items_per_step(measured[0]) if measured else 0


def throughput_rows(pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                    options: Options) -> tuple[ThroughputRow, ...]:
    """Figures for every aligned throughput point."""
    old_eff = _efficiencies(old, options.confidence)
    new_eff = _efficiencies(new, options.confidence)
    rows = []
    for pair in pairs:
        a = _one_point(pair.old.records, options.confidence, "OLD")
        b = _one_point(pair.new.records, options.confidence, "NEW")
        sa, sb = _side(a, old_eff), _side(b, new_eff)
        if sa.images_per_sec is None or sb.images_per_sec is None:
            ratio = stats.RatioResult(None, None, None, stats.NOT_ENOUGH, options.confidence, options.threshold)
        elif sa.published or sb.published or not _sampled(a) or not _sampled(b):
            ratio = stats.RatioResult(sb.images_per_sec / sa.images_per_sec, None, None, stats.NOT_ENOUGH,
                                      options.confidence, options.threshold)
        else:
            ratio = stats.compare(a.groups, _items(a), b.groups, _items(b), confidence=options.confidence,
                                  threshold=options.threshold, resamples=options.resamples, seed=options.seed)
        rows.append(ThroughputRow(pair.key, pair.old.settings, sa, sb, ratio))
    return tuple(rows)


def summaries(rows: Sequence[ThroughputRow]) -> tuple[ModelSummary, ...]:
    """Per model: the geometric mean of its ratios and the count of each verdict."""
    by_model: dict[str, list[ThroughputRow]] = defaultdict(list)
    for row in rows:
        by_model[str(row.settings.model)].append(row)
    out = []
    for model, members in by_model.items():
        verdicts = [r.ratio.verdict for r in members]
        out.append(ModelSummary(model, len(members),
                                stats.geometric_mean([r.ratio.ratio for r in members if r.ratio.ratio]),
                                verdicts.count(stats.FASTER), verdicts.count(stats.SLOWER),
                                verdicts.count(stats.SAME), verdicts.count(stats.NOT_ENOUGH)))
    return tuple(out)
