"""Tables of results for people and programs (render only): the scaling table of seeds 000/001.

    scaling_table(metrics.scaling(metrics.points(records)), "table")

`repro results scaling` prints it, and `repro bench` prints the same table at the end of a sweep.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from repro.errors import InputError
from repro.results import stats
from repro.results.metrics import ScalingRow

FORMATS = ("table", "markdown", "csv", "json")
STEP_FOOTNOTE = "* one run: its ± covers step noise only, not the run-to-run variation"
COLUMNS = ("stack", "workload", "model", "batch", "precision", "xla", "workers", "hosts", "images/sec", "±",
           "per worker", "speedup", "efficiency", "across-node eff", "runs", "failed", "notes")


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def scaling_data(row: ScalingRow) -> dict[str, Any]:
    """One scaling row as plain data (raw numbers: efficiency 0.76, not '76%')."""
    p = row.point
    s = p.settings
    est = p.estimate
    low = _finite(est.low) if est else None
    extra = {k: v for k, v in s.extra.items()}
    return {
        "stack": p.stack, "stack_hash": p.stack_hash, "workload": s.workload, "model": s.model,
        "batch": s.batch_per_worker, "global_batch": s.global_batch, "precision": s.precision, "xla": s.xla,
        "data": s.data, "workers": s.workers, "hosts": s.hosts, "extra": extra,
        "images_per_sec": _finite(p.images_per_sec), "low": low, "high": _finite(est.high) if est else None,
        "interval": est.scope if low is not None else None,
        "source": "+".join(p.sources) or None, "per_worker": _finite(p.per_worker),
        "speedup": row.speedup, "efficiency": row.efficiency, "across_node_efficiency": row.across_node_efficiency,
        "baseline_workers": row.baseline_workers, "runs": len(p.records), "failed": p.failed,
        "published": any(r.published is not None for r in p.records), "notes": list(row.notes),
    }


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _cells(row: ScalingRow) -> list[str]:
    d = scaling_data(row)
    noise = "-"
    if d["images_per_sec"] and d["low"] is not None and d["high"] is not None:
        noise = f"{(d['high'] - d['low']) / 2 / d['images_per_sec'] * 100:.1f}%"
        noise += "*" if d["interval"] == stats.STEPS_SCOPE else ""  # one run: step noise only
    extra = ", ".join(f"{k}={v}" for k, v in d["extra"].items())
    model = str(d["model"] or "-") + (f" ({extra})" if extra else "")
    xla = "?" if d["xla"] is None else "on" if d["xla"] else "off"  # ?: unknown (an imported log did not say)
    return [d["stack"], d["workload"], model, str(d["batch"] or "-"), d["precision"] or "?", xla,
            str(d["workers"]), "?" if d["hosts"] is None else str(d["hosts"]), _num(d["images_per_sec"], 2), noise,
            _num(d["per_worker"], 2),
            "-" if d["speedup"] is None else f"{d['speedup']:.2f}x",
            "-" if d["efficiency"] is None else f"{d['efficiency'] * 100:.2f}%",
            "-" if d["across_node_efficiency"] is None else f"{d['across_node_efficiency'] * 100:.2f}%",
            str(d["runs"]), str(d["failed"]), "; ".join(d["notes"])]


def _order(rows: Sequence[ScalingRow]) -> list[ScalingRow]:
    def key(r: ScalingRow) -> tuple:
        s = r.point.settings
        return (r.point.stack, s.workload, str(s.model), sorted((k, str(v)) for k, v in s.extra.items()),
                s.batch_per_worker or 0, s.workers, s.hosts or 0)

    return sorted(rows, key=key)


def scaling_table(rows: Sequence[ScalingRow], fmt: str = "table") -> str:
    """The scaling table (workers, images/sec, per worker, speedup, efficiency, across-node efficiency)."""
    ordered = _order(rows)
    if fmt == "json":
        return json.dumps([scaling_data(r) for r in ordered], indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        fields = [k for k in scaling_data(ordered[0])] if ordered else ["stack"]
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for r in ordered:
            d = scaling_data(r)
            d["extra"] = json.dumps(d["extra"], sort_keys=True)
            d["notes"] = "; ".join(d["notes"])
            writer.writerow({k: "" if v is None else v for k, v in d.items()})
        return buf.getvalue()
    if fmt not in FORMATS:
        raise InputError(f"--format: expected one of {', '.join(FORMATS)}, found '{fmt}'")
    from tabulate import tabulate

    body = [_cells(r) for r in ordered]
    # drop columns that say nothing here (all '-' or all empty), keep the figures
    keep = [i for i, name in enumerate(COLUMNS)
            if name in ("workers", "images/sec", "speedup", "efficiency")
            or any(row[i] not in ("-", "") for row in body)]
    headers = [COLUMNS[i] for i in keep]
    table = [[row[i] for i in keep] for row in body]
    text = tabulate(table, headers=headers, tablefmt="github" if fmt == "markdown" else "simple",
                    disable_numparse=True) + "\n"
    if any(row[COLUMNS.index("±")].endswith("*") for row in body):
        text += ("\\" if fmt == "markdown" else "") + STEP_FOOTNOTE + "\n"
    return text
