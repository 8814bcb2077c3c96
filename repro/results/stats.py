"""Statistics on throughput samples (pure, numpy only).

A point's raw data is a list of repeats, each an array of global step times (seconds). Throughput is
items per step / mean step time. Uncertainty comes from a hierarchical bootstrap: resample repeats,
then steps within each resampled repeat, so that run-to-run variation counts as well as step noise.
Everything is seeded: the same samples always give the same interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_SAMPLES = 2  # per side: below this there is nothing to estimate a spread from
DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_THRESHOLD = 0.02  # changes smaller than 2% are "no significant difference" whatever the test

FASTER, SLOWER, SAME, NOT_ENOUGH = "faster", "slower", "no significant difference", "not enough data"


@dataclass(frozen=True)
class Estimate:
    """A throughput with its confidence interval."""

    value: float
    low: float
    high: float
    samples: int
    repeats: int

    @property
    def rel_halfwidth(self) -> float:
        """Half the interval's width relative to the value: the point's noise."""
        return (self.high - self.low) / 2 / self.value if self.value else float("nan")


@dataclass(frozen=True)
class RatioResult:
    """new/old throughput ratio, its interval, and the verdict at the given confidence and threshold."""

    ratio: float | None
    low: float | None
    high: float | None
    verdict: str
    confidence: float
    threshold: float


def _clean(groups: Sequence[Sequence[float]]) -> list[np.ndarray]:
    out = []
    for g in groups:
        arr = np.asarray(g, dtype=float)
        arr = arr[np.isfinite(arr) & (arr > 0)]
        if arr.size:
            out.append(arr)
    return out


def _boot_mean_times(groups: list[np.ndarray], resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap distribution of the pooled mean step time (hierarchical when there are repeats)."""
    k = len(groups)
    sizes = np.array([g.size for g in groups], dtype=float)
    # within-repeat resampled sums, one row per repeat: shape (k, resamples)
    sums = np.empty((k, resamples))
    for j, g in enumerate(groups):
        idx = rng.integers(0, g.size, size=(resamples, g.size))
        sums[j] = g[idx].sum(axis=1)
    if k == 1:
        return sums[0] / sizes[0]
    pick = rng.integers(0, k, size=(resamples, k))  # which repeats each resample draws
    cols = np.arange(resamples)[:, None]
    total = sums[pick, cols].sum(axis=1)
    count = sizes[pick].sum(axis=1)
    return total / count


def _pooled_mean(groups: list[np.ndarray]) -> float:
    return float(np.concatenate(groups).mean())


def throughput(groups: Sequence[Sequence[float]], items_per_step: float, *, confidence: float = DEFAULT_CONFIDENCE,
               resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Estimate | None:
    """items/sec with a bootstrap interval; None when there are fewer than MIN_SAMPLES step times."""
    clean = _clean(groups)
    n = sum(g.size for g in clean)
    if n == 0:
        return None
    value = items_per_step / _pooled_mean(clean)
    if n < MIN_SAMPLES:
        return Estimate(value, float("nan"), float("nan"), n, len(clean))
    boot = items_per_step / _boot_mean_times(clean, resamples, np.random.default_rng(seed))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    return Estimate(value, float(low), float(high), n, len(clean))


def compare(old: Sequence[Sequence[float]], old_items: float, new: Sequence[Sequence[float]], new_items: float, *,
            confidence: float = DEFAULT_CONFIDENCE, threshold: float = DEFAULT_THRESHOLD,
            resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> RatioResult:
    """Throughput ratio new/old with a hierarchical-bootstrap interval and a verdict.

    faster / slower when the whole interval lies beyond 1 and the ratio differs from 1 by more than
    `threshold`; "no significant difference" otherwise; "not enough data" below MIN_SAMPLES per side.
    """
    a, b = _clean(old), _clean(new)
    na, nb = sum(g.size for g in a), sum(g.size for g in b)
    if na == 0 or nb == 0:
        return RatioResult(None, None, None, NOT_ENOUGH, confidence, threshold)
    ratio = (new_items / _pooled_mean(b)) / (old_items / _pooled_mean(a))
    if na < MIN_SAMPLES or nb < MIN_SAMPLES:
        return RatioResult(ratio, None, None, NOT_ENOUGH, confidence, threshold)
    rng = np.random.default_rng(seed)
    boot = (new_items / _boot_mean_times(b, resamples, rng)) / (old_items / _boot_mean_times(a, resamples, rng))
    alpha = (1 - confidence) / 2
    low, high = (float(x) for x in np.quantile(boot, [alpha, 1 - alpha]))
    if low > 1 and ratio - 1 > threshold:
        verdict = FASTER
    elif high < 1 and 1 - ratio > threshold:
        verdict = SLOWER
    else:
        verdict = SAME
    return RatioResult(ratio, low, high, verdict, confidence, threshold)


def geometric_mean(values: Sequence[float]) -> float | None:
    """Geometric mean of positive values (the summary of several ratios); None if there are none."""
    arr = np.asarray([v for v in values if v and v > 0], dtype=float)
    if not arr.size:
        return None
    return float(np.exp(np.log(arr).mean()))
