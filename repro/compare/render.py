"""A Comparison as a document (repro.formats): sides, what changed, one table per kind, summary.

Every registered format renders it (table, markdown, csv, json, and any format added later). Settings
that are the same on every row go to a caption line, numbers are right-aligned, and each caption says
what its figures, ± and intervals are (docs/statistics.md). JSON is `to_dict` (format
repro.comparison/1); CSV has one row per compared point (kind: each registered kind's name, old_only,
new_only). Each kind's tables, summary and JSON come from the kind's own module (repro.compare.kinds), given
the comparison's frozen view; nothing here names a kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro import formats
from repro.compare.align import Change
from repro.compare.cells import constants, display_columns, key_cells, key_columns, ratio_text
from repro.compare.core import Comparison, OneSided, SideInfo
from repro.compare.kind import KINDS, KindRows, order
from repro.formats import Block, Column, Document, Table, Text
from repro.results import stats


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


def reference_table(c: Comparison) -> Table:
    """NEW against OLD as a reference: each figure's ratio, its one-sided bounds and the verdict."""
    ref = c.reference
    assert ref is not None  # only called with a reference
    cols = display_columns(c.view, ref.rows)
    conf = f"{ref.confidence:.0%}"
    columns = [Column("kind"), *key_columns(cols), Column("figure"),
               *(Column(h, numeric=True) for h in ("NEW/REF", "lower bound", "upper bound")), Column("verdict")]
    cells = [(r.kind, *key_cells(r.key, cols), r.figure, ratio_text(r.ratio.ratio),
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
    cols = display_columns(c.view, items)
    columns = (*key_columns(cols), Column("runs", True),
               Column("failed", True))
    cells = tuple((*key_cells(o.key, cols), str(o.runs), str(o.failed)) for o in items)
    runs = "runs_old" if side == "OLD" else "runs_new"
    data = tuple({"kind": f"{side.lower()}_only", **dict(o.key), runs: o.runs} for o in items)
    return Table(columns, cells, data, title=f"Only in {side} ({len(items)} point{'s' if len(items) != 1 else ''},"
                 " not compared)", caption=(constants(items, cols),) if constants(items, cols) else (),
                 name=f"{side.lower()}_only")


def document(c: Comparison, *, quiet: bool = False) -> Document:
    """The report: sides, hardware, what changed, one table per kind, summary, one-sided points.

    quiet (-q): the tables, the summary and the regressions only (no sides, hardware or what changed).
    """
    blocks: list[Block] = [] if quiet else [Text((_side_line(c.old), _side_line(c.new), _hardware_line(c),
                                                  *_changes_lines(c)), bullets=True)]
    parts = [(KINDS.get(name), part) for name, part in c.sections.items() if part.rows]
    for kind, part in parts:
        blocks += kind.tables(c.view, part)
    if c.reference is not None:
        blocks.append(reference_table(c))
    for kind, part in parts:
        blocks += kind.summary_blocks(c.view, part)
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
        out |= KINDS.get(name).data(c.view, c.sections.get(name, empty))
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
