"""A Comparison as a document (repro.formats): sides, what changed, one table per kind, summary.

Every registered format renders it (table, markdown, csv, json, and any format added later). Settings
that are the same on every row go to a caption line, numbers are right-aligned, and each caption says
what its figures, ± and intervals are (docs/statistics.md). JSON is `to_dict` (format
repro.comparison/1); CSV has one row per compared point (kind: throughput, allreduce, tta, any registered
kind, old_only, new_only). Each kind's tables, summary and JSON come from the kind (repro.compare.kind); the
built-in kinds' tables are drawn by the builders here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from repro import formats
from repro.compare.align import Change, format_value
from repro.compare.allreduce import PATHS, AllreduceRow
from repro.compare.allreduce import as_dict as allreduce_dict
from repro.compare.core import Comparison, OneSided, SideInfo
from repro.compare.kind import KINDS, KindRows, order
from repro.compare.throughput import Side as ThroughputSide
from repro.compare.throughput import ThroughputRow
from repro.compare.tta import as_dict as tta_dict
from repro.formats import Block, Column, Document, Table, Text
from repro.results import stats
from repro.results.report import STEP_FOOTNOTE

NUMERIC_KEYS = frozenset({"workers", "hosts", "batch_per_worker", "threads"})
PATH_LABEL = {"horovod": "hvd", "raw": "raw"}
LABELS = {"batch_per_worker": "batch", "data_format": "format", "workers": "workers", "hosts": "hosts",
          "precision": "precision", "xla": "xla", "model": "model", "workload": "workload", "data": "data",
          "scaling": "scaling", "threads": "threads", "backend": "controller"}


def column_label(name: str) -> str:
    return LABELS.get(name, name.removeprefix("extra."))


_num, _pct = formats.number, formats.percent


def _points(value: float | None) -> str:
    """A change of a percentage, in percentage points."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * 100:+.1f} pt"


def _ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" if value >= 0.01 else f"{value:.2g}x"


def _us(seconds: float | None) -> str:
    return _num(seconds * 1e6 if seconds else None)


def factor_text(ratio: float, *, better: str = "faster", worse: str = "slower") -> str:
    """A ratio as people read it (pyperf, hyperfine): 1.27 -> '1.27x faster', 0.44 -> '2.26x slower'."""
    if ratio >= 1:
        return f"{ratio:.2f}x {better}"
    return f"{1 / ratio:.2f}x {worse}"


def verdict_text(ratio: stats.RatioResult, *, better: str = "faster", worse: str = "slower") -> str:
    """'1.35x faster', '1.08x slower' (never '0.93x slower'), 'equivalent within ±2%', 'inconclusive',
    'no significant difference', 'not enough runs'."""
    if ratio.verdict in (stats.FASTER, stats.SLOWER) and ratio.ratio:
        return factor_text(ratio.ratio, better=better, worse=worse)
    if ratio.verdict == stats.EQUIVALENT:
        return f"equivalent within ±{ratio.threshold:.0%}"
    return ratio.verdict


def _interval(ratio: stats.RatioResult) -> str:
    if ratio.low is None or ratio.high is None:
        return "-"
    return f"[{ratio.low:.3f}, {ratio.high:.3f}]"


def display_columns(c: Comparison, rows: Sequence[Any] | None = None) -> list[str]:
    """Key columns a table of `rows` (default: every compared point) shows: workers always, then every key that
    varies among them (the rest go to the caption)."""
    if rows is None:
        return [k for k in c.keys if k == "workers" or k in c.columns]
    return [k for k in c.keys if k == "workers" or len({dict(r.key).get(k) for r in rows}) > 1]


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
    if head:
        lines.append(f"What changed: {head}")
    elif ch.empty:
        lines.append("What changed: nothing recorded differs")
    else:  # differences the headline has no words for (a lock path, a setting): say so, they are listed below
        count = sum(len(x) for x in (ch.manifest, ch.lock, ch.software, ch.settings, ch.hardware))
        lines.append(f"What changed: {count} recorded difference{'s' if count != 1 else ''}, listed below")
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


def _constants(c: Comparison, rows: Sequence[Any], shown: Sequence[str]) -> str:
    """The key settings that are the same on every row, as one caption line ('model resnet50 · batch 64')."""
    if not rows:
        return ""
    said = []
    for name, value in rows[0].key:
        if name in shown or value is None or len({dict(r.key).get(name) for r in rows}) > 1:
            continue
        said.append(setting_words(name, value, workload=dict(rows[0].key).get("workload")))
    return " · ".join(said)


