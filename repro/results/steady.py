"""Steady state of a run's step times, detected (pure): where the warm-up really ends.

A workload excludes a fixed number of warm-up steps. Whether that was enough depends on the model, the
stack and the machine (seeds 001 and 003: training is slow at first, then settles). Per rank, over the
whole series (warm-up steps included):

1. MSER (White 1997): the truncation d that minimises the variance of the mean of what is left,
   sum((x[d:] - mean(x[d:]))**2) / (n - d)**2, searched over the first half of the series (near its
   end the statistic falls again on a few lucky steps). Long series are first averaged in batches of
   5 steps (MSER-5); short ones (< 100 steps) use single steps.
2. A warm-up is slowness at the start: d is pulled back to just after the last step before it that is
   slower than the steady window's typical range (its median plus max(3 robust deviations, 5%)). MSER
   alone would also cut fast steps that precede a burst of interference.
3. When MSER's minimum sits at the end of its search (half the series), the step times were still
   changing there: the run never reached a steady state.

Modes of the measured window (`--warmup`): "fixed" takes the steps after the workload's own warm-up
(RankResult.step_times); "auto" takes the series from the detected warm-up on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from repro.results.memo import Memo
from repro.results.record import RankResult, RunRecord

FIXED, AUTO = "fixed", "auto"
MODES = (FIXED, AUTO)
MIN_STEPS = 10  # below this a series is too short to tell a transient from noise
BATCH_FROM = 100  # series this long are batched by 5 (MSER-5)
SLOW_MARGIN = 0.05
SHORT_EFFECT = 0.05  # a fixed warm-up is "too short" when the transient it left moves the mean step by more (a
# material effect: below 5% the warning was noise a newcomer chased)


@dataclass(frozen=True)
class Steady:
    """Where one series becomes stationary: `warmup` steps from its first are the transient."""

    warmup: int
    reached: bool
    steps: int  # length of the series analysed

    @property
    def known(self) -> bool:
        """Whether the series was long enough to tell."""
        return self.steps >= MIN_STEPS


def mser(series: Sequence[float], batch: int = 1) -> tuple[int, bool]:
    """(d, inside): MSER's truncation in steps, and whether its minimum lies inside the searched half."""
    x = np.asarray(series, dtype=float)
    k = x.size // batch
    z = x[: k * batch].reshape(k, batch).mean(axis=1)
    # suffix sums give every candidate's mean and sum of squares in one pass
    tail_n = np.arange(k, 0, -1, dtype=float)
    tail_sum = np.cumsum(z[::-1])[::-1]
    tail_sq = np.cumsum((z * z)[::-1])[::-1]
    ss = tail_sq - tail_sum * tail_sum / tail_n
    stat = ss / (tail_n * tail_n)
    half = k // 2
    d = int(np.argmin(stat[: half + 1]))
    return d * batch, d < half


def _slow_limit(rest: np.ndarray) -> float:
    median = float(np.median(rest))
    spread = 1.4826 * float(np.median(np.abs(rest - median)))
    return median + max(3 * spread, SLOW_MARGIN * median)


def detect(series: Sequence[float]) -> Steady:
    """The warm-up of one series (steps, from the first) and whether a steady state was reached."""
    x = np.asarray([float(t) for t in series], dtype=float)
    n = int(x.size)
    if n < MIN_STEPS or not np.all(np.isfinite(x)):
        return Steady(0, False, n)
    batch = 5 if n >= BATCH_FROM else 1
    d, reached = mser(x, batch)
    limit = _slow_limit(x[d:])
    slow = np.nonzero(x[:d] > limit)[0]
    return Steady(int(slow[-1]) + 1 if slow.size else 0, bool(reached), n)


def series(rank: RankResult) -> list[float]:
    """A rank's whole step series: its warm-up steps, then its measured steps."""
    return [*rank.warmup_times, *rank.step_times]


_MEMO = Memo()  # a rank's steady state, and a run's issues, once per command (repro.results.memo)


def rank_steady(rank: RankResult) -> Steady:
    """The detected steady state of one rank."""
    return _MEMO.get(rank, "steady", lambda: detect(series(rank)))


