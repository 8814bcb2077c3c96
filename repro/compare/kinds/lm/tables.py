"""The lm kind's part of the comparison document (pure): tokens/sec of each side, NEW/OLD with its interval and
verdict, MFU and peak memory per rank of each side, and why a point regressed."""

from __future__ import annotations

from collections.abc import Sequence

from repro.compare.align import format_value
from repro.compare.cells import display_columns, verdict_text
from repro.compare.kinds.lm.metrics import memory_text
from repro.compare.kinds.lm.rows import MEMORY_GROWTH, LmRow, as_dict
from repro.compare.view import View
from repro.formats import Column, Table, number, percent
from repro.results import stats


def _said(ratio: stats.RatioResult) -> list[str]:
    """What a row's ratio rests on: its note, and whether its runs were paired."""
    said = [ratio.note] if ratio.note else []
    if ratio.method == stats.PAIRED:
        said.append(f"{ratio.pairs} interleaved pairs: paired comparison")
    return said


def _noise(low: float | None, high: float | None, value: float | None) -> str:
    return percent((high - low) / 2 / value) if value and low is not None and high is not None else "-"


def lm_table(view: View, rows: Sequence[LmRow]) -> Table:
    """The lm kind's table of `repro compare`: the key settings that vary, tokens/sec of each side, NEW/OLD."""
    columns = display_columns(view, rows)
    conf = f"{view.options.confidence:.0%}"
    samples = bool(rows) and all(row.unit == "samples/sec" for row in rows)
    short = "samples/s" if samples else "tok/s"
    # TFLOP/s per device: where the runs give it (the lm workload's FLOPs per token, or stated by imported logs)
    tflops = any(side.tflops_per_device for row in rows for side in (row.old, row.new))
    heads = [*(Column(k.removeprefix("extra."), numeric=k in ("workers", "hosts", "batch_per_worker"))
               for k in columns),
             *(Column(h, numeric=True) for h in (f"OLD {short}", "OLD ±", f"NEW {short}", "NEW ±", "NEW/OLD",
                                                 f"{conf} interval")),
             Column("verdict"), *(Column(h, numeric=True) for h in (("TFLOP/s OLD", "TFLOP/s NEW") if tflops else ())),
             *(Column(h, numeric=True) for h in ("MFU OLD", "MFU NEW", "mem OLD", "mem NEW")),
             Column("regression")]
    cells = []
    for row in rows:
        r, key = row.base, dict(row.key)
        interval = f"[{r.ratio.low:.3f}, {r.ratio.high:.3f}]" if r.ratio.low is not None and r.ratio.high else "-"
        cells.append((*(format_value(key.get(k)) for k in columns), number(r.old.images_per_sec),
                      _noise(r.old.low, r.old.high, r.old.images_per_sec), number(r.new.images_per_sec),
                      _noise(r.new.low, r.new.high, r.new.images_per_sec),
                      f"{r.ratio.ratio:.2f}x" if r.ratio.ratio else "-", interval, verdict_text(r.ratio),
                      *((number(row.old.tflops_per_device), number(row.new.tflops_per_device)) if tflops else ()),
                      percent(row.old.mfu), percent(row.new.mfu), memory_text(row.old.peak_memory_bytes),
                      memory_text(row.new.peak_memory_bytes), row.why or "-"))
    counted = ("samples/sec, as the logs give it (stated, or their stated batch over time per step)" if samples
               else "tokens/sec")
    figure = "samples/sec" if samples else "tokens/sec"
    caption = (f"{short}: {counted}, geometric mean over runs; ±: half-width of its {conf} Student t interval, "
               "relative",
               f"NEW/OLD and verdict as for images/sec ({conf}; paired t for interleaved pairs; changes under "
               f"{view.options.threshold:.0%} are no significant difference)",
               "MFU: tokens/sec per device x model FLOPs per token / the device's sourced peak, or as an imported "
               "log states it ('-': none known); mem: peak memory per rank",
               *(("TFLOP/s: model TFLOP/s per device, derived as MFU is or as an imported log states it",)
                 if tflops else ()),
               f"regression: {figure} significantly slower, or peak memory more than {MEMORY_GROWTH:.0%} higher")
    notes = tuple(f"{', '.join(f'{k} {v}' for k, v in row.key if k in columns)}: {n}"
                  for row in rows for n in _said(row.base.ratio) + list(row.base.notes) + list(row.notes))
    return Table(tuple(heads), tuple(cells), tuple({"kind": "lm", **dict(r.key), **as_dict(r)} for r in rows),
                 title=f"Transformer training ({figure}): NEW/OLD", caption=caption, notes=notes, name="lm")