def setting_words(name: str, value: Any, *, workload: Any = None) -> str:
    """A key setting as a caption says it: 'batch 64 per worker', 'XLA off' ('torch.compile off' for a PyTorch
    workload), '2 hosts', 'fp16'."""
    shown = format_value(value)
    if name == "batch_per_worker":
        return f"batch {shown} per worker"
    if name == "xla":
        return f"{compiler_name(workload)} {'on' if value else 'off'}"
    if name in ("hosts", "workers"):
        return f"{shown} {name if value != 1 else name[:-1]}"
    if name == "precision":
        return shown
    return f"{column_label(name)} {shown}"


def compiler_name(workload: Any) -> str:
    """What the xla setting turns on for a workload: torch.compile for PyTorch's, XLA otherwise."""
    from repro.workloads.catalog import spec_of

    try:
        return "torch.compile" if spec_of(str(workload)).framework == "pytorch" else "XLA"
    except KeyError:
        return "XLA"


def _criterion(c: Comparison, ratios: Sequence[stats.RatioResult] = ()) -> str:
    thr = f"{c.options.threshold:.0%}"
    said = {r.verdict for r in ratios}
    # the two newer verdicts are explained where they occur (older outputs keep their caption unchanged)
    extra = ("; equivalent: the whole interval within ±" + thr if stats.EQUIVALENT in said else "") + (
        f"; inconclusive: the interval reaches beyond ±{thr} on both sides" if stats.INCONCLUSIVE in said else "")
    return (f"verdict: at {c.options.confidence:.0%} confidence over runs; changes under {thr} "
            f"are no significant difference{extra}")


def throughput_table(c: Comparison, rows: Sequence[ThroughputRow]) -> Table:
    """The throughput kind's table: images/sec of each side, NEW/OLD, its interval and verdict, efficiencies."""
    cols = display_columns(c, rows)
    conf = f"{c.options.confidence:.0%}"
    columns = [*(Column(column_label(k), numeric=k in NUMERIC_KEYS) for k in cols),
               *(Column(h, numeric=True) for h in ("OLD img/s", "OLD ±", "NEW img/s", "NEW ±", "NEW/OLD",
                                                   f"{conf} interval")),
               Column("verdict"), *(Column(h, numeric=True) for h in ("eff OLD", "eff NEW", "Δ eff"))]
    cells = [(*_key_cells(r.key, cols), _num(r.old.images_per_sec), _noise(r.old), _num(r.new.images_per_sec),
              _noise(r.new), _ratio(r.ratio.ratio), _interval(r.ratio), verdict_text(r.ratio),
              _pct(r.old.efficiency), _pct(r.new.efficiency), _points(r.efficiency_change)) for r in rows]
    caption = [_constants(c, rows, cols),
               f"img/s: geometric mean over runs; ±: half-width of its {conf} Student t interval over runs, relative",
               f"NEW/OLD: ratio of the geometric means; interval: {conf}, Welch's t on log figures of runs (paired t "
               "for interleaved pairs)",
               _criterion(c, [r.ratio for r in rows]),
               "eff: scaling efficiency (speedup / workers) of each side; Δ eff in percentage points; "
               "docs/statistics.md has the method"]
    return Table(tuple(columns), tuple(cells), tuple({"kind": "throughput", **dict(r.key), **row_dict(r)}
                                                     for r in rows),
                 title="Throughput (images/sec): NEW/OLD", caption=tuple(x for x in caption if x),
                 notes=tuple(_throughput_notes(c, rows)), name="throughput")


def _point_name(c: Comparison, rows: Sequence[ThroughputRow], key: Sequence[tuple[str, Any]]) -> str:
    values = dict(key)
    return ", ".join(f"{column_label(k)} {format_value(values.get(k))}" for k in display_columns(c, rows))


def _throughput_notes(c: Comparison, rows: Sequence[ThroughputRow]) -> list[str]:
    """What the table's figures rest on: few runs, step-only intervals, pairing, assumptions, warm-up."""
    lines = []
    if any(side.scope == stats.STEPS_SCOPE and side.noise is not None
           for r in rows for side in (r.old, r.new)):
        lines.append(STEP_FOOTNOTE)
    for r in rows:
        said = [r.ratio.note] if r.ratio.note else []
        if r.ratio.method == stats.PAIRED:
            said.append(f"{r.ratio.pairs} interleaved pairs: paired comparison")
        said += [f"efficiency {side}: {s.efficiency_note}" for side, s in (("OLD", r.old), ("NEW", r.new))
                 if s.efficiency_note]
        said += list(r.notes)
        lines += [f"{_point_name(c, rows, r.key)}: {text}" for text in said]
    return lines


