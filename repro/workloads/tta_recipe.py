"""The time-to-accuracy recipe both tta programs share (pure, no framework): the learning-rate schedule (linear
scaling with a linear warm-up, reduce on plateau), the check of an epoch's shards, and the result's curve and metrics.

repro.workloads.tta (TensorFlow) and repro.workloads.torch_tta (PyTorch) run it; it runs inside the images with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

# --------------------------------------------------------------------------- schedule


def default_warmup_epochs(workers: int) -> float:
    """log2(k) epochs of warm-up for k workers (0 for one)."""
    return math.log2(workers) if workers > 1 else 0.0


def learning_rate(progress: float, base: float, workers: int, warmup_epochs: float, multiplier: float = 1.0) -> float:
    """Rate at `progress` epochs into training: linear from base to base*k over the warm-up, then
    base*k, times the plateau multiplier."""
    peak = base * workers
    if warmup_epochs > 0 and progress < warmup_epochs:
        return (base + (peak - base) * progress / warmup_epochs) * multiplier
    return peak * multiplier


class Plateau:
    """Reduce-on-plateau: multiply the rate by `factor` after `patience` epochs without a lower loss."""

    def __init__(self, factor: float = 0.1, patience: int = 2, threshold: float = 1e-4) -> None:
        self.factor = factor
        self.patience = patience
        self.threshold = threshold  # relative improvement that counts (PyTorch's default)
        self.best = math.inf
        self.bad_epochs = 0
        self.multiplier = 1.0

    def update(self, loss: float) -> bool:
        """Record an epoch's validation loss; True when the rate was just reduced."""
        if loss < self.best * (1 - self.threshold):
            self.best = loss
            self.bad_epochs = 0
            return False
        self.bad_epochs += 1
        if self.bad_epochs >= self.patience:
            self.multiplier *= self.factor
            self.bad_epochs = 0
            return True
        return False


# --------------------------------------------------------------------------- the result


def check_shards(shards: Sequence[Sequence[int]], train_size: int) -> dict[str, Any]:
    """Disjointness and coverage of one epoch's shards (positions into the training set)."""
    flat = [int(i) for s in shards for i in s]
    return {
        "disjoint": len(flat) == len(set(flat)),
        "within_train_set": all(0 <= i < train_size for i in flat),
        "covered": len(set(flat)),
        "left_out": train_size - len(set(flat)),
        "sizes": [len(s) for s in shards],
    }


def tta_metrics(target: float, reached_at: float | None, epoch: int, curve: list[dict[str, Any]], data: Any,
                shards: Any) -> dict[str, Any]:
    """The time-to-accuracy result of a training run (tta and torch_tta): target, when it was reached, final
    accuracy, per-worker time sums over the epochs, the data split and the whole curve."""
    return {
        "target": target,
        "reached": reached_at is not None,
        "time_to_accuracy_s": reached_at,
        "epochs": epoch,
        "final_top1": curve[-1]["val_top1"],
        "final_top5": curve[-1]["val_top5"],
        **{key: sum(e[key] for e in curve) for key in ("compute_s", "communication_s", "data_s", "validation_s")},
        "train_size": data.train_size,
        "validation_size": data.validation_size,
        "split": data.split,
        "shards": shards,
        "curve": curve,
    }


def curve_entry(epoch: int, elapsed: float, lr: float, sums: Sequence[float], workers: int) -> dict[str, Any]:
    """One epoch of the curve from the all-reduced sums (validation 4, training 2, times 4)."""
    val_loss, top1, top5, evaluated, train_loss, train_seen = sums[:6]
    compute_s, comm_s, data_s, validation_s = (float(t) / workers for t in sums[6:10])
    return {
        "epoch": epoch,
        "elapsed_s": elapsed,
        "lr": lr,
        "train_loss": train_loss / train_seen if train_seen else None,
        "val_loss": val_loss / evaluated if evaluated else None,
        "val_top1": top1 / evaluated if evaluated else 0.0,
        "val_top5": top5 / evaluated if evaluated else 0.0,
        "validation_examples": int(evaluated),
        "train_examples": int(train_seen),
        "compute_s": compute_s,
        "communication_s": comm_s,
        "data_s": data_s,
        "validation_s": validation_s,
    }
