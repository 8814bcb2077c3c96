"""The built-in kinds' end-of-sweep reports `repro bench` prints, as documents (pure, from records).

Which report a sweep gets is its comparison kind's choice (repro.compare.kind.sweep_document).

CNN sweeps: the scaling table of seeds 000/001 (repro.results.report). All-reduce sweeps: per message
size, both paths side by side (Horovod's and the raw MPI_Allreduce), nccl-tests' way: time, algbw and
busbw in GB/s, #wrong, the Horovod/raw ratio and busbw as a fraction of the link, with the average bus
bandwidth. Time-to-accuracy sweeps: time, epochs, accuracy and the compute/communication split.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.formats import Column, Document, Table, Text, constant_settings, number, percent, render
from repro.results.record import RunRecord

GB = 1e9  # bytes per second in one GB/s (nccl-tests' unit)
GBIT = 1e9 / 8  # bytes per second in one Gbit/s (link speeds)
PATHS = ("horovod", "raw")
PATH_LABEL = {"horovod": "hvd", "raw": "raw"}


def scaling_report(records: Sequence[RunRecord], fmt: str = "table", *, warmup: str = "fixed",
                   baseline_workers: int | None = None) -> str:
    """The scaling table (workers, images/sec, per worker, speedup, efficiency) of these records.

    warmup: "fixed" or "auto" (repro.results.steady); baseline_workers: a named baseline point.
    """
    from repro.results import metrics, report

    pts = metrics.points(records, warmup=warmup)
    return report.scaling_table(metrics.scaling(pts, baseline_workers=baseline_workers), fmt)


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


def _path(rows: Sequence[dict[str, Any]], nbytes: int, factor: float, wrong: Sequence[Any]) -> PathFigures:
    """A path's figures from its result rows of every run: the median of the pooled latencies."""
    pooled = [float(x) for r in rows for x in r.get("latencies") or []]
    if not pooled:
        pooled = [float(r["latency_median"]) for r in rows if r.get("latency_median")]
    latency = statistics.median(pooled) if pooled else None
    algbw = nbytes / latency if latency else None
    counted = [int(w) for w in wrong if isinstance(w, (int, float)) and not isinstance(w, bool)]
    return PathFigures(latency, algbw, algbw * factor if algbw is not None else None,
                       sum(counted) if counted else None)


def _framework_path(record: RunRecord) -> str:
    """What the `hvd` columns measured: Horovod's allreduce with its controller, cycle time and fusion threshold, or
    the path a framework's own all-reduce workload names (torch_allreduce: torch.distributed.all_reduce)."""
    backend = str(record.metrics.get("backend") or record.settings.backend or "?")
    path = record.metrics.get("path")
    if isinstance(path, str) and path:
        return f"{_framework_label(record)}: the framework's all-reduce, {path}"
    return f"hvd: Horovod's allreduce, {backend} controller, {_horovod_settings(record)}"


def _framework_label(record: RunRecord) -> str:
    """The framework path's column name: torch for torch.distributed's all-reduce, hvd for Horovod's."""
    path = record.metrics.get("path")
    return "torch" if isinstance(path, str) and path.startswith("torch") else "hvd"


def _horovod_settings(record: RunRecord) -> str:
    """Horovod's cycle time and fusion threshold as the run had them (flags or the stack's env)."""
    resolved = record.resolved
    cycle = resolved.get("cycle_time_ms") or record.env.get("HOROVOD_CYCLE_TIME")
    fusion = resolved.get("fusion_threshold") or record.env.get("HOROVOD_FUSION_THRESHOLD")
    said = [f"cycle time {cycle} ms" if cycle else "", f"fusion threshold {fusion} bytes" if fusion else ""]
    return ", ".join(s for s in said if s) or "Horovod's default cycle time and fusion threshold"


def _sweep(group: Sequence[RunRecord], link: float | None) -> AllreduceSweep:
    first = group[0]
    n = first.settings.workers
    factor = float(first.metrics.get("bus_factor") or (2.0 * (n - 1) / n))
    by_size: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for rec in group:
        for row in rec.metrics.get("results") or []:
            if isinstance(row, dict) and "bytes" in row:
                by_size[(str(row.get("dtype", "?")), int(row["bytes"]))].append(row)
    sizes = []
    for (dtype, nbytes), rows in sorted(by_size.items()):
        raws = [r["raw"] for r in rows if isinstance(r.get("raw"), dict)]
        raw = _path(raws, nbytes, factor, [r.get("raw_wrong") for r in rows]) if raws else None
        sizes.append(SizeRow(dtype, int(rows[0].get("elements") or 0), nbytes,
                             _path(rows, nbytes, factor, [r.get("wrong") for r in rows]), raw))
    m = first.metrics
    return AllreduceSweep(first.stack.name, first.stack.hash, n, first.settings.hosts,
                          str(m.get("backend") or first.settings.backend or "?"), m.get("raw_backend"),
                          m.get("raw_missing"), _framework_path(first), link or link_gbps(first), factor,
                          len(group), tuple(sizes), _framework_label(first))


def _kind(workload: str) -> str:
    from repro.workloads.catalog import kind_of

    return kind_of(workload)


def allreduce_sweeps(records: Sequence[RunRecord], link: float | None = None) -> list[AllreduceSweep]:
    """One AllreduceSweep per point (stack and settings) of the successful all-reduce records."""
    groups: dict[tuple, list[RunRecord]] = defaultdict(list)
    for rec in records:
        if rec.status == "ok" and _kind(rec.settings.workload) == "allreduce":  # Horovod's or torch.distributed's
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


# -- time to accuracy -------------------------------------------------------------------------------

