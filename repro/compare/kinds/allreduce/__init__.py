"""The allreduce comparison kind: all-reduce latency and bus bandwidth per message size (repro.workloads.allreduce,
torch_allreduce, imported nccl-tests logs). Everything repro says about these runs is here: the typed metrics
(metrics.py), the compared rows (rows.py), the comparison's table (tables.py), the figure's row and the
end-of-sweep figure (figure.py), and the end-of-sweep report (sweep.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from repro.compare.kind import Kind, KindRows, Panel
from repro.compare.kinds.allreduce.metrics import AllreduceMetrics
from repro.formats import Block, Document

if TYPE_CHECKING:
    from repro.compare.align import Pair
    from repro.compare.options import Options
    from repro.compare.view import View
    from repro.results.record import RunRecord


class Allreduce(Kind):
    """all-reduce latency and bandwidth per message size"""

    name = "allreduce"
    metrics = AllreduceMetrics

    def headline(self, record: RunRecord) -> tuple[float | None, str]:
        from repro.compare.kinds.allreduce.sweep import GB, allreduce_sweeps

        sweeps = allreduce_sweeps([record])
        value = sweeps[0].average_busbw("horovod") if sweeps else None
        return (value / GB if value is not None else None), "GB/s busbw"

    def compare(self, pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                options: Options) -> KindRows:
        from repro.compare.kinds.allreduce.rows import allreduce_rows

        rows, notes = allreduce_rows(pairs, options)
        return KindRows(rows, tuple(notes))

    def tables(self, view: View, part: KindRows) -> tuple[Block, ...]:
        from repro.compare.kinds.allreduce.tables import allreduce_table

        return (allreduce_table(view, part.rows),)

    def data(self, view: View, part: KindRows) -> dict[str, Any]:
        from repro.compare.kinds.allreduce.rows import as_dict

        return {"allreduce": [{"point": dict(r.key), **as_dict(r)} for r in part.rows]}

    def ratios(self, part: KindRows) -> tuple[tuple[str, Any], ...]:
        return tuple((f"busbw {r.path} {r.dtype} {r.bytes:,} B", r.bandwidth) for r in part.rows)

    def panels(self, view: View, part: KindRows) -> tuple[Panel, ...]:
        from repro.compare.kinds.allreduce.figure import allreduce_row

        return (Panel(lambda row, labels: allreduce_row(row, part.rows, labels), speedup=True),)

    def sweep_document(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                       baseline_workers: int | None = None, link: float | None = None) -> Document:
        from repro.compare.kinds.allreduce.sweep import allreduce_document

        return allreduce_document(records, link)

    def sweep_figure(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                     baseline_workers: int | None = None, link: float | None = None) -> Any:
        from repro.compare.kinds.allreduce.figure import allreduce_figure
        from repro.compare.kinds.allreduce.sweep import allreduce_sweeps

        return allreduce_figure(allreduce_sweeps(records, link))
