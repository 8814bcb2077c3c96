"""The allreduce kind's end-of-sweep report (pure, from records): per message size, both paths side by side
(Horovod's and the raw MPI_Allreduce), nccl-tests' way: time, algbw and busbw in GB/s, #wrong, the Horovod/raw
ratio and busbw as a fraction of the link, with the average bus bandwidth.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.compare.kinds.allreduce.metrics import AllreduceMetrics, PathResult, SizeResult
from repro.formats import Column, Document, Table, Text, number, percent, render
from repro.results.record import RunRecord
from repro.workloads.catalog import kind_of

GB = 1e9  # bytes per second in one GB/s (nccl-tests' unit)
GBIT = 1e9 / 8  # bytes per second in one Gbit/s (link speeds)
PATHS = ("horovod", "raw")
PATH_LABEL = {"horovod": "hvd", "raw": "raw"}


def link_gbps(record: RunRecord) -> float | None:
    """The slowest link among the record's hosts (Gbit/s), from the facts `repro prepare` gathered."""
    speeds = []
    for host in record.hosts:
        facts = record.facts.get(host.name)
        # the facts keep the speed of the host's MPI/NCCL interface (repro_interface)
        value = facts.interface.link_gbps if facts else None
        if value is not None and value > 0:
            speeds.append(float(value))
    return min(speeds) if speeds else None


# -- all-reduce -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PathFigures:
    """One all-reduce path at one message size, over a point's runs: median latency, bandwidths, wrong elements."""

    latency_s: float | None
    algbw: float | None  # bytes/s
    busbw: float | None  # bytes/s
    wrong: int | None  # elements of the result that were not the expected sum (None: not checked)


@dataclass(frozen=True)
class SizeRow:
    """One message size: both paths."""

    dtype: str
    elements: int
    bytes: int
    horovod: PathFigures
    raw: PathFigures | None

    @property
    def horovod_over_raw(self) -> float | None:
        """Horovod's bus bandwidth over the raw path's (1: Horovod gets all the fabric gives)."""
        if self.raw and self.raw.busbw and self.horovod.busbw is not None:
            return self.horovod.busbw / self.raw.busbw
        return None


@dataclass(frozen=True)
class AllreduceSweep:
    """The sizes of one all-reduce point (a stack, a worker count, a controller) over its runs."""

    stack: str
    stack_hash: str
    workers: int
    hosts: int | None
    backend: str
    raw_backend: str | None
    raw_missing: str | None
    framework_path: str  # what the hvd columns measured (Horovod's allreduce, or torch.distributed.all_reduce)
    link_gbps: float | None
    bus_factor: float
    runs: int
    sizes: tuple[SizeRow, ...]
    framework: str = "hvd"  # the framework path's short name in columns: hvd (Horovod), torch (torch.distributed)

    @property
    def framework_name(self) -> str:
        """The framework path's name in sentences: Horovod, or torch.distributed."""
        return "torch.distributed" if self.framework == "torch" else "Horovod"

    def average_busbw(self, path: str) -> float | None:
        """Mean bus bandwidth over the sizes (bytes/s), as nccl-tests' "Avg bus bandwidth"."""
        values = [f.busbw for s in self.sizes if (f := getattr(s, path)) is not None and f.busbw is not None]
        return sum(values) / len(values) if values else None

    def of_link(self, busbw: float | None) -> float | None:
        return busbw / (self.link_gbps * GBIT) if busbw is not None and self.link_gbps else None

    @property
    def has_raw(self) -> bool:
        return any(s.raw is not None for s in self.sizes)


def _path(rows: Sequence[PathResult], nbytes: int, factor: float, wrong: Sequence[float | None]) -> PathFigures:
    """A path's figures from its result rows of every run: the median of the pooled latencies."""
    pooled = [float(x) for r in rows for x in r.latencies]
    if not pooled:
        pooled = [float(r.latency_median) for r in rows if r.latency_median]
    latency = statistics.median(pooled) if pooled else None
    algbw = nbytes / latency if latency else None
    counted = [int(w) for w in wrong if w is not None]
    return PathFigures(latency, algbw, algbw * factor if algbw is not None else None,
                       sum(counted) if counted else None)


def _framework_path(record: RunRecord, m: AllreduceMetrics) -> str:
    """What the `hvd` columns measured: Horovod's allreduce with its controller, cycle time and fusion threshold, or
    the path a framework's own all-reduce workload names (torch_allreduce: torch.distributed.all_reduce)."""
    backend = str(m.backend or record.settings.backend or "?")
    if m.path:
        return f"{_framework_label(m)}: the framework's all-reduce, {m.path}"
    return f"hvd: Horovod's allreduce, {backend} controller, {_horovod_settings(record)}"


def _framework_label(m: AllreduceMetrics) -> str:
    """The framework path's column name: torch for torch.distributed's all-reduce, hvd for Horovod's."""
    return "torch" if m.path and m.path.startswith("torch") else "hvd"


