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
from repro.compare.throughput import Options
from repro.results import stats
from repro.results.record import RunRecord

TOP1 = "top1"


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


def _mean(values: Sequence[float]) -> float | None:
    vals = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum(vals) / len(vals) if vals else None


def _reached(r: RunRecord) -> bool:
    return bool(r.metrics.get("reached")) and isinstance(r.metrics.get("time_to_accuracy_s"), (int, float))


def metric_of(record: RunRecord) -> str:
    """The quality a run's target is stated in: top1, or the metric its imported log names."""
    return str(record.metrics.get("accuracy_metric") or TOP1)


def _final(record: RunRecord) -> float | None:
    """The run's final quality in its own metric (top-1, or the log's final figure)."""
    m = record.metrics
    value = m.get("final_top1") if metric_of(record) == TOP1 else m.get("final_accuracy")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _side(records: Sequence[RunRecord]) -> tuple[TtaSide, list[list[float]]]:
    ok = [r for r in records if r.status == "ok"]
    reached = [r for r in ok if _reached(r)]

    def m(name: str, among: Sequence[RunRecord] = ok) -> float | None:
        return _mean([r.metrics.get(name) for r in among])

    metrics = {metric_of(r) for r in records} or {TOP1}
    metric = metrics.pop() if len(metrics) == 1 else "mixed"
    lower = bool(records) and all(r.metrics.get("lower_is_better") is True for r in records)
    side = TtaSide(len(ok), len(reached), m("target"), m("time_to_accuracy_s", reached), m("final_top1"),
                   m("final_top5"), m("epochs"), m("compute_s"), m("communication_s"), metric,
                   _mean([_final(r) for r in ok]), lower)
    return side, [[float(r.metrics["time_to_accuracy_s"])] for r in reached]


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
