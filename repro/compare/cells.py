"""The words and cells every comparison table and figure shares (pure): column labels, ratios, verdicts,
intervals, the caption line of the settings every row shares. No kind is named here; each kind's module
builds its own tables from these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from repro import formats
from repro.compare.align import format_value
from repro.compare.view import View
from repro.formats import Column
from repro.results import stats

NUMERIC_KEYS = frozenset({"workers", "hosts", "batch_per_worker", "threads"})
LABELS = {"batch_per_worker": "batch", "data_format": "format", "workers": "workers", "hosts": "hosts",
          "precision": "precision", "xla": "xla", "model": "model", "workload": "workload", "data": "data",
          "scaling": "scaling", "threads": "threads", "backend": "controller"}
MARK = {"faster": " ▲", "slower": " ▼", stats.CONDITIONS: " ≠"}  # ≠: no verdict, the sides ran under other conditions

number, percent = formats.number, formats.percent


def column_label(name: str) -> str:
    """A key's column header ('batch', 'format', an extra setting without its 'extra.')."""
    return LABELS.get(name, name.removeprefix("extra."))


def key_columns(cols: Sequence[str]) -> list[Column]:
    """The key columns of a table, numbers right-aligned."""
    return [Column(column_label(k), numeric=k in NUMERIC_KEYS) for k in cols]


def points(value: float | None) -> str:
    """A change of a percentage, in percentage points."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * 100:+.1f} pt"


def ratio_text(value: float | None) -> str:
    """A ratio as a cell: '1.08x' ('-' without one)."""
    if value is None:
        return "-"
    return f"{value:.2f}x" if value >= 0.01 else f"{value:.2g}x"


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


def interval_text(ratio: stats.RatioResult) -> str:
    """A ratio's interval as a cell: '[0.981, 1.042]'."""
    if ratio.low is None or ratio.high is None:
        return "-"
    return f"[{ratio.low:.3f}, {ratio.high:.3f}]"


def display_columns(view: View, rows: Sequence[Any] | None = None) -> list[str]:
    """Key columns a table of `rows` (default: every compared point) shows: workers always, then every key that
    varies among them (the rest go to the caption)."""
    if rows is None:
        return [k for k in view.keys if k == "workers" or k in view.columns]
    return [k for k in view.keys if k == "workers" or len({dict(r.key).get(k) for r in rows}) > 1]


def key_cells(key: Sequence[tuple[str, Any]], cols: Sequence[str]) -> list[str]:
    """A row's key as the cells of `cols`."""
    values = dict(key)
    return [format_value(values.get(col)) for col in cols]


def constants(rows: Sequence[Any], shown: Sequence[str]) -> str:
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


def criterion(view: View, ratios: Sequence[stats.RatioResult] = ()) -> str:
    """The caption line that says how a verdict was reached."""
    thr = f"{view.options.threshold:.0%}"
    said = {r.verdict for r in ratios}
    # the two newer verdicts are explained where they occur (older outputs keep their caption unchanged)
    extra = ("; equivalent: the whole interval within ±" + thr if stats.EQUIVALENT in said else "") + (
        f"; inconclusive: the interval reaches beyond ±{thr} on both sides" if stats.INCONCLUSIVE in said else "")
    return (f"verdict: at {view.options.confidence:.0%} confidence over runs; changes under {thr} "
            f"are no significant difference{extra}")


def ratio_label(ratio: Any) -> str:
    """A ratio under its bars: '1.08x ▲' and, where there is one, its interval '[1.03, 1.13]' on the next line."""
    if ratio.ratio is None:
        return ""
    text = f"\n{ratio.ratio:.2f}x{MARK.get(ratio.verdict, '')}"
    return text + (f"\n[{ratio.low:.2f}, {ratio.high:.2f}]" if ratio.low is not None and ratio.high is not None
                   else "")