def _backends(rows: Sequence[AllreduceRow], path: str) -> str:
    old = list(dict.fromkeys(r.old.backend for r in rows if r.path == path))
    new = list(dict.fromkeys(r.new.backend for r in rows if r.path == path))
    if not old:
        return ""
    label = ("hvd: the framework's all-reduce (Horovod's allreduce; torch_allreduce: torch.distributed.all_reduce)"
             if path == "horovod" else "raw: MPI_Allreduce without Horovod")
    same = old == new
    return f"{label}, {', '.join(old)}" if same else f"{label}, OLD {', '.join(old)}; NEW {', '.join(new)}"


def allreduce_table(c: Comparison, compared: Sequence[AllreduceRow]) -> Table:
    """The allreduce kind's table: per path and message size, time and bus bandwidth of each side, the verdict."""
    cols = [k for k in display_columns(c, compared) if k != "model"]
    rows = sorted(compared, key=lambda r: (PATHS.index(r.path) if r.path in PATHS else 9, r.key, r.dtype,
                                              r.bytes))
    dtypes = len({r.dtype for r in rows}) > 1
    conf = f"{c.options.confidence:.0%}"
    columns = [*(Column(column_label(k), numeric=k in NUMERIC_KEYS) for k in cols), Column("path"),
               *([Column("dtype")] if dtypes else []),
               *(Column(h, numeric=True) for h in ("size (B)", "time OLD (us)", "time NEW (us)", "time NEW/OLD",
                                                   "busbw OLD", "busbw NEW", "busbw NEW/OLD", f"{conf} interval")),
               Column("verdict")]
    cells = [(*_key_cells(r.key, cols), PATH_LABEL.get(r.path, r.path), *([r.dtype] if dtypes else []),
              f"{r.bytes:,}", _us(r.old.time_s), _us(r.new.time_s), _ratio(r.time_ratio),
              _num(r.old.busbw / 1e9 if r.old.busbw is not None else None, 2),
              _num(r.new.busbw / 1e9 if r.new.busbw is not None else None, 2),
              _ratio(r.bandwidth.ratio), _interval(r.bandwidth),
              verdict_text(r.bandwidth, better="more bandwidth", worse="less bandwidth")) for r in rows]
    constants = _constants(c, rows, cols)
    dtype = f"dtype {rows[0].dtype}" if rows and not dtypes and "dtypes " not in constants else ""
    runs = sorted({(r.old.runs, r.new.runs) for r in rows})
    said_runs = (f"{runs[0][0]} run{'s' if runs[0][0] != 1 else ''} OLD, {runs[0][1]} NEW" if len(runs) == 1
                 else "runs per side vary by size")
    caption = [" · ".join(x for x in (constants, dtype, said_runs) if x),
               *(x for x in (_backends(rows, p) for p in PATHS) if x),
               "time: one all-reduce, geometric mean over runs of each run's mean latency (us); busbw: size / time x "
               "2(n-1)/n in GB/s (1e9 bytes/s, nccl-tests' definition)",
               "busbw NEW/OLD: ratio of the bus bandwidths = OLD time / NEW time (time NEW/OLD is its inverse); "
               f"interval: {conf}, Welch's t on log figures of runs (paired t for interleaved runs), none below 2 "
               f"runs a side; {_criterion(c, [r.bandwidth for r in rows])}"]
    return Table(tuple(columns), tuple(cells), tuple({"kind": "allreduce", **dict(r.key), **allreduce_dict(r)}
                                                     for r in rows),
                 title="All-reduce: bus bandwidth NEW/OLD", caption=tuple(x for x in caption if x), name="allreduce")


def _quality(rows: Sequence[Any]) -> tuple[str, bool]:
    """The quality the rows' runs state (top-1 for repro's own runs; an imported log's metric otherwise) and
    whether it is a fraction shown as a percentage."""
    labels = {side.quality_label for r in rows for side in (r.old, r.new)} or {"top-1"}
    label = labels.pop() if len(labels) == 1 else "final quality"
    return label, label == "top-1"


