"""Renderers of a Comparison: terminal table, markdown, CSV, JSON. They only render."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from repro.compare.align import Change, format_value
from repro.compare.allreduce import as_dict as allreduce_dict
from repro.compare.core import Comparison, OneSided, SideInfo
from repro.compare.throughput import Side as ThroughputSide
from repro.compare.throughput import ThroughputRow
from repro.compare.tta import as_dict as tta_dict
from repro.errors import InputError
from repro.results import stats
from repro.results.report import STEP_FOOTNOTE

FORMATS = ("table", "markdown", "csv", "json")
LABELS = {"batch_per_worker": "batch", "data_format": "format", "workers": "workers", "hosts": "hosts",
          "precision": "precision", "xla": "xla", "model": "model", "workload": "workload", "data": "data",
          "scaling": "scaling", "threads": "threads", "backend": "controller"}


def column_label(name: str) -> str:
    return LABELS.get(name, name.removeprefix("extra."))


def _num(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:,.{digits}f}"


def _pct(value: float | None, digits: int = 1) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * 100:.{digits}f}%"


def _points(value: float | None) -> str:
    """A change of a percentage, in percentage points."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * 100:+.1f} pt"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def factor_text(ratio: float, *, better: str = "faster", worse: str = "slower") -> str:
    """A ratio as people read it (pyperf, hyperfine): 1.27 -> '1.27x faster', 0.44 -> '2.26x slower'."""
    if ratio >= 1:
        return f"{ratio:.2f}x {better}"
    return f"{1 / ratio:.2f}x {worse}"


def verdict_text(ratio: stats.RatioResult, *, better: str = "faster", worse: str = "slower") -> str:
    """'1.35x faster', '1.08x slower' (never '0.93x slower'), 'no significant difference', 'not enough runs'."""
    if ratio.verdict in (stats.FASTER, stats.SLOWER) and ratio.ratio:
        return factor_text(ratio.ratio, better=better, worse=worse)
    return ratio.verdict


def _interval(ratio: stats.RatioResult) -> str:
    if ratio.low is None or ratio.high is None:
        return "-"
    return f"[{ratio.low:.3f}, {ratio.high:.3f}]"


def display_columns(c: Comparison) -> list[str]:
    """Key columns a table shows: model and workers always, then every key that varies."""
    cols = [k for k in c.keys if k in ("model", "workers") or k in c.columns]
    return cols


def _key_cells(key: Sequence[tuple[str, Any]], cols: Sequence[str]) -> list[str]:
    values = dict(key)
    return [format_value(values.get(col)) for col in cols]


def _side_line(side: SideInfo) -> str:
    stacks = ", ".join(f"{n}" for n in side.stacks)
    hashes = ", ".join(side.stack_hashes)
    described = side.description and side.description != f"stack {stacks}"
    what = f" — {side.description}" if described else ""
    runs = f"{side.runs} run{'s' if side.runs != 1 else ''}"
    return f"{side.label}: {stacks} (hash {hashes}; {runs}, {side.failed} failed){what}"


def _changes_lines(c: Comparison) -> list[str]:
    ch = c.changes
    lines = []
    head = ch.headline()
    lines.append(f"What changed: {head}" if head else "What changed: nothing recorded differs")
    for title, items in (("manifest", ch.manifest), ("lock", ch.lock), ("software", ch.software),
                         ("settings", ch.settings), ("hardware", ch.hardware)):
        if items:
            lines.append(f"  {title}:")
            lines.extend(f"    {item.render()}" for item in items)
    return lines


def _hardware_line(c: Comparison) -> str:
    old, new = c.old.hardware.describe(), c.new.hardware.describe()
    if c.changes.hardware:
        return f"Hardware: DIFFERENT (allowed by --allow-different-hardware): OLD {old}; NEW {new}"
    return f"Hardware: OLD {old}; NEW {new}" if old != new else f"Hardware: {old} on both sides"


def _noise(side: ThroughputSide) -> str:
    """The ± of a side; '*' marks one run's interval, which covers step noise only."""
    text = _pct(side.noise)
    return f"{text}*" if text != "-" and side.scope == stats.STEPS_SCOPE else text