def _horovod_settings(record: RunRecord) -> str:
    """Horovod's cycle time and fusion threshold as the run had them (flags or the stack's env)."""
    resolved = record.resolved
    cycle = resolved.get("cycle_time_ms") or record.env.get("HOROVOD_CYCLE_TIME")
    fusion = resolved.get("fusion_threshold") or record.env.get("HOROVOD_FUSION_THRESHOLD")
    said = [f"cycle time {cycle} ms" if cycle else "", f"fusion threshold {fusion} bytes" if fusion else ""]
    return ", ".join(s for s in said if s) or "Horovod's default cycle time and fusion threshold"


def _sweep(group: Sequence[RunRecord], link: float | None) -> AllreduceSweep:
    first = group[0]
    read = [AllreduceMetrics.model_validate(rec.metrics) for rec in group]
    m = read[0]
    n = first.settings.workers
    factor = float(m.bus_factor or (2.0 * (n - 1) / n))
    by_size: dict[tuple[str, int], list[SizeResult]] = defaultdict(list)
    for stated in read:
        for row in stated.results:
            by_size[(row.dtype, row.bytes)].append(row)
    sizes = []
    for (dtype, nbytes), rows in sorted(by_size.items()):
        raws = [r.raw for r in rows if r.raw is not None]
        raw = _path(raws, nbytes, factor, [r.raw_wrong for r in rows]) if raws else None
        sizes.append(SizeRow(dtype, rows[0].elements, nbytes, _path(rows, nbytes, factor, [r.wrong for r in rows]),
                             raw))
    return AllreduceSweep(first.stack.name, first.stack.hash, n, first.settings.hosts,
                          str(m.backend or first.settings.backend or "?"), m.raw_backend,
                          m.raw_missing, _framework_path(first, m), link or link_gbps(first), factor,
                          len(group), tuple(sizes), _framework_label(m))


def allreduce_sweeps(records: Sequence[RunRecord], link: float | None = None) -> list[AllreduceSweep]:
    """One AllreduceSweep per point (stack and settings) of the successful all-reduce records."""
    groups: dict[tuple, list[RunRecord]] = defaultdict(list)
    for rec in records:
        if rec.status == "ok" and kind_of(rec.settings.workload) == "allreduce":  # Horovod's or torch.distributed's
            groups[(rec.stack.hash, rec.settings.key())].append(rec)
    return [_sweep(g, link) for g in groups.values()]


def _gbs(value: float | None) -> str:
    return number(value / GB if value is not None else None, 2)


def _wrong(value: int | None) -> str:
    return "-" if value is None else str(value)


def _per_gb(value: float | None) -> float | None:
    return value / GB if value is not None else None


def _size_data(sweep: AllreduceSweep, s: SizeRow) -> dict[str, Any]:
    out: dict[str, Any] = {"stack": sweep.stack, "stack_hash": sweep.stack_hash, "workers": sweep.workers,
                           "hosts": sweep.hosts, "backend": sweep.backend, "raw_backend": sweep.raw_backend,
                           "dtype": s.dtype, "elements": s.elements, "bytes": s.bytes}
    for name in PATHS:
        f: PathFigures | None = getattr(s, name)
        out |= {f"{name}_latency_s": f.latency_s if f else None, f"{name}_algbw_GBps": _per_gb(f.algbw) if f else None,
                f"{name}_busbw_GBps": _per_gb(f.busbw) if f else None, f"{name}_wrong": f.wrong if f else None,
                f"{name}_of_link": sweep.of_link(f.busbw) if f else None}
    out |= {"horovod_over_raw": s.horovod_over_raw, "link_GBps": sweep.link_gbps / 8 if sweep.link_gbps else None,
            "runs": sweep.runs}
    return out


def _path_cells(sweep: AllreduceSweep, s: SizeRow, name: str) -> list[str]:
    f: PathFigures | None = getattr(s, name)
    if f is None:
        return ["-"] * 4
    return [number(f.latency_s * 1e6 if f.latency_s else None), _gbs(f.algbw), _gbs(f.busbw), _wrong(f.wrong)]


def _columns(sweep: AllreduceSweep, dtype_varies: bool) -> list[Column]:
    paths = [p for p in PATHS if p == "horovod" or sweep.has_raw]
    cols = [Column("size (B)", True), Column("count", True)] + ([Column("dtype")] if dtype_varies else [])
    for p in paths:
        label = sweep.framework if p == "horovod" else PATH_LABEL[p]
        cols += [Column(f"{label} time (us)", True), Column(f"{label} algbw", True), Column(f"{label} busbw", True),
                 Column(f"{label} #wrong", True)]
    cols += [Column(f"{sweep.framework}/raw", True)] if sweep.has_raw else []
    cols += [Column(f"{sweep.framework if p == 'horovod' else PATH_LABEL[p]}/link", True) for p in paths] \
        if sweep.link_gbps else []
    return cols


