"""Figures derived from raw samples (pure): images/sec of a run and of a point, speedup, efficiency.

Every figure is defined once, here, and every table, JSON, CSV, plot and comparison calls these
functions (docs/statistics.md explains the choices):

    step times   of the job: those of its slowest rank (the largest total time) over the measured window
                 (after the workload's fixed warm-up, or from the detected steady state: --warmup auto)
    images/sec   of a run: global batch x steps / that rank's total time = global batch / its mean step
                 time. Imported runs: the figure their log reported (record.reported_images_per_sec);
                 published rows: theirs
    images/sec   of a point: the geometric mean of its runs' figures, with a t interval over runs
    speedup(N)   = images/sec(N workers) / images/sec(1 worker) of the same series
    efficiency   = speedup(N) / N                     (seed 001: "speedup per GPU")
    across-node  = images/sec(N on H hosts) / (H x images/sec(N/H workers on one host))

A series without its 1-worker point has no speedup or efficiency (None, printed "-") unless a baseline
worker count is named; then speedup(N) = images/sec(N) / images/sec(B) x B, an assumption said in notes.
Weak scaling keeps the per-worker batch fixed; strong scaling the global batch (seed 002).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from repro.results import conditions, stats, steady
from repro.results.memo import Memo
from repro.results.record import RunRecord, Settings

# Where an imported run keeps the figure its log printed (e.g. tf_cnn_benchmarks' `total images/sec`):
# the first of these fields holding a positive number is the run's figure. Only for origin "import".
REPORTED_FIELDS = ("reported_images_per_sec", "total_images_per_sec")
MEASURED, REPORTED, PUBLISHED = "measured", "reported", "published"
_MEMO = Memo()  # a run's step times and images/sec, once per command (repro.results.memo)


def global_step_times(record: RunRecord, warmup: str = steady.FIXED) -> list[float]:
    """The job's measured step times: the slowest rank's, the one whose window took longest.

    Ranks wait for each other at every step's all-reduce, so their totals differ only by the skew at the
    window's edges; the slowest total is the job's time. (A per-step maximum would add up every
    rank's timing jitter instead.)
    """
    return list(_MEMO.get(record, ("steps", warmup), lambda: _global_step_times(record, warmup)))


def _global_step_times(record: RunRecord, warmup: str) -> tuple[float, ...]:
    ranks = [r for r in record.ranks if r.step_times]
    if not ranks:
        return ()
    start = steady.run_start(record) if warmup == steady.AUTO else None
    series = [steady.window(r, warmup, start) for r in ranks]
    n = min(len(s) for s in series)
    slowest = max(series, key=lambda s: sum(s[:n]))
    return tuple(float(x) for x in slowest[:n])


def items_per_step(record: RunRecord) -> int:
    """Items (images) one global step processes: the sum of every rank's batch."""
    return sum(r.items_per_step for r in record.ranks)


def reported(record: RunRecord) -> float | None:
    """The figure a source printed for this run: a published row's, or an imported log's own summary."""
    if record.published is not None:
        return record.published.images_per_sec
    if record.reported_images_per_sec is not None:
        return record.reported_images_per_sec
    if record.origin != "import":  # records imported before the field existed kept it in metrics
        return None
    for name in REPORTED_FIELDS:
        value = record.metrics.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def source(record: RunRecord) -> str:
    """Where a run's figure comes from: measured (its samples), reported (its log) or published."""
    return _MEMO.get(record, "source", lambda: _source(record))


def _source(record: RunRecord) -> str:
    if record.published is not None:
        return PUBLISHED
    return REPORTED if reported(record) is not None else MEASURED


def measured_throughput(record: RunRecord, warmup: str = steady.FIXED) -> float | None:
    """images/sec from the run's own samples: global batch / mean step time of the slowest rank."""
    return stats.rate(global_step_times(record, warmup), items_per_step(record))


def throughput(record: RunRecord, warmup: str = steady.FIXED) -> float | None:
    """THE images/sec of one run (module docstring); None for a failed run or one without samples."""
    if record.status != "ok":
        return None
    return _MEMO.get(record, ("throughput", warmup), lambda: _throughput(record, warmup))


def _throughput(record: RunRecord, warmup: str) -> float | None:
    figure = reported(record)
    return figure if figure is not None else measured_throughput(record, warmup)


def stored_warmup(record: RunRecord) -> str:
    """The warm-up window the record's stored figure was derived with (metrics["warmup"]; fixed when unsaid)."""
    return _MEMO.get(record, "stored_warmup",
                     lambda: steady.AUTO if record.metrics.get("warmup") == steady.AUTO else steady.FIXED)


def common_warmup(records: Iterable[RunRecord]) -> str:
    """auto when every record's figure was stored with --warmup auto, else fixed: what re-printing them uses
    unless told otherwise, so that the same runs give the same numbers."""
    modes = {stored_warmup(r) for r in records}
    return steady.AUTO if modes == {steady.AUTO} else steady.FIXED


def with_figure(record: RunRecord, warmup: str | None = None) -> RunRecord:
    """The record with metrics["images_per_sec"] set to throughput() under `warmup` (default: the window it was
    stored with), and metrics["warmup"] saying which when it is auto; a different workload figure is kept aside.

    For the code that stores records: the stored figure is the one every view shows.
    """
    warmup = warmup or stored_warmup(record)
    figure = throughput(record, warmup)
    metrics = dict(record.metrics)
    own = metrics.get("images_per_sec")
    if own is not None and own != figure and "images_per_sec_workload" not in metrics and "warmup" not in metrics:
        metrics["images_per_sec_workload"] = own
    metrics["images_per_sec"] = figure
    if warmup == steady.AUTO:
        metrics["warmup"] = steady.AUTO
    else:
        metrics.pop("warmup", None)
    return record.model_copy(update={"metrics": metrics})


def for_storage(record: RunRecord, warmup: str | None = None) -> RunRecord:
    """The record as the store keeps it: each rank's detected warm-up, and the one images/sec in metrics (derived
    with `warmup`: the sweep's --warmup)."""
    return with_figure(record.model_copy(update={"ranks": steady.annotate(record.ranks)}), warmup)


def sample_count(record: RunRecord, warmup: str = steady.FIXED) -> int:
    """How many global step times the run has (those of sample_times)."""
    return _MEMO.get(record, ("samples", warmup), lambda: len(global_step_times(record, warmup)))


def sample_times(record: RunRecord, warmup: str = steady.FIXED) -> list[float]:
    """Global step times as the statistics use them. With a reported figure they are scaled so that their
    throughput is that figure: the program's summary gives the level, the samples the spread."""
    times = global_step_times(record, warmup)
    figure = reported(record)
    if not times or figure is None or record.published is not None:
        return times
    scale = items_per_step(record) / (sum(times) / len(times)) / figure
    return [t * scale for t in times]


@dataclass(frozen=True)
class Point:
    """All repeats (runs) of one benchmark point of one stack."""

    stack: str
    stack_hash: str
    settings: Settings
    records: tuple[RunRecord, ...]
    failed: int = 0
    estimate: stats.Estimate | None = None
    warmup: str = steady.FIXED
    notes: tuple[str, ...] = ()

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
        """Each run's images/sec (the samples of the run-level statistics)."""
        return [v for v in (throughput(r, self.warmup) for r in self.records) if v is not None]

    @property
    def run_steps(self) -> list[list[float]]:
        """Each measured run's global step times (for step-noise intervals); empty for published points."""
        if PUBLISHED in self.sources:
            return []
        return [s for s in (sample_times(r, self.warmup) for r in self.records) if s]

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(source(r) for r in self.records))


