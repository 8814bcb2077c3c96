"""All-reduce sweeps compared per (path, backend, dtype, size) (pure).

Each record's metrics (repro.compare.kinds.allreduce.metrics) hold one row per tensor size with the raw
latencies of both paths: Horovod's (the row itself) and the raw MPI_Allreduce (its `raw`, absent in older
records); each path is compared with the same path of the other side.

One definition per figure, as for images/sec (docs/statistics.md): a run's time at a size is the mean of its
timed iterations; a side's time is the geometric mean of its runs' times; its bus bandwidth is size / time x
2(n-1)/n (nccl-tests' definition, the factor the same on both sides: the worker count is an alignment key).
NEW/OLD bandwidth is then exactly OLD time / NEW time, so the table gives one ratio and its interval: Welch's t
on the logs of the runs' figures (a paired t for interleaved runs). Below two runs a side there is no run-to-run
spread to measure: no interval and no verdict ("not enough runs"), never an interval from iteration noise,
which for latencies with rare long stalls says nothing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.compare.align import Key, Pair, pair_id
from repro.compare.kinds.allreduce.metrics import AllreduceMetrics, PathResult
from repro.compare.options import Options
from repro.results import stats
from repro.results.record import RunRecord

SizeKey = tuple[str, int]  # (dtype, bytes)
PathKey = tuple[str, str]  # (path: horovod or raw, backend)
PATHS = ("horovod", "raw")


@dataclass(frozen=True)
class AllreduceSide:
    """One side at one message size: runs, time (geometric mean over runs of each run's mean latency, seconds)
    and the bus bandwidth that time gives (bytes/s)."""

    backend: str
    runs: int
    time_s: float | None
    busbw: float | None


@dataclass(frozen=True)
class AllreduceRow:
    """One message size of one aligned point."""

    key: Key
    dtype: str
    elements: int
    bytes: int
    old: AllreduceSide
    new: AllreduceSide
    bandwidth: stats.RatioResult  # NEW/OLD bus bandwidth (>1: NEW moves data faster) = OLD time / NEW time
    path: str = "horovod"  # horovod (hvd.allreduce) or raw (MPI_Allreduce through mpi4py)

    @property
    def time_ratio(self) -> float | None:
        """NEW/OLD time (<1: NEW is quicker): the inverse of the bandwidth ratio, from the same runs."""
        return 1 / self.bandwidth.ratio if self.bandwidth.ratio else None

    @property
    def regression(self) -> bool:
        return self.bandwidth.verdict == stats.SLOWER


@dataclass
class _Size:
    elements: int = 0
    runs: list[tuple[str | None, float]] | None = None  # (pair id, the run's mean latency in seconds)


def _mean_latency(row: PathResult) -> float | None:
    values = [float(x) for x in row.latencies if math.isfinite(x) and x > 0]
    if values:
        return sum(values) / len(values)
    mean = row.latency_mean  # a record without its samples: the figure it kept
    return float(mean) if mean is not None and mean > 0 else None


def _add(out: dict[PathKey, dict[SizeKey, _Size]], path: PathKey, row: PathResult, nbytes: int,
         pair: str | None) -> None:
    size = out[path].setdefault((row.dtype, nbytes), _Size(row.elements, []))
    mean = _mean_latency(row)
    if mean is not None and size.runs is not None:
        size.runs.append((pair, mean))


def _sizes(records: Sequence[RunRecord]) -> dict[PathKey, dict[SizeKey, _Size]]:
    """(path, backend) -> (dtype, bytes) -> each run's mean latency (with its interleaving pair id)."""
    out: dict[PathKey, dict[SizeKey, _Size]] = defaultdict(dict)
    for r in records:
        if r.status != "ok":
            continue
        m = AllreduceMetrics.model_validate(r.metrics)
        backend = str(m.backend or r.settings.backend or "?")
        raw_backend = m.raw_backend or "MPI_Allreduce"
        for row in m.results:
            _add(out, ("horovod", backend), row, row.bytes, pair_id(r))
            if row.raw is not None and row.raw.bytes is not None:
                _add(out, ("raw", raw_backend), row.raw, row.raw.bytes, pair_id(r))
    return out


def _side(backend: str, size: _Size, nbytes: int, factor: float) -> AllreduceSide:
    times = [t for _, t in size.runs or []]
    time = stats.geometric_mean(times)
    return AllreduceSide(backend, len(times), time, nbytes / time * factor if time else None)


def _ratio(a: _Size, b: _Size, options: Options) -> stats.RatioResult:
    """NEW/OLD bandwidth over runs: paired where the runs were interleaved, Welch's t otherwise."""
    conf, thr = options.confidence, options.threshold
    old = {p: t for p, t in a.runs or [] if p is not None}
    paired = [(1 / old[p], 1 / t) for p, t in b.runs or [] if p is not None and p in old]
    if len(paired) >= stats.MIN_RUNS:
        return stats.compare_pairs(paired, confidence=conf, threshold=thr)
    return stats.compare_runs([1 / t for _, t in a.runs or []], [1 / t for _, t in b.runs or []], confidence=conf,
                              threshold=thr)


def _backend_pairs(old: set[PathKey], new: set[PathKey]) -> list[tuple[PathKey, PathKey]]:
    """Which (path, backend) of OLD is compared with which of NEW: same path, same backend, or the one
    backend of each side when that is what changed."""
    out = []
    for path in PATHS:
        a = {b for p, b in old if p == path}
        b = {b for p, b in new if p == path}
        if a == b:
            out += [((path, x), (path, x)) for x in sorted(a)]
        elif len(a) == 1 and len(b) == 1:  # the backend is what changed
            out.append(((path, next(iter(a))), (path, next(iter(b)))))
        else:
            out += [((path, x), (path, x)) for x in sorted(a & b)]
    return out


def _bus_factor(records: Sequence[RunRecord], workers: int) -> float:
    for r in records:
        factor = AllreduceMetrics.model_validate(r.metrics).bus_factor
        if factor is not None and factor > 0:
            return float(factor)
    return 2.0 * (workers - 1) / workers if workers > 1 else 1.0


def _one_sided(path: PathKey, side: str, keys: list[SizeKey]) -> str:
    """One line for the sizes one side measured and the other did not (not a line per size)."""
    out = []
    for dtype in sorted({d for d, _ in keys}):
        sizes = sorted(n for d, n in keys if d == dtype)
        span = f"{sizes[0]:,} bytes" if len(sizes) == 1 else f"{sizes[0]:,} to {sizes[-1]:,} bytes"
        out.append(f"{len(sizes)} size{'s' if len(sizes) != 1 else ''} of {dtype} ({span})")
    return f"all-reduce {path[0]} path ({path[1]}): measured only in {side}: {'; '.join(out)}"


def allreduce_rows(pairs: Sequence[Pair], options: Options) -> tuple[tuple[AllreduceRow, ...], tuple[str, ...]]:
    """Rows for every path and message size found on both sides, and one note per path and side for the sizes
    measured on one side only."""
    rows: list[AllreduceRow] = []
    notes: list[str] = []
    for pair in pairs:
        a, b = _sizes(pair.old.records), _sizes(pair.new.records)
        workers = int(dict(pair.key).get("workers") or pair.old.records[0].settings.workers or 1)
        factor = _bus_factor([*pair.old.records, *pair.new.records], workers)
        for ob, nb in _backend_pairs(set(a), set(b)):
            only: dict[str, list[SizeKey]] = {"OLD": [], "NEW": []}
            for dtype, nbytes in sorted(a[ob].keys() | b[nb].keys(), key=lambda k: (k[0], k[1])):
                sa, sb = a[ob].get((dtype, nbytes)), b[nb].get((dtype, nbytes))
                if sa is None or sb is None:
                    only["OLD" if sa is not None else "NEW"].append((dtype, nbytes))
                    continue
                rows.append(AllreduceRow(pair.key, dtype, sa.elements or sb.elements, nbytes,
                                         _side(ob[1], sa, nbytes, factor), _side(nb[1], sb, nbytes, factor),
                                         _ratio(sa, sb, options), ob[0]))
            notes += [_one_sided(ob if side == "OLD" else nb, side, keys) for side, keys in only.items() if keys]
        for side, got, other in (("OLD", a, b), ("NEW", b, a)):
            notes += [f"all-reduce {p} path: not measured on {side}" for p in PATHS
                      if not any(k[0] == p for k in got) and any(k[0] == p for k in other)]
    return tuple(rows), tuple(dict.fromkeys(notes))


def as_dict(row: AllreduceRow) -> dict[str, Any]:
    return {
        "path": row.path, "backend_old": row.old.backend, "backend_new": row.new.backend, "dtype": row.dtype,
        "elements": row.elements, "bytes": row.bytes,
        "time_s_old": row.old.time_s, "time_s_new": row.new.time_s, "time_ratio": row.time_ratio,
        "busbw_old": row.old.busbw, "busbw_new": row.new.busbw,
        "busbw_ratio": row.bandwidth.ratio, "low": row.bandwidth.low, "high": row.bandwidth.high,
        "method": row.bandwidth.method or None, "verdict": row.bandwidth.verdict,
        "runs_old": row.old.runs, "runs_new": row.new.runs,
    }
