"""The lm kind's end-of-sweep report (pure, from records; `repro bench`, `repro results table`): per point
tokens/sec ± and per worker, speedup, efficiency, TFLOP/s and MFU per device, peak memory per rank, loss first →
last."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.compare.kinds.lm.metrics import (
    flops_per_token,
    losses,
    memory_text,
    mfu,
    peak_memory,
    tflops_per_device,
    unit,
)
from repro.compare.kinds.throughput.sweep import STEP_FOOTNOTE, interval_caption
from repro.formats import Column, Document, Table, number, percent
from repro.results import metrics, stats
from repro.results.metrics import Point, ScalingRow
from repro.results.record import RunRecord


def point_data(row: ScalingRow) -> dict[str, Any]:
    """One point of an lm sweep as plain data."""
    p: Point = row.point
    s = p.settings
    est = p.estimate
    tps = p.images_per_sec
    first, last = losses(p.records)
    return {
        "stack": p.stack, "stack_hash": p.stack_hash, "model": s.model, "batch": s.batch_per_worker,
        "precision": s.precision, "compile": s.xla, "workers": s.workers, "hosts": s.hosts, "extra": dict(s.extra),
        "tokens_per_sec": tps, "low": est.low if est and tps else None, "high": est.high if est and tps else None,
        "scope": est.scope if est else None, "per_worker": p.per_worker, "speedup": row.speedup,
        "efficiency": row.efficiency, "tflops_per_device": tflops_per_device(tps, p.records, s.workers),
        "mfu": mfu(tps, p.records, s.workers), "peak_memory_bytes": peak_memory(p.records),
        "loss_first": first, "loss_last": last,
        "flops_per_token": flops_per_token(p.records), "runs": len(p.records), "failed": p.failed,
    }


def _noise(d: dict[str, Any]) -> str:
    if not d["tokens_per_sec"] or d["low"] is None or d["high"] is None:
        return "-"
    text = percent((d["high"] - d["low"]) / 2 / d["tokens_per_sec"])
    return text + ("*" if d["scope"] == stats.STEPS_SCOPE else "")


def _loss(d: dict[str, Any]) -> str:
    if d["loss_first"] is None or d["loss_last"] is None:
        return "-"
    return f"{d['loss_first']:.3f} → {d['loss_last']:.3f}"


def sweep_document(records: Sequence[RunRecord], *, warmup: str = "fixed",
                   baseline_workers: int | None = None) -> Document:
    """The lm sweep's table: per point tokens/sec ± and per worker, speedup, efficiency, TFLOP/s and MFU per device,
    peak memory per rank, loss first → last."""
    rows = metrics.scaling(metrics.points(records, warmup=warmup), baseline_workers=baseline_workers)
    data = [point_data(r) for r in sorted(rows, key=lambda r: (r.point.stack, str(r.point.settings.extra),
                                                               r.point.workers))]
    figure = unit(records)  # samples/sec for imported logs that count samples (the data's key stays tokens_per_sec)
    varying = [k for k in ("stack", "model", "batch", "precision", "compile") if len({str(d[k]) for d in data}) > 1]
    extras = sorted({k for d in data for k in d["extra"] if len({str(x["extra"].get(k)) for x in data}) > 1})
    columns = [*(Column(k) for k in varying), *(Column(k.replace("_", " ")) for k in extras),
               Column("workers", True), Column(figure, True), Column("±", True), Column("per worker", True),
               Column("speedup", True), Column("efficiency", True), Column("TFLOP/s/dev", True), Column("MFU", True),
               Column("peak mem/rank", True), Column("loss first → last", True), Column("runs", True)]
    cells = tuple((*(str(d[k]) for k in varying), *(str(d["extra"].get(k, "-")) for k in extras), str(d["workers"]),
                   number(d["tokens_per_sec"]), _noise(d), number(d["per_worker"]),
                   f"{d['speedup']:.2f}x" if d["speedup"] else "-", percent(d["efficiency"]),
                   f"{d['tflops_per_device']:.3g}" if d["tflops_per_device"] else "-", percent(d["mfu"]),
                   memory_text(d["peak_memory_bytes"]), _loss(d), str(d["runs"])) for d in data)
    fixed = {k: data[0][k] for k in ("stack", "model", "batch", "precision") if k not in varying} if data else {}
    shared = {k: v for k, v in (data[0]["extra"].items() if data else ()) if k not in extras}
    caption = [" · ".join(f"{k.replace('_', ' ')} {v}" for k, v in {**fixed, **shared}.items() if v is not None),
               interval_caption().replace("images/sec", figure),
               f"per worker: {figure} / workers; speedup and efficiency as for images/sec (docs/statistics.md)",
               "TFLOP/s/dev: tokens/sec per device x model FLOPs per token (6N + 12·L·H·Q·T, docs/lm.md); MFU: "
               "that / the device's sourced peak at the run's precision ('-': none known, e.g. any CPU)",
               "peak mem/rank: the largest over ranks and runs (GPU: torch.cuda.max_memory_allocated; CPU: peak RSS)"]
    if any(r.origin == "import" for r in records):
        caption.append("imported logs: TFLOP/s/dev and MFU as the log states them, '-' where it does not")
    notes = [STEP_FOOTNOTE] if any(d["scope"] == stats.STEPS_SCOPE and _noise(d) != "-" for d in data) else []
    table = Table(tuple(columns), cells, tuple(data), title=f"Transformer training (lm): {figure}",
                  caption=tuple(c for c in caption if c), notes=tuple(notes), name="lm")
    return Document((table,), data=data)
