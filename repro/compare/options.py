"""How a comparison decides (every kind reads the same options)."""

from __future__ import annotations

from dataclasses import dataclass

from repro.results import stats, steady


@dataclass(frozen=True)
class Options:
    """How a comparison decides: threshold, confidence, bootstrap size and seed, warm-up window, baseline."""

    threshold: float = stats.DEFAULT_THRESHOLD
    confidence: float = stats.DEFAULT_CONFIDENCE
    allow_different_hardware: bool = False
    resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = 0
    warmup: str = steady.FIXED  # "fixed": the workload's warm-up count; "auto": the detected steady state
    baseline_workers: int | None = None  # a named baseline point for efficiency (None: the 1-worker point)
    within: float | None = None  # OLD is a reference: NEW is judged "within X of it" one-sided (compare --reference)
