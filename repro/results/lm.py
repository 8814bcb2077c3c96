"""The `lm` workload's figures of runs and points (pure): tokens/sec, TFLOP/s and MFU per device, peak memory,
losses; and its end-of-sweep document (`repro bench`, `repro results table`).

tokens/sec is the one throughput figure of repro.results.metrics (a rank's items per step are its tokens per
step), so its interval, verdicts, `--warmup auto` and `--until-verdict` are those of images/sec. MFU is derived
from it, never stored apart from it: tokens/sec / workers x the record's model FLOPs per token / the peak FLOP/s
the workload found for its device and precision (repro.workloads.lm_model; none on CPUs, none at fp32).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.formats import Column, Document, Table, number, percent
from repro.results import metrics
from repro.results.metrics import Point, ScalingRow
from repro.results.record import RunRecord
from repro.results.report import STEP_FOOTNOTE, interval_caption

GIB = 1024**3
UNIT = "tokens/sec"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _common(records: Sequence[RunRecord], name: str) -> float | None:
    """The value of metrics[name] that every successful record holds (None when one lacks it or they differ)."""
    values = {_number(r.metrics.get(name)) for r in records if r.status == "ok"}
    return values.pop() if len(values) == 1 else None


def tflops_per_device(tokens_per_sec: float | None, records: Sequence[RunRecord], workers: int) -> float | None:
    """Model TFLOP/s per device at `tokens_per_sec` (the whole job's); for imported logs that state it instead of
    the FLOPs per token (Megatron's `throughput per GPU (TFLOP/s/GPU)`, torchtitan's `tflops`), the stated mean."""
    flops = _common(records, "flops_per_token")
    if flops is None:
        return stated(records, "tflops_per_gpu")
    return tokens_per_sec / workers * flops / 1e12 if tokens_per_sec and flops else None


def mfu(tokens_per_sec: float | None, records: Sequence[RunRecord], workers: int) -> float | None:
    """Model FLOPs utilisation at `tokens_per_sec`, where the records name the device's sourced peak; for imported
    logs that state it (torchtitan's `mfu`), the stated mean (never derived from figures the log does not give)."""
    peak = _common(records, "peak_flops")
    if peak is None and _common(records, "flops_per_token") is None:
        return stated(records, "mfu")
    tflops = tflops_per_device(tokens_per_sec, records, workers)
    return tflops * 1e12 / peak if tflops and peak else None


def stated(records: Sequence[RunRecord], name: str) -> float | None:
    """The mean of a figure imported logs state (metrics[name]), over the records whose log states it."""
    return mean_metric([r for r in records if r.origin == "import"], name)


def unit(records: Sequence[RunRecord]) -> str:
    """What the records' figure counts: samples/sec where every imported log states samples (Megatron without
    tokens, the Hugging Face Trainer), else tokens/sec."""
    items = {r.metrics.get("items") for r in records if r.status == "ok"}
    return "samples/sec" if items == {"samples"} else UNIT


def peak_memory(records: Sequence[RunRecord]) -> float | None:
    """The largest peak memory of any rank of any successful run, in bytes."""
    values = [_number(r.metrics.get("peak_memory_bytes")) for r in records if r.status == "ok"]
    return max((v for v in values if v is not None), default=None)


def mean_metric(records: Sequence[RunRecord], name: str) -> float | None:
    """The mean of metrics[name] over the successful records that hold a number there."""
    values = [v for r in records if r.status == "ok" and (v := _number(r.metrics.get(name))) is not None]
    return sum(values) / len(values) if values else None


def memory_text(value: float | None) -> str:
    """Bytes as GiB with two decimals ('-' for none)."""
    return f"{value / GIB:.2f} GiB" if value else "-"


def point_data(row: ScalingRow) -> dict[str, Any]:
    """One point of an lm sweep as plain data."""
    p: Point = row.point
    s = p.settings
    est = p.estimate
    tps = p.images_per_sec
    return {
        "stack": p.stack, "stack_hash": p.stack_hash, "model": s.model, "batch": s.batch_per_worker,
        "precision": s.precision, "compile": s.xla, "workers": s.workers, "hosts": s.hosts, "extra": dict(s.extra),
        "tokens_per_sec": tps, "low": est.low if est and tps else None, "high": est.high if est and tps else None,
        "scope": est.scope if est else None, "per_worker": p.per_worker, "speedup": row.speedup,
        "efficiency": row.efficiency, "tflops_per_device": tflops_per_device(tps, p.records, s.workers),
        "mfu": mfu(tps, p.records, s.workers), "peak_memory_bytes": peak_memory(p.records),
        "loss_first": mean_metric(p.records, "loss_first"), "loss_last": mean_metric(p.records, "loss_last"),
        "flops_per_token": _common(p.records, "flops_per_token"), "runs": len(p.records), "failed": p.failed,
    }


def _noise(d: dict[str, Any]) -> str:
    if not d["tokens_per_sec"] or d["low"] is None or d["high"] is None:
        return "-"
    text = percent((d["high"] - d["low"]) / 2 / d["tokens_per_sec"])
    return text + ("*" if d["scope"] == "steps" else "")


def _loss(d: dict[str, Any]) -> str:
    if d["loss_first"] is None or d["loss_last"] is None:
        return "-"
    return f"{d['loss_first']:.3f} → {d['loss_last']:.3f}"


def sweep_document(records: Sequence[RunRecord], *, warmup: str = "fixed",
                   baseline_workers: int | None = None) -> Document:
    """The lm sweep's table: per point tokens/sec ± and per worker, speedup, efficiency, TFLOP/s and MFU per device,
    peak memory per rank, loss first → last."""
    rows = metrics.scaling(metrics.points(records, warmup=warmup), baseline_workers=baseline_workers)
    figure = unit(records)  # samples/sec for imported logs that count samples (the data's key stays tokens_per_sec)
    data = [point_data(r) for r in sorted(rows, key=lambda r: (r.point.stack, str(r.point.settings.extra),
                                                               r.point.workers))]
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
    notes = [STEP_FOOTNOTE] if any(d["scope"] == "steps" and _noise(d) != "-" for d in data) else []
    table = Table(tuple(columns), cells, tuple(data), title=f"Transformer training (lm): {figure}",
                  caption=tuple(c for c in caption if c), notes=tuple(notes), name="lm")
    return Document((table,), data=data)
