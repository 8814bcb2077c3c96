"""The figure of a Comparison (matplotlib, Agg; imported only when a plot is asked for), PNG or SVG.

One row of panels per part each kind draws (its `panels`, repro.compare.kinds), the two sides named by their
stacks, the changes' headline and each kind's note under the title.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repro.compare.core import Comparison, SideInfo
from repro.compare.kind import KINDS
from repro.errors import ResultsError
from repro.results.plots import check_target, figure, finish, legend_entries, save


def side_label(side: SideInfo, other: SideInfo) -> str:
    """The stack names of one side; with the hash where both sides carry the same names, and the side where
    they carry the same stacks (a stack compared with itself)."""
    names = ", ".join(side.stacks) or side.label
    if names != ", ".join(other.stacks):
        return names
    if side.stack_hashes != other.stack_hashes:
        return f"{names} ({', '.join(h[:7] for h in side.stack_hashes)})"
    return f"{names} ({side.label})"


def comparison_figure(c: Comparison) -> Any:
    """The figure of a comparison (matplotlib Figure; the caller saves or inspects it)."""
    panels = [p for name, part in c.sections.items() if part.rows for p in KINDS.get(name).panels(c.view, part)]
    if not panels:
        raise ResultsError("nothing to plot: no point was measured on both sides")
    fig, rows = figure(len(panels), [p.speedup for p in panels])
    labels = (side_label(c.old, c.new), side_label(c.new, c.old))
    for panel, row in zip(panels, rows, strict=True):
        panel.draw(row, labels)
    headline = c.changes.headline()
    shared = next((p.title for p in panels if p.title), "")
    title = f"OLD {labels[0]} vs NEW {labels[1]}" + (f" · {shared}" if shared else "")
    wording = "; ".join(dict.fromkeys(p.note for p in panels if p.note))
    finish(fig, "\n".join(x for x in (title, headline, wording) if x), *legend_entries(fig))
    return fig


def plot(c: Comparison, path: str | Path) -> Path:
    """Write the comparison's plot to a .png or .svg file; returns its path."""
    target = check_target(path)
    return save(comparison_figure(c), target)