def tta_table(c: Comparison, rows: Sequence[Any]) -> Table:
    """The tta kind's table: time to accuracy of each side, how many runs reached it, the speed-up."""
    cols = display_columns(c, rows)
    targets = {r.old.target or r.new.target for r in rows}
    quality, fraction = _quality(rows)
    shown = _pct if fraction else (lambda v: f"{v:.4g}" if isinstance(v, (int, float)) else "-")
    columns = [*(Column(column_label(k), numeric=k in NUMERIC_KEYS) for k in cols),
               *([Column("target", True)] if len(targets) > 1 else []),
               *(Column(h, numeric=True) for h in ("TTA OLD (s)", "TTA NEW (s)", "reached OLD", "reached NEW",
                                                   "OLD/NEW", "interval")),
               Column("verdict"), Column(f"{quality} OLD", True), Column(f"{quality} NEW", True), Column("flag")]
    cells = [(*_key_cells(r.key, cols), *([shown(r.old.target or r.new.target)] if len(targets) > 1 else []),
              _num(r.old.time_to_accuracy_s), _num(r.new.time_to_accuracy_s),
              f"{r.old.reached}/{r.old.runs}", f"{r.new.reached}/{r.new.runs}", _ratio(r.speedup.ratio),
              _interval(r.speedup), verdict_text(r.speedup), shown(r.old.final_quality), shown(r.new.final_quality),
              r.flag or "") for r in rows]
    known = len(targets) == 1 and (fraction or None not in targets)  # an MLPerf log may state no eval_target
    target = f"target {quality} {shown(next(iter(targets)))}" if known else ""
    if fraction:
        meaning = ("TTA: mean seconds until validation top-1 first reached the target, over the runs that reached it; "
                   "top-1: final validation accuracy (mean over runs)")
    else:  # imported MLPerf runs: the quality each benchmark's rules name (a loss or perplexity is reached from above)
        meaning = (f"TTA: mean seconds from run_start to run_stop, over the runs that reached the benchmark's quality "
                   f"target; {quality}: the last evaluation the logs state (mean over runs)")
    caption = [" · ".join(x for x in (_constants(c, rows, cols), target) if x), meaning,
               f"OLD/NEW: speed-up (>1: NEW is sooner), {c.options.confidence:.0%} interval over runs; "
               f"{_criterion(c, [r.speedup for r in rows])}"]
    return Table(tuple(columns), tuple(cells), tuple({"kind": "tta", **dict(r.key), **tta_dict(r)} for r in rows),
                 title="Time to accuracy: speed-up = OLD time / NEW time", caption=tuple(x for x in caption if x),
                 name="tta")


def summary_lines(summaries: Sequence[Any]) -> list[str]:
    """The throughput kind's summary per model: geometric mean of NEW/OLD and the count of each verdict."""
    lines = []
    for s in summaries:
        gm = _ratio(s.geomean)
        lines.append(f"{s.model}: {gm} (geometric mean of {s.points} point{'s' if s.points != 1 else ''}: "
                     f"{s.faster} faster, {s.slower} slower, {s.same} no significant difference, "
                     f"{s.not_enough} {stats.NOT_ENOUGH}"
                     + (f", {s.equivalent} {stats.EQUIVALENT}" if s.equivalent else "")
                     + (f", {s.inconclusive} {stats.INCONCLUSIVE}" if s.inconclusive else "")
                     + (f", {s.conditions} {stats.CONDITIONS}" if s.conditions else "") + ")")
    return lines


def reference_table(c: Comparison) -> Table:
    """NEW against OLD as a reference: each figure's ratio, its one-sided bounds and the verdict."""
    ref = c.reference
    assert ref is not None  # only called with a reference
    cols = display_columns(c, ref.rows)
    conf = f"{ref.confidence:.0%}"
    columns = [Column("kind"), *(Column(column_label(k), numeric=k in NUMERIC_KEYS) for k in cols), Column("figure"),
               *(Column(h, numeric=True) for h in ("NEW/REF", "lower bound", "upper bound")), Column("verdict")]
    cells = [(r.kind, *_key_cells(r.key, cols), r.figure, _ratio(r.ratio.ratio),
              *("-" if x is None else f"{x:.3f}" for x in (r.ratio.low, r.ratio.high)),
              ref.words(r)) for r in ref.rows]
    floor = f"{1 - ref.within:.0%}"
    caption = (f"NEW/REF: the figure of NEW over that of the reference (OLD), above 1 better; bounds: one-sided at "
               f"{conf} each (the ends of a two-sided {stats.one_sided(ref.confidence):.0%} interval)",
               f"within {ref.within:.0%}: the lower bound is at least {floor} of the reference; below: the upper bound "
               f"is under {floor}; undecided: neither (more runs on either side narrow it)")
    notes = tuple(dict.fromkeys(f"{r.kind} {r.figure}: {r.ratio.note}" if len(ref.rows) > 1 else r.ratio.note
                                for r in ref.rows if r.ratio.note))
    return Table(tuple(columns), tuple(cells), tuple(reference_dict(r, ref) for r in ref.rows),
                 title=f"Against the reference: NEW within {ref.within:.0%} of OLD?", caption=caption, notes=notes,
                 name="reference")


