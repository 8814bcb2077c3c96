"""Figures derived from raw samples (pure): throughput per point, speedup, scaling efficiency.

    images/sec   = items per global step / mean global step time (warm-up excluded);
                   for a run whose program reported its own figure (an imported log's ``total images/sec``,
                   a published table's figure) that figure, the samples giving only its spread
    speedup(N)   = images/sec(N workers) / images/sec(1 worker) of the same sweep
    efficiency   = speedup(N) / N                     (seed 001: "speedup per GPU")
    across-node  = images/sec(N on H hosts) / (H x images/sec(N/H workers on one host))

Weak scaling keeps the per-worker batch fixed; strong scaling keeps the global batch fixed
(seed 002). Either way the baseline is the 1-worker point with the same remaining settings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from repro.results import stats
from repro.results.record import RunRecord, Settings


def global_step_times(record: RunRecord) -> list[float]:
    """Per-step time of the whole job: the mean over ranks of each measured step."""
    series = [r.step_times for r in record.ranks if r.step_times]
    if not series:
        return []
    n = min(len(s) for s in series)
    return [float(x) for x in np.mean([s[:n] for s in series], axis=0)]


def items_per_step(record: RunRecord) -> int:
    """Items (images) one global step processes: the sum of every rank's batch."""
    return sum(r.items_per_step for r in record.ranks)


def reported(record: RunRecord) -> float | None:
    """The figure another program gave for the run: a published table's, or an imported log's own summary."""
    if record.published is not None:
        return record.published.images_per_sec
    return record.reported_images_per_sec


def throughput(record: RunRecord) -> float | None:
    """images/sec of one record: the reported figure when there is one, else from the step samples."""
    if record.status != "ok":
        return None
    figure = reported(record)
    if figure is not None:
        return figure
    times = global_step_times(record)
    if not times:
        return None
    return items_per_step(record) / float(np.mean(times))


def sample_times(record: RunRecord) -> list[float]:
    """Global step times as the statistics use them. With a reported figure they are scaled so that their
    throughput is that figure: the program's summary gives the level, the samples the spread."""
    times = global_step_times(record)
    figure = record.reported_images_per_sec
    if not times or figure is None or record.published is not None:
        return times
    scale = items_per_step(record) / float(np.mean(times)) / figure
    return [t * scale for t in times]


@dataclass(frozen=True)
class Point:
    """All repeats of one benchmark point of one stack."""

    stack: str
    stack_hash: str
    settings: Settings
    records: tuple[RunRecord, ...]
    failed: int = 0
    estimate: stats.Estimate | None = None

    @property
    def workers(self) -> int:
        return self.settings.workers

    @property
    def images_per_sec(self) -> float | None:
        return self.estimate.value if self.estimate else None

    @property
    def per_worker(self) -> float | None:
        v = self.images_per_sec
        return v / self.workers if v is not None else None

    @property
    def repeat_values(self) -> list[float]:
        return [v for v in (throughput(r) for r in self.records) if v is not None]

    @property
    def groups(self) -> list[list[float]]:
        """Per-repeat global step times: the samples statistics use (see sample_times)."""
        return [sample_times(r) for r in self.records if r.published is None]


def point_key(record: RunRecord) -> tuple:
    return (record.stack.hash, record.settings.key())


def _estimate(records: Sequence[RunRecord], confidence: float) -> stats.Estimate | None:
    published = [r.published.images_per_sec for r in records if r.published is not None]
    if published:
        value = float(np.mean(published))
        return stats.Estimate(value, float("nan"), float("nan"), len(published), len(published))
    sampled = [r for r in records if global_step_times(r)]
    if len(sampled) < len(records) and any(reported(r) is not None for r in records):
        # some runs have only their figure: the figures' mean, without an interval
        values = [v for v in (throughput(r) for r in records) if v is not None]
        return stats.Estimate(float(np.mean(values)), float("nan"), float("nan"), len(values), len(values))
    if not sampled:
        return None
    groups = [sample_times(r) for r in sampled]
    return stats.throughput(groups, items_per_step(sampled[0]), confidence=confidence)


def points(records: Iterable[RunRecord], *, confidence: float = stats.DEFAULT_CONFIDENCE) -> list[Point]:
    """Group records into points (same stack hash and settings); failed repeats are counted, not used."""
    ok: dict[tuple, list[RunRecord]] = defaultdict(list)
    failed: dict[tuple, int] = defaultdict(int)
    first: dict[tuple, RunRecord] = {}
    for r in records:
        key = point_key(r)
        first.setdefault(key, r)
        if r.status == "ok":
            ok[key].append(r)
        else:
            failed[key] += 1
    out = []
    for key, rec in first.items():
        good = tuple(ok.get(key, ()))
        out.append(Point(rec.stack.name, rec.stack.hash, rec.settings, good, failed.get(key, 0),
                         _estimate(good, confidence) if good else None))
    return sorted(out, key=lambda p: (p.stack, p.settings.workload, str(p.settings.model),
                                      p.settings.batch_per_worker or 0, p.workers))


@dataclass(frozen=True)
class ScalingRow:
    """One row of the scaling table of seeds 000/001."""

    point: Point
    speedup: float | None
    efficiency: float | None
    across_node_efficiency: float | None = None
    baseline_workers: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def _series_key(p: Point) -> tuple:
    """Points of one scaling series differ only in worker/host counts (and the batch that follows)."""
    scaling = p.settings.scaling or "weak"
    drop = ("workers", "hosts", "global_batch") if scaling == "weak" else ("workers", "hosts", "batch_per_worker")
    return (p.stack_hash, p.settings.key(without=drop))


def scaling(pts: Iterable[Point]) -> list[ScalingRow]:
    """Speedup and efficiency of every point against the 1-worker point of its series."""
    series: dict[tuple, list[Point]] = defaultdict(list)
    for p in pts:
        series[_series_key(p)].append(p)
    rows: list[ScalingRow] = []
    for members in series.values():
        members.sort(key=lambda p: (p.workers, p.settings.hosts or 0))
        measured = [p for p in members if p.images_per_sec]
        base = measured[0] if measured else None
        for p in members:
            notes: list[str] = []
            if p.images_per_sec is None or base is None or base.images_per_sec is None:
                rows.append(ScalingRow(p, None, None, notes=("no successful run",) if p.failed else ()))
                continue
            speedup = p.images_per_sec / base.images_per_sec * base.workers
            if base.workers != 1:
                notes.append(f"baseline is the {base.workers}-worker point, assumed linear")
            across = None
            hosts = p.settings.hosts
            if hosts is not None and hosts > 1 and p.workers % hosts == 0:
                per_host = next((q for q in measured if q.settings.hosts == 1 and q.workers == p.workers // hosts),
                                None)
                if per_host and per_host.images_per_sec:
                    across = p.images_per_sec / (hosts * per_host.images_per_sec)
            rows.append(ScalingRow(p, speedup, speedup / p.workers, across, base.workers, tuple(notes)))
    return rows
