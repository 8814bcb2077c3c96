"""Statistics of throughput (pure, numpy only): what a run is, intervals, ratios and verdicts.

A *run* is one launch of a benchmark point (one repeat: its own processes, its own warm-up) and the
unit of independent evidence. A run's figure is its own estimate (items / mean step time, see
repro.results.metrics); what varies from run to run on a shared machine (placement, caches, other
tenants, clocks) dominates the noise, so every interval is computed over runs:

- a point's interval: Student's t on the logs of its runs' figures (centre: their geometric mean);
- OLD vs NEW: Welch's t on the logs (the ratio of geometric means, its interval, a verdict);
- interleaved pairs (A_i and B_i ran back to back): a paired t on the per-pair log ratios, so that a
  drift of the machine that falls on both runs of a pair cancels.

Below MIN_RUNS runs on a side there is no run-to-run spread to measure: the verdict is "not enough
runs", and the ratio is shown with a block-bootstrap interval over the steps of each run, noted as
covering step noise only. docs/statistics.md explains the method and its threshold. Student's t itself is
repro.results.student_t; how many steps a run is worth, repro.results.repetition.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from repro.results.student_t import t_quantile

MIN_RUNS = 2  # per side: below this there is nothing to estimate a run-to-run spread from
DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_THRESHOLD = 0.02  # changes smaller than 2% are "no significant difference" whatever the test

FASTER, SLOWER, SAME, NOT_ENOUGH = "faster", "slower", "no significant difference", "not enough runs"
EQUIVALENT = "equivalent"  # the whole interval within ±threshold: two one-sided tests (TOST) both reject
INCONCLUSIVE = "inconclusive"  # the interval reaches beyond the threshold on both sides: too noisy to say either
CONDITIONS = "conditions differed"  # unpaired sides ran under different conditions (repro.compare.conditions)
WELCH, PAIRED, STEPS_ONLY = "welch t on log figures of runs", "paired t on log ratios", "step bootstrap"
RUNS_SCOPE, STEPS_SCOPE = "runs", "steps"  # what an interval covers
STEP_NOTE = "its interval covers step noise only"

Statistic = Callable[..., Any]  # called as f(array, axis=-1): np.median, np.mean


@dataclass(frozen=True)
class Estimate:
    """A throughput with its confidence interval (NaN bounds when there is none)."""

    value: float
    low: float
    high: float
    samples: int  # step times behind the figure (0 for published figures)
    repeats: int  # runs
    scope: str = RUNS_SCOPE  # what the interval covers: runs (run-to-run and step noise) or steps only


@dataclass(frozen=True)
class RatioResult:
    """new/old figure ratio, its interval, and the verdict at the given confidence and threshold."""

    ratio: float | None
    low: float | None
    high: float | None
    verdict: str
    confidence: float
    threshold: float
    method: str = ""  # WELCH, PAIRED, STEPS_ONLY or "" (no interval)
    runs_old: int = 0
    runs_new: int = 0
    pairs: int = 0  # interleaved pairs used (PAIRED only)
    note: str = ""


# -- runs ----------------------------------------------------------------------------------------------

def _positive(values: Sequence[float | None]) -> np.ndarray:
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    return arr[np.isfinite(arr) & (arr > 0)]


def geometric_mean(values: Sequence[float | None]) -> float | None:
    """Geometric mean of positive values (a point's figure; the summary of several ratios); None if none."""
    arr = _positive(values)
    return float(np.exp(np.log(arr).mean())) if arr.size else None


def verdict(ratio: float, low: float, high: float, threshold: float) -> str:
    """faster / slower when the whole interval lies beyond 1 and the change exceeds the threshold; equivalent
    when it lies within ±threshold (TOST); inconclusive when it reaches beyond the threshold on both sides."""
    beyond = math.log1p(threshold)
    if low > 1 and math.log(ratio) > beyond:
        return FASTER
    if high < 1 and -math.log(ratio) > beyond:
        return SLOWER
    log_low = math.log(low) if low > 0 else -math.inf
    log_high = math.log(high) if math.isfinite(high) else math.inf
    # Each end of the (1 - alpha) interval is a one-sided test at alpha/2: both inside the margin is TOST's
    # "equivalent" (conservative: the printed interval is the evidence, so nothing is called equivalent that it
    # does not show to be).
    if -beyond < log_low and log_high < beyond:
        return EQUIVALENT
    if log_low < -beyond and log_high > beyond:
        return INCONCLUSIVE
    return SAME


def run_estimate(values: Sequence[float | None], *, confidence: float = DEFAULT_CONFIDENCE,
                 samples: int = 0) -> Estimate | None:
    """A point's figure from its runs' figures: geometric mean, t interval on the logs (NaN below 2 runs)."""
    arr = _positive(values)
    if not arr.size:
        return None
    logs = np.log(arr)
    centre = float(logs.mean())
    if arr.size < MIN_RUNS:  # one run: its own figure, exactly
        return Estimate(float(arr[0]), float("nan"), float("nan"), samples, int(arr.size))
    half = t_quantile(0.5 + confidence / 2, arr.size - 1) * float(logs.std(ddof=1)) / math.sqrt(arr.size)
    return Estimate(math.exp(centre), math.exp(centre - half), math.exp(centre + half), samples, int(arr.size))


def _from_logs(diff: float, se: float, df: float, confidence: float, threshold: float) -> tuple:
    half = t_quantile(0.5 + confidence / 2, df) * se if se > 0 else 0.0
    ratio, low, high = math.exp(diff), math.exp(diff - half), math.exp(diff + half)
    return ratio, low, high, verdict(ratio, low, high, threshold)


def compare_runs(old: Sequence[float | None], new: Sequence[float | None], *,
                 confidence: float = DEFAULT_CONFIDENCE, threshold: float = DEFAULT_THRESHOLD) -> RatioResult:
    """new/old from independent runs: Welch's t on log figures; "not enough runs" below MIN_RUNS a side."""
    a, b = np.log(_positive(old)), np.log(_positive(new))
    if not a.size or not b.size:
        return RatioResult(None, None, None, NOT_ENOUGH, confidence, threshold, runs_old=a.size, runs_new=b.size)
    diff = float(b.mean() - a.mean())
    if a.size < MIN_RUNS or b.size < MIN_RUNS:
        return RatioResult(math.exp(diff), None, None, NOT_ENOUGH, confidence, threshold, runs_old=a.size,
                           runs_new=b.size, note=_few_runs_note(a.size, b.size))
    va, vb = float(a.var(ddof=1)) / a.size, float(b.var(ddof=1)) / b.size
    se = math.sqrt(va + vb)
    # Welch–Satterthwaite degrees of freedom; with no spread at all the interval is the ratio itself
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)) if se > 0 else 1.0
    ratio, low, high, word = _from_logs(diff, se, df, confidence, threshold)
    return RatioResult(ratio, low, high, word, confidence, threshold, WELCH, int(a.size), int(b.size))


