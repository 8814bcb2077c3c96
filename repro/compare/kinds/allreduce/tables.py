"""The allreduce kind's part of the comparison document (pure): per path and message size, each side's time and
bus bandwidth, NEW/OLD and its verdict."""

from __future__ import annotations

from collections.abc import Sequence

from repro.compare.cells import (
    constants,
    criterion,
    display_columns,
    interval_text,
    key_cells,
    key_columns,
    number,
    ratio_text,
    verdict_text,
)
from repro.compare.kinds.allreduce.rows import PATHS, AllreduceRow, as_dict
from repro.compare.view import View
from repro.formats import Column, Table

PATH_LABEL = {"horovod": "hvd", "raw": "raw"}


def _us(seconds: float | None) -> str:
    return number(seconds * 1e6 if seconds else None)


def _backends(rows: Sequence[AllreduceRow], path: str) -> str:
    old = list(dict.fromkeys(r.old.backend for r in rows if r.path == path))
    new = list(dict.fromkeys(r.new.backend for r in rows if r.path == path))
    if not old:
        return ""
    label = ("hvd: the framework's all-reduce (Horovod's allreduce; torch_allreduce: torch.distributed.all_reduce)"
             if path == "horovod" else "raw: MPI_Allreduce without Horovod")
    same = old == new
    return f"{label}, {', '.join(old)}" if same else f"{label}, OLD {', '.join(old)}; NEW {', '.join(new)}"


def allreduce_table(view: View, compared: Sequence[AllreduceRow]) -> Table:
    """The allreduce kind's table: per path and message size, time and bus bandwidth of each side, the verdict."""
    cols = [k for k in display_columns(view, compared) if k != "model"]
    rows = sorted(compared, key=lambda r: (PATHS.index(r.path) if r.path in PATHS else 9, r.key, r.dtype,
                                              r.bytes))
    dtypes = len({r.dtype for r in rows}) > 1
    conf = f"{view.options.confidence:.0%}"
    columns = [*key_columns(cols), Column("path"),
               *([Column("dtype")] if dtypes else []),
               *(Column(h, numeric=True) for h in ("size (B)", "time OLD (us)", "time NEW (us)", "time NEW/OLD",
                                                   "busbw OLD", "busbw NEW", "busbw NEW/OLD", f"{conf} interval")),
               Column("verdict")]
    cells = [(*key_cells(r.key, cols), PATH_LABEL.get(r.path, r.path), *([r.dtype] if dtypes else []),
              f"{r.bytes:,}", _us(r.old.time_s), _us(r.new.time_s), ratio_text(r.time_ratio),
              number(r.old.busbw / 1e9 if r.old.busbw is not None else None, 2),
              number(r.new.busbw / 1e9 if r.new.busbw is not None else None, 2),
              ratio_text(r.bandwidth.ratio), interval_text(r.bandwidth),
              verdict_text(r.bandwidth, better="more bandwidth", worse="less bandwidth")) for r in rows]
    shared = constants(rows, cols)
    dtype = f"dtype {rows[0].dtype}" if rows and not dtypes and "dtypes " not in shared else ""
    runs = sorted({(r.old.runs, r.new.runs) for r in rows})
    said_runs = (f"{runs[0][0]} run{'s' if runs[0][0] != 1 else ''} OLD, {runs[0][1]} NEW" if len(runs) == 1
                 else "runs per side vary by size")
    caption = [" · ".join(x for x in (shared, dtype, said_runs) if x),
               *(x for x in (_backends(rows, p) for p in PATHS) if x),
               "time: one all-reduce, geometric mean over runs of each run's mean latency (us); busbw: size / time x "
               "2(n-1)/n in GB/s (1e9 bytes/s, nccl-tests' definition)",
               "busbw NEW/OLD: ratio of the bus bandwidths = OLD time / NEW time (time NEW/OLD is its inverse); "
               f"interval: {conf}, Welch's t on log figures of runs (paired t for interleaved runs), none below 2 "
               f"runs a side; {criterion(view, [r.bandwidth for r in rows])}"]
    return Table(tuple(columns), tuple(cells), tuple({"kind": "allreduce", **dict(r.key), **as_dict(r)}
                                                     for r in rows),
                 title="All-reduce: bus bandwidth NEW/OLD", caption=tuple(x for x in caption if x), name="allreduce")
