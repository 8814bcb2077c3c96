"""Throughput figures of aligned points (pure): images/sec per side, ratio with verdict, efficiency.

The ratio new/old is the whitepaper's "speed-up factor". A run's images/sec comes from
repro.results.metrics.throughput (the one definition); the interval and verdict come from
repro.results.stats over runs: a paired t on per-pair log ratios where runs were interleaved (A_i and
B_i back to back, `pair_id`), Welch's t on log figures otherwise, and "not enough runs" below two runs
a side (the ratio then has a step-noise-only interval and says so). Published figures have no runs to
measure noise from: they give a ratio with the verdict "not enough runs". An imported run's figure is its
log's own summary; its samples, scaled to that figure (repro.results.metrics.sample_times), give the
step-noise interval.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from repro.compare.align import Key, Pair, pair_id
from repro.compare.conditions import judge
from repro.compare.options import Options
from repro.errors import ResultsError
from repro.results import metrics, stats, steady
from repro.results.metrics import Point, ScalingRow
from repro.results.record import RunRecord, Settings


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
    scope: str = stats.RUNS_SCOPE  # what low/high cover: runs, or (one run) its steps only; "" without them
    efficiency_note: str = ""  # the assumption behind `efficiency`, or why there is none

    @property
    def noise(self) -> float | None:
        """Relative half-width of the interval (None without one)."""
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
    notes: tuple[str, ...] = ()  # warm-up problems of either side's runs

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
    conditions: int = 0  # points whose unpaired sides ran under different conditions
    equivalent: int = 0  # points whose interval lies within ±threshold
    inconclusive: int = 0  # points whose interval reaches beyond the threshold on both sides


def paired_values(old: Sequence[RunRecord], new: Sequence[RunRecord],
                  warmup: str = steady.FIXED) -> list[tuple[float, float]]:
    """(old, new) images/sec of the runs that ran as interleaved pairs, matched on pair_id."""
    by_id = {pid: r for r in old if (pid := pair_id(r)) is not None}
    out = []
    for r in new:
        pid = pair_id(r)
        partner = by_id.get(pid) if pid is not None else None
        if partner is None:
            continue
        a, b = metrics.throughput(partner, warmup), metrics.throughput(r, warmup)
        if a is not None and b is not None:
            out.append((a, b))
    return out


def _isfinite(x: float) -> bool:
    return x == x and x not in (float("inf"), float("-inf"))


def _one_point(records: Sequence[RunRecord], options: Options, where: str) -> Point:
    pts = metrics.points(records, confidence=options.confidence, warmup=options.warmup)
    if len(pts) > 1:
        stacks = ", ".join(f"{p.stack} ({p.stack_hash})" for p in pts)
        raise ResultsError(f"{where} holds runs of several stacks for the same point: {stacks}",
                           hint="select one stack per side (by hash or manifest file)")
    return pts[0]


def _efficiencies(records: Sequence[RunRecord], options: Options) -> dict[tuple, ScalingRow]:
    pts = metrics.points(records, confidence=options.confidence, warmup=options.warmup)
    rows = metrics.scaling(pts, baseline_workers=options.baseline_workers)
    return {(r.point.stack_hash, r.point.settings.key()): r for r in rows}


def _efficiency_note(row: ScalingRow | None) -> str:
    if row is None:
        return ""
    return "; ".join(n for n in row.notes if n.startswith(("baseline:", "series without")))


def _side(point: Point, eff: dict[tuple, ScalingRow]) -> Side:
    row = eff.get((point.stack_hash, point.settings.key()))
    est = point.estimate
    low = est.low if est and _isfinite(est.low) else None
    high = est.high if est and _isfinite(est.high) else None
    return Side(point.stack, len(point.records), point.failed, point.images_per_sec, low, high,
                row.efficiency if row else None, metrics.PUBLISHED in point.sources,
                est.scope if est and low is not None else "", _efficiency_note(row))


def point_ratio(a: Point, b: Point, options: Options) -> stats.RatioResult:
    """NEW/OLD of two points: paired where their runs were interleaved, over runs otherwise."""
    conf, thr = options.confidence, options.threshold
    if a.images_per_sec is None or b.images_per_sec is None:
        return stats.RatioResult(None, None, None, stats.NOT_ENOUGH, conf, thr)
    if options.within is not None and metrics.PUBLISHED in a.sources and metrics.PUBLISHED not in b.sources:
        return stats.compare_to_value(b.repeat_values, a.images_per_sec, confidence=conf, threshold=thr)
    if metrics.PUBLISHED in a.sources or metrics.PUBLISHED in b.sources:
        return stats.RatioResult(b.images_per_sec / a.images_per_sec, None, None, stats.NOT_ENOUGH, conf, thr,
                                 note="a published figure has no runs to measure noise from")
    pairs = paired_values(a.records, b.records, options.warmup)
    if len(pairs) >= stats.MIN_RUNS:
        return stats.compare_pairs(pairs, confidence=conf, threshold=thr)
    result = stats.compare_runs(a.repeat_values, b.repeat_values, confidence=conf, threshold=thr)
    if result.method or result.ratio is None:
        return result
    return stats.compare_steps(a.run_steps, b.run_steps, result.ratio, confidence=conf, threshold=thr,
                               resamples=options.resamples, seed=options.seed)


def throughput_rows(pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                    options: Options) -> tuple[ThroughputRow, ...]:
    """Figures for every aligned throughput point."""
    old_eff = _efficiencies(old, options)
    new_eff = _efficiencies(new, options)
    rows = []
    for pair in pairs:
        a = _one_point(pair.old.records, options, "OLD")
        b = _one_point(pair.new.records, options, "NEW")
        notes = tuple(f"{side}: {n}" for side, p in (("OLD", a), ("NEW", b)) for n in p.notes)
        ratio = point_ratio(a, b, options)
        judged = judge(a.records, b.records, confidence=options.confidence, warmup=options.warmup)
        if ratio.method != stats.PAIRED and ratio.ratio is not None and judged.differed:
            said = "; ".join(judged.differed)
            ratio = replace(ratio, verdict=stats.CONDITIONS, note="; ".join(x for x in (
                f"not interleaved, and the conditions differed ({said}): the ratio mixes the stacks with the "
                "machine's change; re-run them interleaved (repro bench --stack OLD --stack NEW)", ratio.note) if x))
        rows.append(ThroughputRow(pair.key, pair.old.settings, _side(a, old_eff), _side(b, new_eff), ratio,
                                  (*notes, *judged.warnings)))
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
                                verdicts.count(stats.SAME), verdicts.count(stats.NOT_ENOUGH),
                                verdicts.count(stats.CONDITIONS), verdicts.count(stats.EQUIVALENT),
                                verdicts.count(stats.INCONCLUSIVE)))
    return tuple(out)