def compare_pairs(pairs: Sequence[tuple[float | None, float | None]], *, confidence: float = DEFAULT_CONFIDENCE,
                  threshold: float = DEFAULT_THRESHOLD) -> RatioResult:
    """new/old from interleaved pairs (old_i, new_i ran back to back): paired t on the per-pair log ratios."""
    good = [(float(o), float(n)) for o, n in pairs
            if o is not None and n is not None and o > 0 and n > 0 and math.isfinite(o) and math.isfinite(n)]
    d = np.asarray([math.log(n / o) for o, n in good], dtype=float)
    if not d.size:
        return RatioResult(None, None, None, NOT_ENOUGH, confidence, threshold)
    if d.size < MIN_RUNS:
        return RatioResult(math.exp(float(d.mean())), None, None, NOT_ENOUGH, confidence, threshold, runs_old=1,
                           runs_new=1, pairs=1, note=_few_runs_note(1, 1))
    se = float(d.std(ddof=1)) / math.sqrt(d.size)
    ratio, low, high, word = _from_logs(float(d.mean()), se, d.size - 1, confidence, threshold)
    return RatioResult(ratio, low, high, word, confidence, threshold, PAIRED, int(d.size), int(d.size), int(d.size))


def _few_runs_note(old: int, new: int) -> str:
    sides = ", ".join(f"{n} run{'s' if n != 1 else ''} on {side}" for side, n in (("OLD", old), ("NEW", new))
                      if n < MIN_RUNS)
    return f"not enough runs for a verdict ({sides}; {MIN_RUNS} or more a side are needed)"


# -- steps within runs (the fallback below MIN_RUNS) -----------------------------------------------------