def window(rank: RankResult, mode: str = FIXED, start: int | None = None) -> list[float]:
    """The measured steps of a rank: after its fixed warm-up, or (auto) from `start` or the detected warm-up."""
    if mode == FIXED:
        return list(rank.step_times)
    whole = series(rank)
    if start is None:
        steady = rank_steady(rank)
        start = steady.warmup if steady.known else len(rank.warmup_times)
    return whole[start:]


def run_start(record: RunRecord) -> int:
    """Where the whole job is steady under auto: the latest detected warm-up among its ranks."""
    starts = []
    for rank in record.ranks:
        if not rank.step_times:
            continue
        steady = rank_steady(rank)
        starts.append(steady.warmup if steady.known else len(rank.warmup_times))
    return max(starts, default=0)


def annotate(ranks: Sequence[RankResult]) -> list[RankResult]:
    """Ranks with `detected_warmup` filled in (None where no steady state was reached or the series is short)."""
    out = []
    for rank in ranks:
        steady = rank_steady(rank)
        found = steady.warmup if steady.known and steady.reached else None
        out.append(rank.model_copy(update={"detected_warmup": found}))
    return out


SHORT, NEVER, FEW = "warm-up too short", "no steady state", "too few steps to detect a steady state"


@dataclass(frozen=True)
class Issue:
    """A problem with one rank's warm-up."""

    kind: str  # SHORT, NEVER or FEW
    rank: int
    text: str
    steady_from: int = 0
    fixed: int = 0


def _effect(rank: RankResult, start: int) -> float:
    """How much the steps between the fixed warm-up and `start` change the rank's mean step time."""
    fixed, steady_part = np.mean(rank.step_times), np.mean(series(rank)[start:])
    return float(abs(fixed - steady_part) / steady_part)


def issues(record: RunRecord, mode: str = FIXED) -> tuple[Issue, ...]:
    """Ranks that never became steady, or (fixed mode) whose fixed warm-up ended before their transient."""
    return _MEMO.get(record, ("issues", mode), lambda: _issues(record, mode))


def _issues(record: RunRecord, mode: str) -> tuple[Issue, ...]:
    out = []
    for rank in record.ranks:
        if not rank.step_times:
            continue
        found = rank_steady(rank)
        fixed = len(rank.warmup_times)
        where = f"run {record.id} rank {rank.rank}"
        if not found.known:
            out.append(Issue(FEW, rank.rank, f"{where}: {found.steps} steps are too few to detect a steady state"))
        elif not found.reached:
            out.append(Issue(NEVER, rank.rank, f"{where}: step times never became steady ({found.steps} steps)"))
        elif mode == FIXED and found.warmup > fixed and _effect(rank, found.warmup) > SHORT_EFFECT:
            out.append(Issue(SHORT, rank.rank, f"{where}: warm-up too short: steady from step {found.warmup}, "
                             f"{fixed} warm-up step{'s' if fixed != 1 else ''} excluded; the transient left in "
                             f"moves the mean step time by {_effect(rank, found.warmup):.1%}", found.warmup, fixed))
    return tuple(out)


def warnings(record: RunRecord, mode: str = FIXED) -> tuple[str, ...]:
    """Each issue of a run, as a sentence naming the run and rank."""
    return tuple(i.text for i in issues(record, mode))


def summary(records: Sequence[RunRecord], mode: str = FIXED) -> tuple[str, ...]:
    """One note per kind of issue among a point's measured runs: how many runs, and what to do."""
    measured = [r for r in records if r.origin == "bench" and r.status == "ok"]
    found = {r.id: issues(r, mode) for r in measured}
    notes = []
    for kind in (SHORT, NEVER, FEW):
        hit = [i for its in found.values() for i in its if i.kind == kind]
        runs = sum(1 for its in found.values() if any(i.kind == kind for i in its))
        if not runs:
            continue
        text = f"{kind} in {runs} of {len(measured)} run{'s' if len(measured) != 1 else ''}"
        if kind == SHORT:
            text += (f" (steady from step {max(i.steady_from for i in hit)}, {min(i.fixed for i in hit)} warm-up "
                     "steps excluded; --warmup auto excludes the detected warm-up)")
        notes.append(text)
    return tuple(notes)
