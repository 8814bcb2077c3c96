"""Time-to-accuracy runs compared (pure): speed-up OLD/NEW in time to reach the target accuracy.

A repeat that never reached its target is a failure to reach, not a time. The verdict comes from the
same statistics over runs as throughput with one time per repeat (a "step" of one item), so a single
repeat per side is "not enough runs". A side that is faster but ends at a worse final quality is flagged: it may
have bought its speed with accuracy.

The quality is validation top-1 for repro's own runs and image classification; an imported MLPerf run names its
own (``accuracy_metric``: log perplexity, evaluation loss, mAP, BLEU...), and a loss or perplexity is better when
lower (``lower_is_better``). A side states the metric its runs share ("mixed" when they differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.compare.align import Key, Pair
from repro.compare.kinds.tta.metrics import TOP1, TtaMetrics
from repro.compare.options import Options
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
    metric: str = TOP1  # what final_quality measures: top1, or the metric an imported log names
    final_quality: float | None = None  # the mean final figure of that metric (top-1 for top1)
    lower_is_better: bool = False  # a loss or perplexity target is reached from above

    @property
    def quality_label(self) -> str:
        """The metric as a caption names it ('top-1' for top1)."""
        return "top-1" if self.metric == TOP1 else self.metric


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


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _side(records: Sequence[RunRecord]) -> tuple[TtaSide, list[list[float]]]:
    read = [(r, TtaMetrics.model_validate(r.metrics)) for r in records]
    ok = [m for r, m in read if r.status == "ok"]
    reached = [m for m in ok if m.reached_in is not None]
    metrics = {m.accuracy_metric for _, m in read} or {TOP1}
    metric = metrics.pop() if len(metrics) == 1 else "mixed"
    lower = bool(records) and all(m.lower_is_better for _, m in read)
    side = TtaSide(len(ok), len(reached), _mean([m.target for m in ok]),
                   _mean([m.time_to_accuracy_s for m in reached]), _mean([m.final_top1 for m in ok]),
                   _mean([m.final_top5 for m in ok]), _mean([m.epochs for m in ok]), _mean([m.compute_s for m in ok]),
                   _mean([m.communication_s for m in ok]), metric, _mean([m.final_quality for m in ok]), lower)
    return side, [[float(m.time_to_accuracy_s)] for m in reached if m.time_to_accuracy_s is not None]


def _flag(speedup: float | None, old: TtaSide, new: TtaSide) -> str:
    if speedup is None or speedup == 1 or old.final_quality is None or new.final_quality is None:
        return ""
    if old.metric != new.metric or old.lower_is_better != new.lower_is_better:
        return ""  # figures of different metrics are not compared
    fast, slow, name = (new, old, "NEW") if speedup > 1 else (old, new, "OLD")
    worse = fast.final_quality > slow.final_quality if fast.lower_is_better else \
        fast.final_quality < slow.final_quality
    if worse:
        how = "a higher" if fast.lower_is_better else "a lower"
        return (f"{name} is faster but ends at {how} final {fast.quality_label} ({fast.final_quality:.4f} vs "
                f"{slow.final_quality:.4f})")
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
                     "compute_s", "communication_s", "metric", "final_quality"):
            out[f"{name}_{side}"] = getattr(data, name)
    return out
