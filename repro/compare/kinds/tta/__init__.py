"""The tta comparison kind: time to a target validation accuracy (repro.workloads.tta, torch_tta, imported MLPerf
logs). Everything repro says about these runs is here: the typed metrics (metrics.py), the compared rows
(rows.py), the comparison's table (tables.py), the figure's row and the end-of-sweep figure (figure.py), and the
end-of-sweep report (sweep.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from repro.compare.kind import Kind, KindRows, Panel
from repro.compare.kinds.tta.metrics import TOP1, TtaMetrics
from repro.formats import Block, Document

if TYPE_CHECKING:
    from repro.compare.align import Pair
    from repro.compare.options import Options
    from repro.compare.view import View
    from repro.results.record import RunRecord

# The comparison's modules are imported inside the methods that use them: the end-of-sweep report of
# `repro bench` and `repro results table` needs none of them.


class TimeToAccuracy(Kind):
    """time to a target validation accuracy"""

    name = "tta"
    metrics = TtaMetrics

    def summary(self, record: RunRecord) -> str:
        m: TtaMetrics = self.read(record)
        if m.reached:
            return f"reached {m.target} in {m.time_to_accuracy_s or 0:.1f} s, {m.epochs} epochs"
        label = "top-1" if m.accuracy_metric == TOP1 else m.accuracy_metric
        return f"did not reach {m.target} ({label} {m.final_quality}) in {m.epochs} epochs"

    def headline(self, record: RunRecord) -> tuple[float | None, str]:
        m: TtaMetrics = self.read(record) if record.status == "ok" else TtaMetrics()
        value = m.reached_in
        return (float(value) if value is not None else None), "s to accuracy"

    def compare(self, pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                options: Options) -> KindRows:
        from repro.compare.kinds.tta.rows import tta_rows

        return KindRows(tta_rows(pairs, options))

    def tables(self, view: View, part: KindRows) -> tuple[Block, ...]:
        from repro.compare.kinds.tta.tables import tta_table

        return (tta_table(view, part.rows),)

    def data(self, view: View, part: KindRows) -> dict[str, Any]:
        from repro.compare.kinds.tta.rows import as_dict

        return {"tta": [{"point": dict(r.key), **as_dict(r)} for r in part.rows]}

    def ratios(self, part: KindRows) -> tuple[tuple[str, Any], ...]:
        return tuple(("speed-up to accuracy (OLD time / NEW time)", r.speedup) for r in part.rows)

    def panels(self, view: View, part: KindRows) -> tuple[Panel, ...]:
        from repro.compare.kinds.tta.figure import tta_row

        return (Panel(lambda row, labels: tta_row(row, part.rows, labels)),)

    def sweep_document(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                       baseline_workers: int | None = None, link: float | None = None) -> Document:
        from repro.compare.kinds.tta.sweep import tta_document

        return tta_document(records)

    def sweep_figure(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                     baseline_workers: int | None = None, link: float | None = None) -> Any:
        from repro.compare.kinds.tta.figure import tta_figure

        return tta_figure(records)
