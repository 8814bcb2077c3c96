"""What a time-to-accuracy run states (repro.workloads.tta, torch_tta, imported MLPerf logs), as a typed model."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator

from repro.compare.model import Flag, KindMetrics, Number, dicts

TOP1 = "top1"


class CurvePoint(KindMetrics):
    """One evaluation: seconds since the start of training and validation top-1."""

    elapsed_s: Number = None
    val_top1: Number = None


class TtaMetrics(KindMetrics):
    """A time-to-accuracy run's figures (None: the run did not state it)."""

    reached: Flag = None
    target: Number = None
    time_to_accuracy_s: Number = None
    final_top1: Number = None
    final_top5: Number = None
    final_accuracy: Number = None  # an imported log's final figure in its own metric
    epochs: Number = None
    compute_s: Number = None
    communication_s: Number = None
    accuracy_metric: Annotated[str, BeforeValidator(lambda v: str(v) if v else TOP1)] = TOP1
    lower_is_better: Annotated[bool, BeforeValidator(lambda v: v is True)] = False  # a loss is reached from above
    curve: Annotated[tuple[CurvePoint, ...], BeforeValidator(dicts)] = ()

    @property
    def reached_in(self) -> float | None:
        """The time to accuracy of a run that reached its target (None otherwise)."""
        return self.time_to_accuracy_s if self.reached else None

    @property
    def final_quality(self) -> float | None:
        """The final figure in the run's own metric (top-1, or the log's final figure)."""
        return self.final_top1 if self.accuracy_metric == TOP1 else self.final_accuracy