def _block_resample(x: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Moving-block bootstrap resamples of one series, shape (resamples, len(x)).

    Blocks of about n^(1/3) consecutive steps keep the short-range correlation of step times (a burst
    of interference lasts several steps), which resampling single steps would hide.
    """
    n = x.size
    block = max(1, round(n ** (1 / 3)))
    starts = rng.integers(0, n - block + 1, size=(resamples, -(-n // block)))
    idx = (starts[:, :, None] + np.arange(block)).reshape(resamples, -1)[:, :n]
    return x[idx]


def step_factors(runs: Sequence[Sequence[float]], statistic: Statistic, resamples: int,
                 rng: np.random.Generator) -> np.ndarray | None:
    """Bootstrap of a side's figure relative to its value, from step noise only (runs kept as they are).

    A run's figure is items / statistic(steps); each resample redraws the steps of every run, and the
    side's factor is the geometric mean over its runs of statistic(steps) / statistic(resampled steps).
    """
    logs = []
    for run in runs:
        x = np.asarray(run, dtype=float)
        x = x[np.isfinite(x) & (x > 0)]
        if x.size < 2:
            return None
        logs.append(np.log(statistic(x, axis=-1) / statistic(_block_resample(x, resamples, rng), axis=-1)))
    return np.exp(np.mean(logs, axis=0)) if logs else None


def compare_steps(old: Sequence[Sequence[float]], new: Sequence[Sequence[float]], ratio: float, *,
                  statistic: Statistic = np.mean, confidence: float = DEFAULT_CONFIDENCE,
                  threshold: float = DEFAULT_THRESHOLD, resamples: int = DEFAULT_RESAMPLES,
                  seed: int = 0) -> RatioResult:
    """The ratio with a step-noise-only interval: the fallback when a side has fewer than MIN_RUNS runs.

    The verdict stays "not enough runs": an interval without run-to-run variation is too narrow to
    decide on (two runs of one stack differ by more than their steps suggest).
    """
    note = _few_runs_note(len(old), len(new))
    rng = np.random.default_rng(seed)
    fa, fb = step_factors(old, statistic, resamples, rng), step_factors(new, statistic, resamples, rng)
    if fa is None or fb is None:
        return RatioResult(ratio, None, None, NOT_ENOUGH, confidence, threshold, runs_old=len(old),
                           runs_new=len(new), note=note)
    alpha = (1 - confidence) / 2
    low, high = (float(q) * ratio for q in np.quantile(fb / fa, [alpha, 1 - alpha]))
    return RatioResult(ratio, low, high, NOT_ENOUGH, confidence, threshold, STEPS_ONLY, len(old), len(new),
                       note=f"{note}; {STEP_NOTE}")


def step_estimate(value: float, runs: Sequence[Sequence[float]], *, statistic: Statistic = np.mean,
                  confidence: float = DEFAULT_CONFIDENCE, resamples: int = DEFAULT_RESAMPLES,
                  seed: int = 0) -> Estimate:
    """A one-run figure with a step-noise-only interval (scope "steps")."""
    samples = sum(len(r) for r in runs)
    factors = step_factors(runs, statistic, resamples, np.random.default_rng(seed))
    if factors is None:
        return Estimate(value, float("nan"), float("nan"), samples, len(runs), STEPS_SCOPE)
    alpha = (1 - confidence) / 2
    low, high = (float(q) * value for q in np.quantile(factors, [alpha, 1 - alpha]))
    return Estimate(value, low, high, samples, len(runs), STEPS_SCOPE)


# -- generic entry: groups of samples (all-reduce latencies, times to accuracy) -------------------------

def rate(samples: Sequence[float], items: float, statistic: Statistic = np.mean) -> float | None:
    """items / statistic(samples): the figure of one run from its per-step (per-iteration) times."""
    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    return float(items / statistic(x, axis=-1)) if x.size else None


def compare(old: Sequence[Sequence[float]], old_items: float, new: Sequence[Sequence[float]], new_items: float, *,
            confidence: float = DEFAULT_CONFIDENCE, threshold: float = DEFAULT_THRESHOLD,
            resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> RatioResult:
    """new/old where each group holds one run's samples; a run's figure is items / mean of its samples."""
    a = [g for g in old if rate(g, old_items) is not None]
    b = [g for g in new if rate(g, new_items) is not None]
    va, vb = [rate(g, old_items) for g in a], [rate(g, new_items) for g in b]
    result = compare_runs(va, vb, confidence=confidence, threshold=threshold)
    if result.method or result.ratio is None:
        return result
    return compare_steps(a, b, result.ratio, confidence=confidence, threshold=threshold, resamples=resamples,
                         seed=seed)


# -- a goal for a ratio measured in alternating pairs (bench/ peer comparisons) ---------------------------------

MEETS, MISSES, UNRESOLVED = "meets the goal", "misses the goal", "unresolved"


@dataclass(frozen=True)
class GoalCheck:
    """The geometric mean of pair ratios with its paired-t interval, against a goal (ratio >= goal)."""

    ratio: RatioResult
    goal: float
    verdict: str  # MEETS (the whole interval at or above the goal), MISSES (below it) or UNRESOLVED

    def line(self, label: str) -> str:
        """One line for a bench's output: 'repro/plain 0.988 [0.760, 1.290] over 5 pairs: unresolved (...)'."""
        r = self.ratio
        if r.ratio is None:
            return f"{label}: no complete pair"
        if r.low is None or r.high is None:
            return f"{label} {r.ratio:.4f} over {max(r.pairs, 1)} pair: {UNRESOLVED} (2 pairs or more give an interval)"
        said = f"{label} {r.ratio:.4f} [{r.low:.3f}, {r.high:.3f}] ({r.confidence:.0%}, {r.pairs} pairs)"
        if self.verdict == UNRESOLVED:
            return (f"{said}: {UNRESOLVED}: the interval reaches both sides of the goal {self.goal:g}; more pairs, "
                    "or a calmer machine, would settle it")
        return f"{said}: {self.verdict} (>= {self.goal:g})"


def goal_check(pairs: Sequence[tuple[float | None, float | None]], goal: float, *,
               confidence: float = DEFAULT_CONFIDENCE) -> GoalCheck:
    """new/old over alternating pairs (geometric mean of the pair ratios, paired t) against `goal`."""
    r = compare_pairs(pairs, confidence=confidence, threshold=0.0)
    if r.low is not None and r.low >= goal:
        word = MEETS
    elif r.high is not None and r.high < goal:
        word = MISSES
    else:
        word = UNRESOLVED
    return GoalCheck(r, goal, word)


# -- against a reference (`repro compare --reference REF --within X`) -------------------------------------------

WITHIN, BELOW, UNDECIDED = "within", "below", "undecided"
SINGLE_NUMBER_NOTE = ("the reference is a single published number: its own spread is unknown, so the interval "
                      "covers the candidate's runs only")


def compare_to_value(values: Sequence[float | None], reference: float, *, confidence: float = DEFAULT_CONFIDENCE,
                     threshold: float = DEFAULT_THRESHOLD) -> RatioResult:
    """new/reference where the reference is one number without runs: Student's t on the logs of NEW's runs."""
    b = np.log(_positive(values))
    if not b.size or reference <= 0 or not math.isfinite(reference):
        return RatioResult(None, None, None, NOT_ENOUGH, confidence, threshold, runs_new=int(b.size))
    ratio = math.exp(float(b.mean())) / reference
    if b.size < MIN_RUNS:
        return RatioResult(ratio, None, None, NOT_ENOUGH, confidence, threshold, runs_new=int(b.size),
                           note=f"{_few_runs_note(MIN_RUNS, int(b.size))}; {SINGLE_NUMBER_NOTE}")
    se = float(b.std(ddof=1)) / math.sqrt(b.size)
    ratio, low, high, word = _from_logs(math.log(ratio), se, b.size - 1, confidence, threshold)
    return RatioResult(ratio, low, high, word, confidence, threshold, "t on log figures of NEW's runs", 0,
                       int(b.size), note=SINGLE_NUMBER_NOTE)


def reference_verdict(ratio: RatioResult, within: float) -> str:
    """One-sided, on an interval whose low end is the one-sided bound: within when NEW/REF is shown to be at least
    1 - within, below when it is shown to be under it, undecided otherwise (no interval included)."""
    if ratio.method == STEPS_ONLY:  # one run a side: an interval of step noise only is no evidence of a level
        return UNDECIDED
    floor = 1.0 - within
    if ratio.low is not None and ratio.low >= floor:
        return WITHIN
    if ratio.high is not None and ratio.high < floor:
        return BELOW
    return UNDECIDED


def one_sided(confidence: float) -> float:
    """The two-sided level whose interval's ends are one-sided bounds at `confidence` (0.95 -> 0.90)."""
    return 2.0 * confidence - 1.0
