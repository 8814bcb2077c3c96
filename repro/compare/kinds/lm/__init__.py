"""The lm comparison kind: transformer training tokens/sec, with MFU and peak memory beside it (repro.workloads.lm).
Everything repro says about these runs is here: the typed metrics and the figures derived from them (metrics.py),
the compared rows and the regression rule (rows.py: slower, or peak memory per rank more than 10% above OLD's),
the comparison's table (tables.py), the figure's rows and the end-of-sweep figure (figure.py), and the
end-of-sweep report (sweep.py).

tokens/sec is the throughput figure (a rank's items are its tokens), so the warm-up warnings after a point,
pairing, the interval and verdict, and --until-verdict are the throughput kind's; its rows, tables and reports
are its own and build on the throughput kind's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from repro.compare.kind import Kind, KindRows, Panel, kind_name
from repro.compare.kinds.lm.metrics import UNIT, LmMetrics
from repro.formats import Block, Document

if TYPE_CHECKING:
    from repro.compare.align import Pair
    from repro.compare.options import Options
    from repro.compare.view import View
    from repro.results.record import RunRecord

# The comparison's modules are imported inside the methods that use them: the end-of-sweep report of
# `repro bench` and `repro results table` needs none of them.


class Transformer(Kind):
    """transformer training tokens/sec, with MFU and peak memory beside it"""

    name = "lm"
    sequential = True
    metrics = LmMetrics

    def summary(self, record: RunRecord) -> str:
        from repro.compare.kinds.lm.metrics import memory_text, mfu, peak_memory, unit
        from repro.results.metrics import throughput

        tps = throughput(record)
        took = f"({record.duration_s or 0:.1f} s)"
        if not tps:
            return f"ok {took}"
        used = mfu(tps, [record], record.settings.workers)
        memory = peak_memory([record])
        extra = "".join(f", {x}" for x in (f"MFU {used:.1%}" if used else "",
                                             f"peak {memory_text(memory)}/rank" if memory else "") if x)
        return f"{tps:.1f} {unit([record])}{extra} {took}"

    def headline(self, record: RunRecord) -> tuple[float | None, str]:
        from repro.compare.kinds.lm.metrics import unit
        from repro.results.metrics import throughput

        return throughput(record), unit([record])  # an imported log's samples/sec is not labelled tokens

    def warnings(self, record: RunRecord, warmup: str) -> tuple[str, ...]:
        from repro.results import steady

        return tuple(steady.warnings(record, warmup))

    def compare(self, pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                options: Options) -> KindRows:
        from repro.compare.kinds.lm.rows import lm_rows

        mine = [r for r in old if kind_name(r) == self.name], [r for r in new if kind_name(r) == self.name]
        return KindRows(lm_rows(pairs, mine[0], mine[1], options))

    def tables(self, view: View, part: KindRows) -> tuple[Block, ...]:
        from repro.compare.kinds.lm.tables import lm_table

        return (lm_table(view, part.rows),)

    def data(self, view: View, part: KindRows) -> dict[str, Any]:
        from repro.compare.kinds.lm.rows import as_dict

        return {"lm": [{"point": dict(r.key), **as_dict(r)} for r in part.rows]}

    def ratios(self, part: KindRows) -> tuple[tuple[str, Any], ...]:
        return tuple((UNIT, r.ratio) for r in part.rows)

    def unpaired(self, part: KindRows) -> bool:
        from repro.results import stats

        return bool(part.rows) and not any(r.ratio.method == stats.PAIRED for r in part.rows)

    def panels(self, view: View, part: KindRows) -> tuple[Panel, ...]:
        from repro.compare.kinds.lm.figure import lm_panels

        return lm_panels(view, part.rows)

    def sweep_document(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                       baseline_workers: int | None = None, link: float | None = None) -> Document:
        from repro.compare.kinds.lm.sweep import sweep_document

        return sweep_document(records, warmup=warmup, baseline_workers=baseline_workers)

    def sweep_figure(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                     baseline_workers: int | None = None, link: float | None = None) -> Any:
        from repro.compare.kinds.lm.figure import lm_figure

        return lm_figure(records, warmup=warmup, baseline_workers=baseline_workers)