TTA_KEYS = ("stack", "workers", "target")


def _tta_data(rec: RunRecord) -> dict[str, Any]:
    m = rec.metrics if rec.status == "ok" else {}
    return {"id": rec.id, "stack": rec.stack.name, "stack_hash": rec.stack.hash, "workers": rec.settings.workers,
            "hosts": rec.settings.hosts, "status": rec.status, "target": rec.metrics.get("target"),
            "reached": m.get("reached"), "time_to_accuracy_s": m.get("time_to_accuracy_s"),
            "epochs": m.get("epochs"), "final_top1": m.get("final_top1"), "final_top5": m.get("final_top5"),
            "compute_s": m.get("compute_s"), "communication_s": m.get("communication_s"),
            "failure": rec.failure}


def _tta_cells(d: dict[str, Any], failure_ref: str) -> list[str]:
    if d["status"] != "ok":
        return [f"FAILED {failure_ref}".strip(), *["-"] * 5]
    tta = number(d["time_to_accuracy_s"]) if d["reached"] else "not reached"
    return [tta, "-" if d["epochs"] is None else str(d["epochs"]), percent(d["final_top1"]),
            percent(d["final_top5"]), number(d["compute_s"]), number(d["communication_s"])]


def _mean(values: Sequence[Any]) -> float | None:
    vals = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum(vals) / len(vals) if vals else None


def _tta_aggregate(group: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A point's runs summed up as `repro compare` sums up a side: means over the runs that finished (time to
    accuracy: over those that reached the target), with how many reached it."""
    ok = [d for d in group if d["status"] == "ok"]
    reached = [d for d in ok if d["reached"]]
    first = group[0]
    return {"id": None, "aggregate": True, "stack": first["stack"], "stack_hash": first["stack_hash"],
            "workers": first["workers"], "hosts": first["hosts"], "status": "ok" if ok else "failed",
            "target": first["target"], "runs": len(group), "ok_runs": len(ok), "reached_runs": len(reached),
            "reached": bool(reached), "time_to_accuracy_s": _mean([d["time_to_accuracy_s"] for d in reached]),
            **{k: _mean([d[k] for d in ok]) for k in ("epochs", "final_top1", "final_top5", "compute_s",
                                                      "communication_s")},
            "failure": None}


def _tta_groups(data: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for d in data:
        groups.setdefault((d["stack_hash"], d["workers"], d["hosts"], d["target"]), []).append(d)
    return list(groups.values())


def _tta_aggregate_cells(d: dict[str, Any]) -> list[str]:
    tta = number(d["time_to_accuracy_s"]) if d["reached"] else "not reached"
    epochs = "-" if d["epochs"] is None else f"{d['epochs']:.1f}"
    return [f"{tta} ({d['reached_runs']}/{d['runs']} reached)", epochs, percent(d["final_top1"]),
            percent(d["final_top5"]), number(d["compute_s"]), number(d["communication_s"])]


def tta_document(records: Sequence[RunRecord]) -> Document:
    """One row per time-to-accuracy run (time, epochs, final accuracy, compute and communication time), and per
    point of several runs an aggregate row: the means, and how many runs reached the target."""
    runs = [_tta_data(r) for r in records if _kind(r.settings.workload) == "tta"]
    groups = _tta_groups(runs)
    several = any(len(g) > 1 for g in groups)
    data: list[dict[str, Any]] = []
    for group in groups:
        for i, d in enumerate(group):
            data.append({**d, "aggregate": False, "run": i + 1})
        if len(group) > 1:
            data.append({**_tta_aggregate(group), "run": "mean"})
    shown = [{"stack": d["stack"], "workers": d["workers"], "target": d["target"]} for d in data]
    same, varying = constant_settings(shown, TTA_KEYS)
    varying = [k for k in varying if k != "workers"]
    failures = [d for d in data if d["status"] != "ok" and not d["aggregate"]]
    refs = {id(d): f"[{i + 1}]" for i, d in enumerate(failures)}
    cols = [Column(k, numeric=k != "stack") for k in varying] + [Column("workers", True)] + (
        [Column("run", True)] if several else []) + [
        Column("time to accuracy (s)", True), Column("epochs", True),
        Column("top-1", True), Column("top-5", True), Column("compute (s)", True), Column("communication (s)", True)]
    cells = tuple(tuple([*(str(d[k]) if d[k] is not None else "-" for k in varying), str(d["workers"]),
                         *([str(d["run"])] if several else []),
                         *(_tta_aggregate_cells(d) if d["aggregate"] else _tta_cells(d, refs.get(id(d), "")))])
                  for d in data)
    first = data[0] if data else {}
    said = {"stack": f"stack {first.get('stack')} (hash {first.get('stack_hash')})",
            "target": f"target top-1 {percent(first.get('target'))}"}
    caption = [" · ".join(said[k] for k in same if k in said)] if data else []
    caption.append("time to accuracy: seconds from the start of training until validation top-1 first reached "
                   "the target; top-1/top-5: final validation accuracy; compute/communication: seconds per worker "
                   "over all epochs; one row per run")
    if several:
        caption.append("mean: the point's runs summed up as `repro compare` does: time to accuracy averaged over "
                       "the runs that reached the target (k/n reached), the other figures over the runs that "
                       "finished")
    notes = [f"{refs[id(d)]} {d['failure']}" for d in failures]
    return Document((Table(tuple(cols), cells, tuple(data), title="Time to accuracy",
                           caption=tuple(c for c in caption if c), notes=tuple(notes), name="tta"),))


def tta_report(records: Sequence[RunRecord], fmt: str = "table") -> str:
    return render(tta_document(records), fmt)