def settings_key(settings: Settings) -> tuple:
    """settings.key(), once per settings object (runs read from the index share one per distinct settings)."""
    return _MEMO.get(settings, "key", settings.key)


def point_key(record: RunRecord) -> tuple:
    return (record.stack.hash, settings_key(record.settings))


# A point's estimate by (confidence, window, its runs): a comparison estimates each point twice (as an aligned
# point, then in its side's scaling series); the runs are kept with the value, so their ids are never reused.
_ESTIMATES: dict[tuple, tuple[tuple[RunRecord, ...], stats.Estimate | None]] = {}


def estimate(point: Point, confidence: float = stats.DEFAULT_CONFIDENCE) -> stats.Estimate | None:
    """A point's figure and interval: over runs from 2 runs on; one run: its step noise (scope "steps")."""
    key = (confidence, point.warmup, *map(id, point.records))
    hit = _ESTIMATES.get(key)
    if hit is not None:  # the same ids, of runs kept alive by the entry: the same runs
        return hit[1]
    if len(_ESTIMATES) >= 10_000:
        _ESTIMATES.clear()
    value = _estimate(point, confidence)
    _ESTIMATES[key] = (point.records, value)
    return value


def _estimate(point: Point, confidence: float) -> stats.Estimate | None:
    values = point.repeat_values
    samples = 0 if PUBLISHED in point.sources else sum(sample_count(r, point.warmup) for r in point.records)
    if len(values) >= stats.MIN_RUNS or not values:
        return stats.run_estimate(values, confidence=confidence, samples=samples)
    steps = point.run_steps  # one run: its step times give the interval (only here are they read)
    if len(steps) == 1:
        return stats.step_estimate(values[0], steps, confidence=confidence)
    return stats.run_estimate(values, confidence=confidence, samples=samples)


