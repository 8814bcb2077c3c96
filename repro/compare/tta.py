"""Time-to-accuracy runs compared (pure): speed-up OLD/NEW in time to reach the target accuracy.

A repeat that never reached its target is a failure to reach, not a time. The verdict comes from the
same statistics over runs as throughput with one time per repeat (a "step" of one item), so a single
repeat per side is "not enough runs". A side that is faster but ends at a lower final accuracy is flagged: it may
have bought its speed with accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.compare.align import Key, Pair
from repro.compare.throughput import Options
from repro.results import stats
from repro.results.record import RunRecord


@dataclass(frozen=True)
class TtaSide:
    """One side: repeats, how many reached the target, and the means of their figures."""

    runs: int
    reached: int
    target: float | None
    time_to_accuracy_s: float | None
    final_top1: float | None
    final_top5: float | None
    epochs: float | None
    compute_s: float | None
    communication_s: float | None


@dataclass(frozen=True)
class TtaRow:
    """One aligned time-to-accuracy point."""

    key: Key
    old: TtaSide
    new: TtaSide
    speedup: stats.RatioResult  # OLD time / NEW time (>1: NEW reaches the target sooner)
    flag: str = ""

    @property
    def regression(self) -> bool:
        return self.speedup.verdict == stats.SLOWER


def _mean(values: Sequence[float]) -> float | None:
    vals = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum(vals) / len(vals) if vals else None


def _reached(r: RunRecord) -> bool:
    return bool(r.metrics.get("reached")) and isinstance(r.metrics.get("time_to_accuracy_s"), (int, float))


def _side(records: Sequence[RunRecord]) -> tuple[TtaSide, list[list[float]]]:
    ok = [r for r in records if r.status == "ok"]
    reached = [r for r in ok if _reached(r)]

    def m(name: str, among: Sequence[RunRecord] = ok) -> float | None:
        return _mean([r.metrics.get(name) for r in among])

    side = TtaSide(len(ok), len(reached), m("target"), m("time_to_accuracy_s", reached), m("final_top1"),
                   m("final_top5"), m("epochs"), m("compute_s"), m("communication_s"))
    return side, [[float(r.metrics["time_to_accuracy_s"])] for r in reached]


def _flag(speedup: float | None, old: TtaSide, new: TtaSide) -> str:
    if speedup is None or speedup == 1 or old.final_top1 is None or new.final_top1 is None:
        return ""
    fast, slow, name = (new, old, "NEW") if speedup > 1 else (old, new, "OLD")
    if fast.final_top1 < slow.final_top1:
        return (f"{name} is faster but ends at a lower final top-1 ({fast.final_top1:.4f} vs "
                f"{slow.final_top1:.4f})")
    return ""


def tta_rows(pairs: Sequence[Pair], options: Options) -> tuple[TtaRow, ...]:
    """Speed-up in time to accuracy for every aligned point, with the accuracy flag."""
    rows = []
    for pair in pairs:
        old, old_times = _side(pair.old.records)
        new, new_times = _side(pair.new.records)
        # the time of one repeat is its "step": items 1 per step makes the ratio (1/new) / (1/old) = old / new
        speedup = stats.compare(old_times, 1, new_times, 1, confidence=options.confidence,
                                threshold=options.threshold, resamples=options.resamples, seed=options.seed)
        flag = _flag(speedup.ratio, old, new)
        if not old_times or not new_times:
            who = " and ".join(n for n, t in (("OLD", old_times), ("NEW", new_times)) if not t)
            flag = f"{who} never reached the target" + (f"; {flag}" if flag else "")
        rows.append(TtaRow(pair.key, old, new, speedup, flag))
    return tuple(rows)


def as_dict(row: TtaRow) -> dict[str, Any]:
    out: dict[str, Any] = {"speedup": row.speedup.ratio, "low": row.speedup.low, "high": row.speedup.high,
                           "verdict": row.speedup.verdict, "flag": row.flag}
    for side, data in (("old", row.old), ("new", row.new)):
        for name in ("runs", "reached", "target", "time_to_accuracy_s", "final_top1", "final_top5", "epochs",
                     "compute_s", "communication_s"):
            out[f"{name}_{side}"] = getattr(data, name)
    return out