def _cells(sweep: AllreduceSweep, s: SizeRow, dtype_varies: bool) -> tuple[str, ...]:
    paths = [p for p in PATHS if p == "horovod" or sweep.has_raw]
    cells = [f"{s.bytes:,}", f"{s.elements:,}"] + ([s.dtype] if dtype_varies else [])
    for p in paths:
        cells += _path_cells(sweep, s, p)
    ratio = s.horovod_over_raw
    cells += [f"{ratio:.2f}x" if ratio is not None else "-"] if sweep.has_raw else []
    if sweep.link_gbps:
        cells += [percent(sweep.of_link(f.busbw)) if (f := getattr(s, p)) else "-" for p in paths]
    return tuple(cells)


def _allreduce_caption(sweep: AllreduceSweep, dtypes: list[str]) -> list[str]:
    where = f"{sweep.workers} worker{'s' if sweep.workers != 1 else ''}" + (
        f" on {sweep.hosts} host{'s' if sweep.hosts != 1 else ''}" if sweep.hosts else "")
    runs = f"{sweep.runs} run{'s' if sweep.runs != 1 else ''}"
    dtype = f" · {dtypes[0]}" if len(dtypes) == 1 else ""
    raw = (f"raw: {sweep.raw_backend}" if sweep.raw_backend else f"raw path not measured: {sweep.raw_missing}"
           if sweep.raw_missing else "raw path not recorded (a record from before it was measured)")
    lines = [f"stack {sweep.stack} (hash {sweep.stack_hash}) · {where} · {runs}{dtype}",
             f"{sweep.framework_path} · {raw}",
             f"time: median latency of one all-reduce (us), over the timed iterations of the {runs} pooled (the "
             "lines printed live during a sweep: rank 0's median in one run)",
             "algbw = size / time, busbw = algbw x 2(n-1)/n, in GB/s = 1e9 bytes/s (nccl-tests' definitions)",
             "#wrong: elements of the result that are not the expected sum n(n+1)/2"]
    if sweep.has_raw:
        name = sweep.framework_name
        lines.append(f"{sweep.framework}/raw: {name}'s busbw over the raw path's (1.00x: {name} gets all that the "
                     "fabric gives)")
    if sweep.link_gbps:
        lines.append(f"link: {sweep.link_gbps:g} Gbit/s = {sweep.link_gbps / 8:g} GB/s (the slowest host "
                     "interface); /link: busbw as a fraction of it")
    else:
        lines.append("link speed unknown (repro prepare gathers it, or --link-gbps)")
    return lines


def average_line(sweep: AllreduceSweep) -> str:
    """nccl-tests' "Avg bus bandwidth", for each path."""
    parts = [f"{sweep.framework_name if p == 'horovod' else 'raw'} {_gbs(sweep.average_busbw(p))} GB/s" for p in PATHS
             if p == "horovod" or sweep.has_raw]
    return (f"average bus bandwidth: {', '.join(parts)} (mean over the {len(sweep.sizes)} sizes, as nccl-tests' "
            "\"Avg bus bandwidth\")")


def _allreduce_notes(sweep: AllreduceSweep) -> list[str]:
    notes = [average_line(sweep)]
    wrong = [(p, s) for s in sweep.sizes for p in PATHS if (f := getattr(s, p)) is not None and f.wrong]
    if wrong:
        notes.append("WRONG RESULTS: " + "; ".join(f"{p} {s.dtype} {s.bytes:,} bytes: {getattr(s, p).wrong} "
                                                   "elements" for p, s in wrong))
    return notes


def allreduce_table(sweep: AllreduceSweep) -> Table:
    """One point's sizes, both paths side by side."""
    dtypes = sorted({s.dtype for s in sweep.sizes})
    return Table(tuple(_columns(sweep, len(dtypes) > 1)),
                 tuple(_cells(sweep, s, len(dtypes) > 1) for s in sweep.sizes),
                 tuple(_size_data(sweep, s) for s in sweep.sizes), title="All-reduce",
                 caption=tuple(_allreduce_caption(sweep, dtypes)), notes=tuple(_allreduce_notes(sweep)),
                 name="allreduce")


def allreduce_document(records: Sequence[RunRecord], link: float | None = None) -> Document:
    """The all-reduce tables of these records; json gets every point with its sizes and averages."""
    sweeps = allreduce_sweeps(records, link)
    data = [{"stack": s.stack, "stack_hash": s.stack_hash, "workers": s.workers, "hosts": s.hosts,
             "backend": s.backend, "raw_backend": s.raw_backend, "raw_missing": s.raw_missing,
             "link_gbps": s.link_gbps, "runs": s.runs,
             "average_busbw_GBps": {p: (v / GB if (v := s.average_busbw(p)) is not None else None) for p in PATHS},
             "sizes": [_size_data(s, row) for row in s.sizes]} for s in sweeps]
    if not sweeps:
        return Document((Text(("no successful all-reduce run",)),), data=[])
    return Document(tuple(allreduce_table(s) for s in sweeps), data=data)


def allreduce_report(records: Sequence[RunRecord], link_gbps: float | None = None, fmt: str = "table") -> str:
    return render(allreduce_document(records, link_gbps), fmt)
