"""All-reduce sweeps compared per (path, backend, dtype, size) (pure).

Each record's ``metrics["results"]`` holds one row per tensor size with the raw latencies of both paths:
Horovod's (the row itself) and the raw MPI_Allreduce (``row["raw"]``, absent in older records); each
path is compared with the same path of the other side. The
bandwidth ratio NEW/OLD and its verdict come from the same statistics over runs as throughput
(repro.results.stats.compare), with a latency playing the part of a step time and the message's bytes
the part of the items per step: bytes / mean latency is the algorithm bandwidth, and the bus bandwidth
differs from it by a factor that is the same on both sides when the worker counts are (they are an
alignment key).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.compare.align import Key, Pair
from repro.compare.throughput import Options
from repro.results import stats
from repro.results.record import RunRecord

SizeKey = tuple[str, int]  # (dtype, bytes)
PathKey = tuple[str, str]  # (path: horovod or raw, backend)
PATHS = ("horovod", "raw")


@dataclass(frozen=True)
class AllreduceSide:
    """One side at one message size: repeats, median latency and median bus bandwidth (bytes/s)."""

    backend: str
    runs: int
    latency_median: float | None
    busbw_median: float | None


@dataclass(frozen=True)
class AllreduceRow:
    """One message size of one aligned point."""

    key: Key
    dtype: str
    elements: int
    bytes: int
    old: AllreduceSide
    new: AllreduceSide
    bandwidth: stats.RatioResult  # NEW/OLD bandwidth (>1: NEW moves data faster)
    path: str = "horovod"  # horovod (hvd.allreduce) or raw (MPI_Allreduce through mpi4py)

    @property
    def latency_ratio(self) -> float | None:
        """NEW/OLD median latency (<1: NEW is quicker)."""
        if self.old.latency_median and self.new.latency_median:
            return self.new.latency_median / self.old.latency_median
        return None

    @property
    def busbw_ratio(self) -> float | None:
        if self.old.busbw_median and self.new.busbw_median:
            return self.new.busbw_median / self.old.busbw_median
        return None

    @property
    def regression(self) -> bool:
        return self.bandwidth.verdict == stats.SLOWER


@dataclass
class _Size:
    elements: int = 0
    latencies: list[list[float]] | None = None
    busbw: list[float] | None = None


def _add(out: dict[PathKey, dict[SizeKey, _Size]], path: PathKey, row: dict[str, Any]) -> None:
    key = (str(row.get("dtype", "?")), int(row["bytes"]))
    size = out[path].setdefault(key, _Size(int(row.get("elements") or 0), [], []))
    size.latencies.append([float(x) for x in row.get("latencies") or []])
    if row.get("busbw_median") is not None:
        size.busbw.append(float(row["busbw_median"]))


def _sizes(records: Sequence[RunRecord]) -> dict[PathKey, dict[SizeKey, _Size]]:
    """(path, backend) -> (dtype, bytes) -> raw latencies per repeat and median bus bandwidths."""
    out: dict[PathKey, dict[SizeKey, _Size]] = defaultdict(dict)
    for r in records:
        if r.status != "ok":
            continue
        backend = str(r.metrics.get("backend") or r.settings.backend or "?")
        raw_backend = str(r.metrics.get("raw_backend") or "MPI_Allreduce")
        for row in r.metrics.get("results") or []:
            if not isinstance(row, dict) or "bytes" not in row:
                continue
            _add(out, ("horovod", backend), row)
            if isinstance(row.get("raw"), dict) and "bytes" in row["raw"]:
                _add(out, ("raw", raw_backend), row["raw"])
    return out


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _side(backend: str, size: _Size) -> AllreduceSide:
    pooled = [x for g in size.latencies or [] for x in g]
    return AllreduceSide(backend, len(size.latencies or []), _median(pooled), _median(size.busbw or []))


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


def allreduce_rows(pairs: Sequence[Pair], options: Options) -> tuple[tuple[AllreduceRow, ...], tuple[str, ...]]:
    """Rows for every path and message size found on both sides, and notes on those found on one side only."""
    rows: list[AllreduceRow] = []
    notes: list[str] = []
    for pair in pairs:
        a, b = _sizes(pair.old.records), _sizes(pair.new.records)
        for ob, nb in _backend_pairs(set(a), set(b)):
            for dtype, nbytes in sorted(a[ob].keys() | b[nb].keys(), key=lambda k: (k[0], k[1])):
                sa, sb = a[ob].get((dtype, nbytes)), b[nb].get((dtype, nbytes))
                if sa is None or sb is None:
                    where = "OLD" if sa is not None else "NEW"
                    notes.append(f"all-reduce {ob[0]} {dtype} {nbytes} bytes ({ob[1] if sa else nb[1]}): only in "
                                 f"{where}")
                    continue
                ratio = stats.compare(sa.latencies or [], nbytes, sb.latencies or [], nbytes,
                                      confidence=options.confidence, threshold=options.threshold,
                                      resamples=options.resamples, seed=options.seed)
                rows.append(AllreduceRow(pair.key, dtype, sa.elements or sb.elements, nbytes, _side(ob[1], sa),
                                         _side(nb[1], sb), ratio, ob[0]))
        for side, got, other in (("OLD", a, b), ("NEW", b, a)):
            notes += [f"all-reduce {p} path: not measured on {side}" for p in PATHS
                      if not any(k[0] == p for k in got) and any(k[0] == p for k in other)]
    return tuple(rows), tuple(notes)


def as_dict(row: AllreduceRow) -> dict[str, Any]:
    return {
        "path": row.path, "backend_old": row.old.backend, "backend_new": row.new.backend, "dtype": row.dtype,
        "elements": row.elements, "bytes": row.bytes,
        "latency_median_old": row.old.latency_median, "latency_median_new": row.new.latency_median,
        "latency_ratio": row.latency_ratio,
        "busbw_median_old": row.old.busbw_median, "busbw_median_new": row.new.busbw_median,
        "busbw_ratio": row.busbw_ratio,
        "bandwidth_ratio": row.bandwidth.ratio, "low": row.bandwidth.low, "high": row.bandwidth.high,
        "verdict": row.bandwidth.verdict, "runs_old": row.old.runs, "runs_new": row.new.runs,
    }