def points(records: Iterable[RunRecord], *, confidence: float = stats.DEFAULT_CONFIDENCE,
           warmup: str = steady.FIXED) -> list[Point]:
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
        busy = conditions.busy_note(good)
        p = Point(rec.stack.name, rec.stack.hash, rec.settings, good, failed.get(key, 0), None, warmup,
                  (*steady.summary(good, warmup), *((busy,) if busy else ())))
        out.append(p if not good else _with_estimate(p, confidence))
    return sorted(out, key=lambda p: (p.stack, p.settings.workload, str(p.settings.model),
                                      p.settings.batch_per_worker or 0, p.workers))


def _with_estimate(p: Point, confidence: float) -> Point:
    return Point(p.stack, p.stack_hash, p.settings, p.records, p.failed, estimate(p, confidence), p.warmup, p.notes)


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


def _baseline(members: Sequence[Point], workers: int) -> Point | None:
    """The series' measured point with `workers` workers, on one host where there is one."""
    found = [p for p in members if p.workers == workers and p.images_per_sec]
    found.sort(key=lambda p: p.settings.hosts)
    return found[0] if found else None


def _across_node(p: Point, members: Sequence[Point]) -> float | None:
    hosts = p.settings.hosts
    if hosts is None or hosts <= 1 or p.workers % hosts or not p.images_per_sec:
        return None
    per_host = next((q for q in members if q.settings.hosts == 1 and q.workers == p.workers // hosts
                     and q.images_per_sec), None)
    return p.images_per_sec / (hosts * per_host.images_per_sec) if per_host else None


def _row(p: Point, base: Point | None, members: Sequence[Point], named: bool) -> ScalingRow:
    notes = list(p.notes)
    if p.images_per_sec is None:
        return ScalingRow(p, None, None, notes=("no successful run",) if p.failed else tuple(notes))
    across = _across_node(p, members)
    if base is None or base.images_per_sec is None:
        what = "the named baseline point" if named else "the 1-worker point"
        notes.append(f"series without {what}: speedup and efficiency not measured")
        return ScalingRow(p, None, None, across, None, tuple(notes))
    speedup = p.images_per_sec / base.images_per_sec * base.workers
    if base.workers != 1:
        notes.append(f"baseline: the {base.workers}-worker point, assumed {base.workers}x one worker")
    return ScalingRow(p, speedup, speedup / p.workers, across, base.workers, tuple(notes))


def scaling(pts: Iterable[Point], *, baseline_workers: int | None = None) -> list[ScalingRow]:
    """Speedup and efficiency of every point against the 1-worker point of its series (or a named one).

    Without that point a series has no speedup or efficiency (None): a figure not measured is never shown.
    """
    series: dict[tuple, list[Point]] = defaultdict(list)
    for p in pts:
        series[_series_key(p)].append(p)
    rows: list[ScalingRow] = []
    for members in series.values():
        members.sort(key=lambda p: (p.workers, p.settings.hosts or 0))
        base = _baseline(members, baseline_workers or 1)
        rows += [_row(p, base, members, baseline_workers is not None) for p in members]
    return rows
