"""The throughput comparison kind: items (images) per second, with speedup and scaling efficiency (cnn,
tf_cnn_benchmarks, imported logs). Everything repro says about these runs is here: the typed metrics
(metrics.py; images/sec itself is repro.results.metrics.throughput, the one definition), the compared rows and the
summary per model (rows.py), the comparison's table (tables.py), the figure's rows (panels.py), the end-of-sweep
scaling report (sweep.py) and figure (figure.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from repro.compare.kind import Kind, KindRows, Panel, kind_name
from repro.compare.kinds.throughput.metrics import ThroughputMetrics
from repro.formats import Block, Document, Heading, Text

if TYPE_CHECKING:
    from repro.compare.align import Pair
    from repro.compare.options import Options
    from repro.compare.view import View
    from repro.results.record import RunRecord

# The comparison's modules are imported inside the methods that use them: the end-of-sweep report of
# `repro bench` and `repro results table` needs none of them.


class Throughput(Kind):
    """items (images) per second, with speedup and scaling efficiency"""

    name = "throughput"
    sequential = True
    metrics = ThroughputMetrics

    def summary(self, record: RunRecord) -> str:
        from repro.results.metrics import throughput

        ips = throughput(record)
        took = f"({record.duration_s or 0:.1f} s)"
        return f"{ips:.1f} {self.read(record).unit} {took}" if ips else f"ok {took}"

    def headline(self, record: RunRecord) -> tuple[float | None, str]:
        from repro.results.metrics import throughput

        return throughput(record), self.read(record).unit

    def warnings(self, record: RunRecord, warmup: str) -> tuple[str, ...]:
        from repro.results import steady

        return tuple(steady.warnings(record, warmup))

    def compare(self, pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                options: Options) -> KindRows:
        from repro.compare.kinds.throughput.rows import summaries, throughput_rows

        mine = [r for r in old if kind_name(r) == self.name], [r for r in new if kind_name(r) == self.name]
        rows = throughput_rows(pairs, mine[0], mine[1], options)
        return KindRows(rows, summaries=summaries(rows))

    def tables(self, view: View, part: KindRows) -> tuple[Block, ...]:
        from repro.compare.kinds.throughput.tables import throughput_table

        return (throughput_table(view, part.rows),)

    def summary_blocks(self, view: View, part: KindRows) -> tuple[Block, ...]:
        from repro.compare.kinds.throughput.tables import summary_lines

        if not part.summaries:
            return ()
        return (Heading("Summary per model (NEW/OLD)"), Text(tuple(summary_lines(part.summaries)), bullets=True))

    def data(self, view: View, part: KindRows) -> dict[str, Any]:
        from repro.compare.kinds.throughput.tables import row_dict

        return {"throughput": [{"point": dict(r.key), **row_dict(r)} for r in part.rows],
                "summary": [asdict(s) for s in part.summaries]}

    def ratios(self, part: KindRows) -> tuple[tuple[str, Any], ...]:
        return tuple(("images/sec", r.ratio) for r in part.rows)

    def unpaired(self, part: KindRows) -> bool:
        from repro.results import stats

        return bool(part.rows) and not any(r.ratio.method == stats.PAIRED for r in part.rows)

    def panels(self, view: View, part: KindRows) -> tuple[Panel, ...]:
        from repro.compare.kinds.throughput.panels import throughput_panels

        return throughput_panels(view, part.rows)

    def sweep_document(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                       baseline_workers: int | None = None, link: float | None = None) -> Document:
        from repro.compare.kinds.throughput.sweep import scaling_document
        from repro.results import metrics

        pts = metrics.points(records, warmup=warmup)
        return scaling_document(metrics.scaling(pts, baseline_workers=baseline_workers))

    def sweep_figure(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                     baseline_workers: int | None = None, link: float | None = None) -> Any:
        from repro.compare.kinds.throughput.figure import scaling_figure
        from repro.results import metrics

        pts = metrics.points(records, warmup=warmup)
        return scaling_figure(metrics.scaling(pts, baseline_workers=baseline_workers))
