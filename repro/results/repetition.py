"""How many steps per run are worth measuring (Kalibera and Jones 2013, repetition at two levels; pure, numpy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StepsAdvice:
    """Kalibera and Jones' optimal repetition count at the lower of two levels (steps within runs)."""

    steps: int | None  # steps per run that make the best use of time (None: more steps always pay, see note)
    step_s: float  # the cost of one more step (mean step time)
    start_s: float  # the cost of one more run besides its steps (start, import, compile, warm-up)
    within: float  # T1²: variance of step times within a run
    between: float  # T2²: variance of run means beyond what the steps explain (S2² - S1²/n)


def steps_worth(runs: Sequence[Sequence[float]], durations: Sequence[float]) -> StepsAdvice | None:
    """Steps per run worth measuring: n1 = ceil(sqrt(c2/c1 · T1²/T2²)) (Kalibera and Jones, "Rigorous
    benchmarking in reasonable time", 2013, repetition at two levels), with c1 the cost of a step, c2 that of
    starting a run, T1² the within-run variance of step times and T2² = S2² - S1²/n1 the part of the variance of
    run means the steps do not explain. Needs 2 runs with 2 steps each and their wall times."""
    series = [np.asarray(r, dtype=float) for r in runs]
    series = [s[np.isfinite(s) & (s > 0)] for s in series]
    if len(series) < 2 or any(s.size < 2 for s in series) or len(durations) != len(series):
        return None
    n = float(np.mean([s.size for s in series]))
    within = float(np.mean([s.var(ddof=1) for s in series]))
    between = float(np.var([s.mean() for s in series], ddof=1)) - within / n
    step = float(np.mean([s.mean() for s in series]))
    start = max(0.0, float(np.mean([d - s.sum() for d, s in zip(durations, series, strict=True)])))
    if between <= 0 or step <= 0:
        return StepsAdvice(None, step, start, within, between)
    return StepsAdvice(math.ceil(math.sqrt(start / step * within / between)), step, start, within, between)