def _throughput_table(c: Comparison) -> tuple[list[str], list[list[str]]]:
    cols = display_columns(c)
    headers = [*map(column_label, cols), "OLD img/s", "OLD ±", "NEW img/s", "NEW ±", "NEW/OLD",
               f"{c.options.confidence:.0%} interval", "verdict", "eff OLD", "eff NEW", "Δ eff"]
    rows = []
    for r in c.throughput:
        rows.append([*_key_cells(r.key, cols), _num(r.old.images_per_sec), _noise(r.old),
                     _num(r.new.images_per_sec), _noise(r.new), _ratio(r.ratio.ratio), _interval(r.ratio),
                     verdict_text(r.ratio), _pct(r.old.efficiency), _pct(r.new.efficiency),
                     _points(r.efficiency_change)])
    return headers, rows


def _point_name(c: Comparison, key: Sequence[tuple[str, Any]]) -> str:
    values = dict(key)
    return ", ".join(f"{column_label(k)} {format_value(values.get(k))}" for k in display_columns(c))


def _throughput_notes(c: Comparison) -> list[str]:
    """What the table's figures rest on: few runs, step-only intervals, pairing, assumptions, warm-up."""
    lines = []
    if any(side.scope == stats.STEPS_SCOPE and side.noise is not None
           for r in c.throughput for side in (r.old, r.new)):
        lines.append(STEP_FOOTNOTE)
    for r in c.throughput:
        said = [r.ratio.note] if r.ratio.note else []
        if r.ratio.method == stats.PAIRED:
            said.append(f"{r.ratio.pairs} interleaved pairs: paired comparison")
        said += [f"efficiency {side}: {s.efficiency_note}" for side, s in (("OLD", r.old), ("NEW", r.new))
                 if s.efficiency_note]
        said += list(r.notes)
        lines += [f"{_point_name(c, r.key)}: {text}" for text in said]
    return lines


def _allreduce_table(c: Comparison) -> tuple[list[str], list[list[str]]]:
    cols = [k for k in display_columns(c) if k != "model"]
    headers = [*map(column_label, cols), "backend", "dtype", "bytes", "lat OLD (s)", "lat NEW (s)", "lat NEW/OLD",
               "busbw OLD (GB/s)", "busbw NEW (GB/s)", "bw NEW/OLD", "interval", "verdict"]
    rows = []
    for r in c.allreduce:
        backend = r.old.backend if r.old.backend == r.new.backend else f"{r.old.backend} → {r.new.backend}"
        rows.append([*_key_cells(r.key, cols), backend, r.dtype, f"{r.bytes:,}",
                     f"{r.old.latency_median:.3g}" if r.old.latency_median else "-",
                     f"{r.new.latency_median:.3g}" if r.new.latency_median else "-", _ratio(r.latency_ratio),
                     _num(r.old.busbw_median / 1e9 if r.old.busbw_median else None, 3),
                     _num(r.new.busbw_median / 1e9 if r.new.busbw_median else None, 3),
                     _ratio(r.bandwidth.ratio), _interval(r.bandwidth),
                     verdict_text(r.bandwidth, better="more bandwidth", worse="less bandwidth")])
    return headers, rows


def _tta_table(c: Comparison) -> tuple[list[str], list[list[str]]]:
    cols = display_columns(c)
    headers = [*map(column_label, cols), "target", "TTA OLD (s)", "TTA NEW (s)", "reached OLD", "reached NEW",
               "OLD/NEW", "interval", "verdict", "top-1 OLD", "top-1 NEW", "flag"]
    rows = []
    for r in c.tta:
        rows.append([*_key_cells(r.key, cols), _num(r.old.target or r.new.target, 3),
                     _num(r.old.time_to_accuracy_s), _num(r.new.time_to_accuracy_s),
                     f"{r.old.reached}/{r.old.runs}", f"{r.new.reached}/{r.new.runs}", _ratio(r.speedup.ratio),
                     _interval(r.speedup), verdict_text(r.speedup), _num(r.old.final_top1, 4),
                     _num(r.new.final_top1, 4), r.flag or ""])
    return headers, rows