def reference_dict(row: Any, ref: Any) -> dict[str, Any]:
    """One reference row as plain data."""
    return {"kind": row.kind, **dict(row.key), "figure": row.figure, "ratio": row.ratio.ratio,
            "lower_bound": row.ratio.low, "upper_bound": row.ratio.high, "verdict": row.verdict,
            "within": ref.within, "confidence": ref.confidence, "method": row.ratio.method or None,
            "runs_reference": row.ratio.runs_old, "runs_new": row.ratio.runs_new, "note": row.ratio.note or None}


def _one_sided_table(c: Comparison, items: Sequence[OneSided], side: str) -> Table:
    cols = display_columns(c, items)
    columns = (*(Column(column_label(k), numeric=k in NUMERIC_KEYS) for k in cols), Column("runs", True),
               Column("failed", True))
    cells = tuple((*_key_cells(o.key, cols), str(o.runs), str(o.failed)) for o in items)
    runs = "runs_old" if side == "OLD" else "runs_new"
    data = tuple({"kind": f"{side.lower()}_only", **dict(o.key), runs: o.runs} for o in items)
    return Table(columns, cells, data, title=f"Only in {side} ({len(items)} point{'s' if len(items) != 1 else ''},"
                 " not compared)", caption=(_constants(c, items, cols),) if _constants(c, items, cols) else (),
                 name=f"{side.lower()}_only")


def document(c: Comparison, *, quiet: bool = False) -> Document:
    """The report: sides, hardware, what changed, one table per kind, summary, one-sided points.

    quiet (-q): the tables, the summary and the regressions only (no sides, hardware or what changed).
    """
    blocks: list[Block] = [] if quiet else [Text((_side_line(c.old), _side_line(c.new), _hardware_line(c),
                                                  *_changes_lines(c)), bullets=True)]
    parts = [(KINDS.get(name), part) for name, part in c.sections.items() if part.rows]
    for kind, part in parts:
        blocks += kind.tables(c, part)
    if c.reference is not None:
        blocks.append(reference_table(c))
    for kind, part in parts:
        blocks += kind.summary_blocks(c, part)
    if not parts:
        blocks.append(Text(("No point was measured on both sides.",)))
    if c.fabric:  # beside the verdicts: a different path is the usual reason a run is slower
        blocks.append(Text(c.fabric, bullets=True))
    blocks += [_one_sided_table(c, items, side) for items, side in ((c.old_only, "OLD"), (c.new_only, "NEW"))
               if items]
    tail = [] if quiet else [f"Note: {n}" for n in c.notes]
    if c.regressions:
        tail.append(f"Regressions: {len(c.regressions)} point(s) significantly slower beyond "
                    f"{c.options.threshold:.0%}")
    if tail:
        blocks.append(Text(tuple(tail), bullets=True))
    return Document(tuple(blocks), data=to_dict(c))


# -- machine-readable -------------------------------------------------------------------------------

def _change_dict(ch: Change) -> dict[str, Any]:
    def plain(v: Any) -> Any:
        return sorted(map(str, v)) if isinstance(v, (set, frozenset)) else v

    return {"path": ch.path, "old": plain(ch.old), "new": plain(ch.new), "text": ch.render()}


def row_dict(r: ThroughputRow) -> dict[str, Any]:
    """A throughput row's figures as plain data."""
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


def _kinds_data(c: Comparison) -> dict[str, Any]:
    """Every registered kind's JSON keys, in registration order (a kind without rows: its empty lists)."""
    empty = KindRows(())
    out: dict[str, Any] = {}
    for name in order([*KINDS.names(), *c.sections]):
        out |= KINDS.get(name).data(c, c.sections.get(name, empty))
    return out


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
        **_kinds_data(c),
        "old_only": [{"point": dict(o.key), "runs": o.runs, "failed": o.failed} for o in c.old_only],
        "new_only": [{"point": dict(o.key), "runs": o.runs, "failed": o.failed} for o in c.new_only],
        "notes": list(c.notes),
        "interleave": c.interleave,
        "regressions": len(c.regressions),
        **({"reference": {"within": c.reference.within, "confidence": c.reference.confidence,
                          "rows": [reference_dict(r, c.reference) for r in c.reference.rows]}}
           if c.reference is not None else {}),
    }
    if c.fabric:  # only when there is something to say: earlier comparisons' JSON stays as it was
        data["fabric"] = list(c.fabric)
    return formats.clean(data)


def render(c: Comparison, fmt: str = "table", *, quiet: bool = False) -> str:
    """The comparison in one of the registered formats (repro.formats.FORMATS); quiet: see `document`."""
    return formats.render(document(c, quiet=quiet), fmt)
