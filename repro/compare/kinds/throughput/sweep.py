"""The scaling table of seeds 000/001 as a document (render only): one row per point, report-ready.

    render(scaling_document(metrics.scaling(metrics.points(records))), "markdown")

Settings that are the same on every row (stack, workload, model, batch, precision, ...) go to a caption
line; only what varies gets a column. Numbers are right-aligned, percentages have one decimal, and the
caption says what the figures and ± are (docs/statistics.md). csv and json get the raw numbers.
`repro results scaling` prints it, and `repro bench` prints the same table at the end of a sweep: the
throughput kind's end-of-sweep document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from repro.formats import Column, Document, Table, constant_settings, number, percent, render
from repro.results import stats
from repro.results.metrics import ScalingRow
from repro.results.record import RunRecord

STEP_FOOTNOTE = "* one run: its ± covers step noise only, not the run-to-run variation"
SETTINGS = ("stack", "workload", "model", "batch", "precision", "xla", "data", "data_format", "threads", "hosts")


def interval_caption(confidence: float = stats.DEFAULT_CONFIDENCE) -> str:
    """What the images/sec figure and its ± are."""
    return (f"images/sec: geometric mean over runs; ±: half-width of its {confidence:.0%} Student t interval "
            "over runs, relative to it (docs/statistics.md)")


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def scaling_data(row: ScalingRow) -> dict[str, Any]:
    """One scaling row as plain data (raw numbers: efficiency 0.76, not '76%')."""
    p = row.point
    s = p.settings
    est = p.estimate
    low = _finite(est.low) if est else None
    return {
        "stack": p.stack, "stack_hash": p.stack_hash, "workload": s.workload, "model": s.model,
        "batch": s.batch_per_worker, "global_batch": s.global_batch, "precision": s.precision, "xla": s.xla,
        "data": s.data, "data_format": s.data_format, "threads": s.threads, "workers": s.workers, "hosts": s.hosts,
        "extra": dict(s.extra),
        "images_per_sec": _finite(p.images_per_sec), "low": low, "high": _finite(est.high) if est else None,
        "interval": est.scope if low is not None else None,
        "source": "+".join(p.sources) or None, "per_worker": _finite(p.per_worker),
        "speedup": row.speedup, "efficiency": row.efficiency, "across_node_efficiency": row.across_node_efficiency,
        "baseline_workers": row.baseline_workers, "runs": len(p.records), "failed": p.failed,
        "published": any(r.published is not None for r in p.records), "notes": list(row.notes),
    }


def setting_cell(key: str, d: dict[str, Any]) -> str:
    """A setting as a table cell; None is '?' (an imported log did not say) or '-' (the workload has none)."""
    value = d.get(key)
    if key == "model":
        extra = ", ".join(f"{k}={v}" for k, v in d["extra"].items())
        return str(value or "-") + (f" ({extra})" if extra else "")
    if key == "xla":
        return "?" if value is None else "on" if value else "off"
    if key in ("precision", "hosts"):
        return "?" if value is None else str(value)
    return "-" if value is None else str(value)


def _spec(d: dict[str, Any]):
    from repro.workloads.catalog import spec_of

    try:
        return spec_of(str(d.get("workload")))
    except KeyError:  # an imported program's log: no spec
        return None


def _compiler(d: dict[str, Any]) -> str:
    """What the xla setting turns on: XLA for TensorFlow, torch.compile for PyTorch."""
    spec = _spec(d)
    return "torch.compile" if spec is not None and spec.framework == "pytorch" else "XLA"


def _not_applicable(key: str, d: dict[str, Any]) -> bool:
    """Whether a known workload has no such setting (so None means n/a, not unknown)."""
    spec = _spec(d)
    return spec is not None and key in ("xla", "precision") and spec.by_setting(key) is None


def setting_text(key: str, d: dict[str, Any]) -> str:
    """A setting as words for a caption: 'stack cpu-tf215 (hash 0123abcd4567)', 'batch 32 per worker'; '' for a
    setting the workload does not have."""
    cell = setting_cell(key, d)
    if cell == "-":
        return ""
    name = _compiler(d) if key == "xla" else key
    if cell == "?":
        # None: a setting the workload does not have (the probe's precision) is n/a; else a log did not say
        return f"{name} {'n/a' if _not_applicable(key, d) else 'unknown'}"
    return {"stack": f"stack {cell}" + (f" (hash {d['stack_hash']})" if d.get("stack_hash") else ""),
            "batch": f"batch {cell} per worker", "xla": f"{name} {cell}", "precision": cell,
            "hosts": f"{cell} host{'s' if cell != '1' else ''}",
            "threads": f"{cell} intra-op thread{'s' if cell != '1' else ''} per worker"}.get(key, f"{key} {cell}")


def _noise(d: dict[str, Any]) -> str:
    if not d["images_per_sec"] or d["low"] is None or d["high"] is None:
        return "-"
    text = percent((d["high"] - d["low"]) / 2 / d["images_per_sec"])
    return text + ("*" if d["interval"] == stats.STEPS_SCOPE else "")  # one run: step noise only


def _order(rows: Sequence[ScalingRow]) -> list[ScalingRow]:
    def key(r: ScalingRow) -> tuple:
        s = r.point.settings
        return (r.point.stack, s.workload, str(s.model), sorted((k, str(v)) for k, v in s.extra.items()),
                s.batch_per_worker or 0, s.threads or 0, s.workers, s.hosts or 0)

    return sorted(rows, key=key)


def numbered_notes(notes_per_row: Sequence[Sequence[str]]) -> tuple[list[str], list[str]]:
    """Each distinct note once: ([the row's note numbers, '1, 2'], ['[1] text', ...])."""
    numbers: dict[str, int] = {}
    for notes in notes_per_row:
        for n in notes:
            numbers.setdefault(n, len(numbers) + 1)
    refs = [", ".join(str(numbers[n]) for n in dict.fromkeys(notes)) for notes in notes_per_row]
    return refs, [f"[{i}] {text}" for text, i in numbers.items()]


def _figures(data: list[dict[str, Any]], hosts: bool) -> list[tuple[Column, list[str]]]:
    """Workers (and hosts where they vary), then the figure columns that say something here, with their cells."""
    def col(header: str, cells: list[str], always: bool = True) -> list[tuple[Column, list[str]]]:
        return [(Column(header, numeric=True), cells)] if always or any(c not in ("-", "") for c in cells) else []

    refs, _ = numbered_notes([d["notes"] for d in data])
    return [*col("workers", [str(d["workers"]) for d in data]),
            *(col("hosts", [setting_cell("hosts", d) for d in data]) if hosts else []),
            *col("images/sec", [number(d["images_per_sec"]) for d in data]),
            *col("±", [_noise(d) for d in data], False),
            *col("per worker", [number(d["per_worker"]) for d in data]),
            *col("speedup", [number(d["speedup"], 2) + ("x" if d["speedup"] is not None else "") for d in data]),
            *col("efficiency", [percent(d["efficiency"]) for d in data]),
            *col("across-node eff", [percent(d["across_node_efficiency"]) for d in data], False),
            *col("runs", [str(d["runs"]) for d in data]),
            *col("failed", [str(d["failed"]) if d["failed"] else "" for d in data], False),
            *col("notes", refs, False)]


def scaling_document(rows: Sequence[ScalingRow], *, title: str = "") -> Document:
    """The scaling table (workers, images/sec ±, per worker, speedup, efficiency, across-node efficiency)."""
    data = [scaling_data(r) for r in _order(rows)]
    same, varying = constant_settings([{k: setting_cell(k, d) for k in SETTINGS} for d in data], SETTINGS)
    settings = [(Column(k if k != "batch" else "batch/worker", numeric=k in ("batch", "threads", "hosts")),
                 [setting_cell(k, d) for d in data]) for k in varying if k != "hosts"]
    columns = [*settings, *_figures(data, "hosts" in varying)]
    said = [t for k in same if (t := setting_text(k, data[0]))] if data else []
    caption = [" · ".join(said)] if said else []
    caption.append(interval_caption() if any(_noise(d) != "-" for d in data) else "images/sec: geometric mean "
                   "over runs (no interval here: published figures, or runs without step times)")
    if rows and all(r.point.warmup == "auto" for r in rows):
        caption.append("warm-up: --warmup auto, each rank measured from its detected steady state (stored with the "
                       "runs' figures)")
    if any(d["speedup"] is not None for d in data):
        caption.append("speedup: images/sec against the 1-worker point of the same series (or the named "
                       "baseline); efficiency = speedup / workers")
    notes = [STEP_FOOTNOTE] if any(_noise(d).endswith("*") for d in data) else []
    notes += numbered_notes([d["notes"] for d in data])[1]
    cells = tuple(tuple(cells[i] for _, cells in columns) for i in range(len(data)))
    return Document((Table(tuple(c for c, _ in columns), cells, tuple(data), title=title, caption=tuple(caption),
                           notes=tuple(notes), name="scaling"),))


def scaling_table(rows: Sequence[ScalingRow], fmt: str = "table") -> str:
    """The scaling table in one of the registered formats (repro.formats.FORMATS)."""
    return render(scaling_document(rows), fmt)


def scaling_report(records: Sequence[RunRecord], fmt: str = "table", *, warmup: str = "fixed",
                   baseline_workers: int | None = None) -> str:
    """The scaling table (workers, images/sec, per worker, speedup, efficiency) of these records.

    warmup: "fixed" or "auto" (repro.results.steady); baseline_workers: a named baseline point.
    """
    from repro.results import metrics

    pts = metrics.points(records, warmup=warmup)
    return scaling_table(metrics.scaling(pts, baseline_workers=baseline_workers), fmt)