def _summary_lines(c: Comparison) -> list[str]:
    lines = []
    for s in c.summaries:
        gm = _ratio(s.geomean)
        lines.append(f"  {s.model}: {gm} (geometric mean of {s.points} point{'s' if s.points != 1 else ''}: "
                     f"{s.faster} faster, {s.slower} slower, {s.same} no significant difference, "
                     f"{s.not_enough} {stats.NOT_ENOUGH})")
    return lines


def _one_sided_lines(c: Comparison, items: Sequence[OneSided], side: str) -> list[str]:
    if not items:
        return []
    cols = display_columns(c)
    lines = [f"Only in {side} ({len(items)} point{'s' if len(items) != 1 else ''}, not compared):"]
    for o in items:
        values = dict(o.key)
        shown = ", ".join(f"{column_label(k)} {format_value(values.get(k))}" for k in cols)
        lines.append(f"  {shown}: {o.runs} runs, {o.failed} failed")
    return lines


def render_text(c: Comparison, *, markdown: bool = False) -> str:
    """The report: sides, hardware, what changed, tables, summary, one-sided points."""
    from tabulate import tabulate

    fmt = "github" if markdown else "simple"
    heading = (lambda t: f"### {t}") if markdown else (lambda t: f"{t}")
    header = [_side_line(c.old), _side_line(c.new), _hardware_line(c), *_changes_lines(c)]
    if markdown:  # nested bullets: two spaces of indentation per level
        header = [f"{'  ' * ((len(x) - len(x.lstrip())) // 2)}- {x.strip()}" for x in header]
    out = [*header, ""]
    crit = (f"at {c.options.confidence:.0%} confidence over runs; differences under {c.options.threshold:.0%} count as "
            "no significant difference")
    for title, builder, present in (("Throughput (images/sec): ratio NEW/OLD", _throughput_table, c.throughput),
                                    ("All-reduce: bandwidth ratio NEW/OLD", _allreduce_table, c.allreduce),
                                    ("Time to accuracy: speed-up = OLD time / NEW time", _tta_table, c.tta)):
        if not present:
            continue
        headers, rows = builder(c)
        out += [heading(f"{title} {crit}"), tabulate(rows, headers=headers, tablefmt=fmt, disable_numparse=True)]
        notes = _throughput_notes(c) if builder is _throughput_table else []
        out += [f"- {n.replace('*', chr(92) + '*', 1)}" if markdown else f"  {n}" for n in notes] + [""]
    if c.summaries:
        out += [heading("Summary per model (NEW/OLD)"), *_summary_lines(c), ""]
    if not (c.throughput or c.allreduce or c.tta):
        out += ["No point was measured on both sides.", ""]
    out += _one_sided_lines(c, c.old_only, "OLD") + _one_sided_lines(c, c.new_only, "NEW")
    out += [f"Note: {n}" for n in c.notes]
    if c.regressions:
        out.append(f"Regressions: {len(c.regressions)} point(s) significantly slower beyond "
                   f"{c.options.threshold:.0%}")
    return "\n".join(out).rstrip() + "\n"


# -- machine-readable -------------------------------------------------------------------------------

def _change_dict(ch: Change) -> dict[str, Any]:
    def plain(v: Any) -> Any:
        return sorted(map(str, v)) if isinstance(v, (set, frozenset)) else v

    return {"path": ch.path, "old": plain(ch.old), "new": plain(ch.new), "text": ch.render()}


def _row_dict(r: ThroughputRow) -> dict[str, Any]:
    return {
        "images_per_sec_old": r.old.images_per_sec, "images_per_sec_new": r.new.images_per_sec,
        "low_old": r.old.low, "high_old": r.old.high, "low_new": r.new.low, "high_new": r.new.high,
        "noise_old": r.old.noise, "noise_new": r.new.noise, "interval_old": r.old.scope or None,
        "interval_new": r.new.scope or None,
        "ratio": r.ratio.ratio, "low": r.ratio.low, "high": r.ratio.high, "verdict": r.ratio.verdict,
        "method": r.ratio.method or None, "pairs": r.ratio.pairs, "note": r.ratio.note or None,
        "efficiency_old": r.old.efficiency, "efficiency_new": r.new.efficiency,
        "efficiency_change": r.efficiency_change, "runs_old": r.old.runs, "runs_new": r.new.runs,
        "failed_old": r.old.failed, "failed_new": r.new.failed,
        "published_old": r.old.published, "published_new": r.new.published,
        "efficiency_note_old": r.old.efficiency_note or None, "efficiency_note_new": r.new.efficiency_note or None,
        "notes": list(r.notes),
    }


