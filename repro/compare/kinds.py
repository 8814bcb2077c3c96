"""The built-in comparison kinds (repro.compare.kind registers them by name): throughput, allreduce, tta, lm.

Each owns its line after a bench point, its headline figure, its comparison rows, tables, JSON, figure panels
and regression rule, and its end-of-sweep document and figure; the pieces it draws with live next to the
data they draw (render.py, plot.py, repro.results.summary and figures).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from repro.compare.kind import KINDS, Kind, KindRows, Panel, kind_name
from repro.formats import Block, Document, Heading, Text

if TYPE_CHECKING:
    from repro.compare.align import Pair
    from repro.compare.throughput import Options
    from repro.results.record import RunRecord

# The comparison's modules are imported inside the methods that use them: the end-of-sweep report of
# `repro bench` and `repro results table` needs none of them.

__all__ = ["KINDS", "Allreduce", "KindRows", "Throughput", "TimeToAccuracy", "Transformer"]


def _unit(record: RunRecord) -> str:
    """What a throughput run's figure counts: images, or what an imported transformer-training log states."""
    items = record.metrics.get("items")
    return f"{items}/sec" if items in ("tokens", "samples") else "images/sec"


class Throughput(Kind):
    """items (images) per second, with speedup and scaling efficiency"""

    name = "throughput"
    sequential = True

    def summary(self, record: RunRecord) -> str:
        from repro.results.metrics import throughput

        ips = throughput(record)
        took = f"({record.duration_s or 0:.1f} s)"
        return f"{ips:.1f} {_unit(record)} {took}" if ips else f"ok {took}"

    def headline(self, record: RunRecord) -> tuple[float | None, str]:
        from repro.results.metrics import throughput

        return throughput(record), _unit(record)

    def warnings(self, record: RunRecord, warmup: str) -> tuple[str, ...]:
        from repro.results import steady

        return tuple(steady.warnings(record, warmup))

    def compare(self, pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                options: Options) -> KindRows:
        from repro.compare.throughput import summaries, throughput_rows

        mine = [r for r in old if kind_name(r) == self.name], [r for r in new if kind_name(r) == self.name]
        rows = throughput_rows(pairs, mine[0], mine[1], options)
        return KindRows(rows, summaries=summaries(rows))

    def tables(self, c, part: KindRows) -> tuple[Block, ...]:
        from repro.compare import render

        return (render.throughput_table(c, part.rows),)

    def summary_blocks(self, c, part: KindRows) -> tuple[Block, ...]:
        from repro.compare import render

        if not part.summaries:
            return ()
        return (Heading("Summary per model (NEW/OLD)"), Text(tuple(render.summary_lines(part.summaries)),
                                                             bullets=True))

    def data(self, c, part: KindRows) -> dict[str, Any]:
        from repro.compare import render

        return {"throughput": [{"point": dict(r.key), **render.row_dict(r)} for r in part.rows],
                "summary": [asdict(s) for s in part.summaries]}

    def ratios(self, part: KindRows) -> tuple[tuple[str, Any], ...]:
        return tuple(("images/sec", r.ratio) for r in part.rows)

    def unpaired(self, part: KindRows) -> bool:
        from repro.results import stats

        return bool(part.rows) and not any(r.ratio.method == stats.PAIRED for r in part.rows)

    def panels(self, c, part: KindRows) -> tuple[Panel, ...]:
        from repro.compare import plot

        return plot.throughput_panels(c, part.rows)

    def sweep_document(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                       baseline_workers: int | None = None, link: float | None = None) -> Document:
        from repro.results import metrics, report

        pts = metrics.points(records, warmup=warmup)
        return report.scaling_document(metrics.scaling(pts, baseline_workers=baseline_workers))

    def sweep_figure(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                     baseline_workers: int | None = None, link: float | None = None) -> Any:
        from repro.results import metrics
        from repro.results.figures import scaling_figure

        pts = metrics.points(records, warmup=warmup)
        return scaling_figure(metrics.scaling(pts, baseline_workers=baseline_workers))


class Allreduce(Kind):
    """all-reduce latency and bandwidth per message size"""

    name = "allreduce"

    def headline(self, record: RunRecord) -> tuple[float | None, str]:
        from repro.results.summary import GB, allreduce_sweeps

        sweeps = allreduce_sweeps([record])
        value = sweeps[0].average_busbw("horovod") if sweeps else None
        return (value / GB if value is not None else None), "GB/s busbw"

    def compare(self, pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                options: Options) -> KindRows:
        from repro.compare.allreduce import allreduce_rows

        rows, notes = allreduce_rows(pairs, options)
        return KindRows(rows, tuple(notes))

    def tables(self, c, part: KindRows) -> tuple[Block, ...]:
        from repro.compare import render

        return (render.allreduce_table(c, part.rows),)

    def data(self, c, part: KindRows) -> dict[str, Any]:
        from repro.compare.allreduce import as_dict as allreduce_dict

        return {"allreduce": [{"point": dict(r.key), **allreduce_dict(r)} for r in part.rows]}

    def ratios(self, part: KindRows) -> tuple[tuple[str, Any], ...]:
        return tuple((f"busbw {r.path} {r.dtype} {r.bytes:,} B", r.bandwidth) for r in part.rows)

    def panels(self, c, part: KindRows) -> tuple[Panel, ...]:
        from repro.compare import plot

        return (Panel(lambda row, labels: plot.allreduce_row(row, part.rows, labels), speedup=True),)

    def sweep_document(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                       baseline_workers: int | None = None, link: float | None = None) -> Document:
        from repro.results.summary import allreduce_document

        return allreduce_document(records, link)

    def sweep_figure(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                     baseline_workers: int | None = None, link: float | None = None) -> Any:
        from repro.results.figures import allreduce_figure
        from repro.results.summary import allreduce_sweeps

        return allreduce_figure(allreduce_sweeps(records, link))