def _side_dict(s: SideInfo) -> dict[str, Any]:
    hw = s.hardware
    return {"description": s.description, "stacks": list(s.stacks), "stack_hashes": list(s.stack_hashes),
            "runs": s.runs, "failed": s.failed,
            "hardware": {"gpus": list(hw.gpus), "interconnects": list(hw.interconnects),
                         "systems": list(hw.systems), "hosts": list(hw.hosts)}}


def _clean(value: Any) -> Any:
    """NaN and infinities become null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def to_dict(c: Comparison) -> dict[str, Any]:
    """The whole comparison as plain JSON data."""
    ch = c.changes
    data = {
        "format": "repro.comparison/1",
        "old": _side_dict(c.old), "new": _side_dict(c.new),
        "options": {"threshold": c.options.threshold, "confidence": c.options.confidence,
                    "allow_different_hardware": c.options.allow_different_hardware, "warmup": c.options.warmup,
                    "baseline_workers": c.options.baseline_workers},
        "keys": list(c.keys),
        "changes": {"headline": ch.headline(), "manifest": [_change_dict(x) for x in ch.manifest],
                    "lock": [_change_dict(x) for x in ch.lock], "software": [_change_dict(x) for x in ch.software],
                    "settings": [_change_dict(x) for x in ch.settings],
                    "hardware": [_change_dict(x) for x in ch.hardware]},
        "throughput": [{"point": dict(r.key), **_row_dict(r)} for r in c.throughput],
        "summary": [asdict(s) for s in c.summaries],
        "allreduce": [{"point": dict(r.key), **allreduce_dict(r)} for r in c.allreduce],
        "tta": [{"point": dict(r.key), **tta_dict(r)} for r in c.tta],
        "old_only": [{"point": dict(o.key), "runs": o.runs, "failed": o.failed} for o in c.old_only],
        "new_only": [{"point": dict(o.key), "runs": o.runs, "failed": o.failed} for o in c.new_only],
        "notes": list(c.notes),
        "regressions": len(c.regressions),
    }
    return _clean(data)


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    return "; ".join(map(str, value)) if isinstance(value, list) else value


def render_csv(c: Comparison) -> str:
    """One CSV row per compared point (kind: throughput, allreduce, tta, old_only, new_only)."""
    rows: list[dict[str, Any]] = []
    for r in c.throughput:
        rows.append({"kind": "throughput", **dict(r.key), **_row_dict(r)})
    for r in c.allreduce:
        rows.append({"kind": "allreduce", **dict(r.key), **allreduce_dict(r)})
    for r in c.tta:
        rows.append({"kind": "tta", **dict(r.key), **tta_dict(r)})
    for o in (*c.old_only, *c.new_only):
        rows.append({"kind": f"{o.side.lower()}_only", **dict(o.key), "runs_old" if o.side == "OLD" else "runs_new":
                     o.runs})
    fields = list(dict.fromkeys(k for row in rows for k in row))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields or ["kind"], lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _csv_cell(v) for k, v in _clean(row).items()})
    return buf.getvalue()


def render(c: Comparison, fmt: str = "table") -> str:
    """The comparison in one of FORMATS."""
    if fmt == "table":
        return render_text(c)
    if fmt == "markdown":
        return render_text(c, markdown=True)
    if fmt == "csv":
        return render_csv(c)
    if fmt == "json":
        return json.dumps(to_dict(c), indent=2, sort_keys=False) + "\n"
    raise InputError(f"--format: expected one of {', '.join(FORMATS)}, found '{fmt}'")