class TimeToAccuracy(Kind):
    """time to a target validation accuracy"""

    name = "tta"

    def summary(self, record: RunRecord) -> str:
        m = record.metrics
        if m.get("reached"):
            return f"reached {m.get('target')} in {m.get('time_to_accuracy_s', 0):.1f} s, {m.get('epochs')} epochs"
        metric = m.get("accuracy_metric") or "top1"
        final = m.get("final_top1") if metric == "top1" else m.get("final_accuracy")
        label = "top-1" if metric == "top1" else metric
        return f"did not reach {m.get('target')} ({label} {final}) in {m.get('epochs')} epochs"

    def headline(self, record: RunRecord) -> tuple[float | None, str]:
        m = record.metrics if record.status == "ok" else {}
        value = m.get("time_to_accuracy_s") if m.get("reached") else None
        return (float(value) if isinstance(value, (int, float)) else None), "s to accuracy"

    def compare(self, pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                options: Options) -> KindRows:
        from repro.compare.tta import tta_rows

        return KindRows(tta_rows(pairs, options))

    def tables(self, c, part: KindRows) -> tuple[Block, ...]:
        from repro.compare import render

        return (render.tta_table(c, part.rows),)

    def data(self, c, part: KindRows) -> dict[str, Any]:
        from repro.compare.tta import as_dict as tta_dict

        return {"tta": [{"point": dict(r.key), **tta_dict(r)} for r in part.rows]}

    def ratios(self, part: KindRows) -> tuple[tuple[str, Any], ...]:
        return tuple(("speed-up to accuracy (OLD time / NEW time)", r.speedup) for r in part.rows)

    def panels(self, c, part: KindRows) -> tuple[Panel, ...]:
        from repro.compare import plot

        return (Panel(lambda row, labels: plot.tta_row(row, part.rows, labels)),)

    def sweep_document(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                       baseline_workers: int | None = None, link: float | None = None) -> Document:
        from repro.results.tta_summary import tta_document

        return tta_document(records)

    def sweep_figure(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                     baseline_workers: int | None = None, link: float | None = None) -> Any:
        from repro.results.figures import tta_figure

        return tta_figure(records)


class Transformer(Throughput):
    """transformer training tokens/sec, with MFU and peak memory beside it"""

    # tokens/sec is the throughput figure (a rank's items are its tokens), so the line after a point, warm-up
    # warnings, pairing and --until-verdict are the throughput kind's; the rows, tables and reports are its own
    name = "lm"
    sequential = True

    def summary(self, record: RunRecord) -> str:
        from repro.results import lm
        from repro.results.metrics import throughput

        tps = throughput(record)
        took = f"({record.duration_s or 0:.1f} s)"
        if not tps:
            return f"ok {took}"
        mfu = lm.mfu(tps, [record], record.settings.workers)
        memory = lm.peak_memory([record])
        extra = "".join(f", {x}" for x in (f"MFU {mfu:.1%}" if mfu else "",
                                             f"peak {lm.memory_text(memory)}/rank" if memory else "") if x)
        return f"{tps:.1f} {lm.unit([record])}{extra} {took}"

    def headline(self, record: RunRecord) -> tuple[float | None, str]:
        from repro.results import lm
        from repro.results.metrics import throughput

        return throughput(record), lm.unit([record])  # an imported log's samples/sec is not labelled tokens

    def compare(self, pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                options: Options) -> KindRows:
        from repro.compare.lm import lm_rows

        mine = [r for r in old if kind_name(r) == self.name], [r for r in new if kind_name(r) == self.name]
        return KindRows(lm_rows(pairs, mine[0], mine[1], options))

    def tables(self, c, part: KindRows) -> tuple[Block, ...]:
        from repro.compare import lm, render

        return (lm.table(part.rows, render.display_columns(c, part.rows), c.options.confidence, c.options.threshold,
                         render.verdict_text),)

    def summary_blocks(self, c, part: KindRows) -> tuple[Block, ...]:
        return ()

    def data(self, c, part: KindRows) -> dict[str, Any]:
        from repro.compare.lm import as_dict

        return {"lm": [{"point": dict(r.key), **as_dict(r)} for r in part.rows]}

    def unpaired(self, part: KindRows) -> bool:
        return super().unpaired(KindRows(tuple(r.base for r in part.rows)))

    def panels(self, c, part: KindRows) -> tuple[Panel, ...]:
        from repro.compare import plot

        return plot.throughput_panels(c, [r.base for r in part.rows], unit="tokens/sec")

    def sweep_document(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                       baseline_workers: int | None = None, link: float | None = None) -> Document:
        from repro.results import lm

        return lm.sweep_document(records, warmup=warmup, baseline_workers=baseline_workers)

    def sweep_figure(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                     baseline_workers: int | None = None, link: float | None = None) -> Any:
        from repro.results import metrics
        from repro.results.figures import scaling_figure

        pts = metrics.points(records, warmup=warmup)
        return scaling_figure(metrics.scaling(pts, baseline_workers=baseline_workers), unit="tokens/sec")
