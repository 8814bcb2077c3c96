"""Verdicts you can trust (issue 12): A/A, A/B and pairing on records built from real step series.

The series are repro's CNN workload measured on this machine (tests/data/steps, see real_steps.py).
Each record keeps one real run's series; "synthetic" records rescale a whole series so that the run's
figure carries a chosen run-to-run shift, keeping the series' own warm-up and bursts.
"""

from __future__ import annotations

import numpy as np
import pytest

from repro.compare import Options, compare
from repro.results import metrics, stats
from tests.unit import real_steps

RUNS = real_steps.runs(workers=1)
DECIDED = (stats.FASTER, stats.SLOWER)


def _row(old, new, **options):
    (row,) = compare(old, new, Options(**options)).throughput
    return row


def _mean_step(run) -> float:
    return float(np.mean(run["ranks"][0]["step_times"]))


def _synthetic(runs, name: str, rng: np.random.Generator, sigma: float, speedup: float = 1.0):
    """Records of these real series, each rescaled to one level times a log-normal run-to-run shift."""
    level = _mean_step(RUNS[0])
    return [real_steps.record(run, name, n=i,
                              scale=level / _mean_step(run) * float(np.exp(sigma * rng.standard_normal())) / speedup)
            for i, run in enumerate(runs)]


def _synthetic_sides(rng: np.random.Generator, speedup: float = 1.0, sigma: float = 0.02):
    """Three runs a side from six different real series, with `sigma` run-to-run shifts; NEW `speedup` faster."""
    picks = rng.permutation(len(RUNS))
    return (_synthetic([RUNS[i] for i in picks[:3]], "a", rng, sigma),
            _synthetic([RUNS[i] for i in picks[3:6]], "b", rng, sigma, speedup))


def _real_split(rng: np.random.Generator, per_side: int = 3):
    order = rng.permutation(len(RUNS))
    old = [real_steps.record(RUNS[i], "a", n=k) for k, i in enumerate(order[:per_side])]
    new = [real_steps.record(RUNS[i], "b", n=k) for k, i in enumerate(order[per_side:2 * per_side])]
    return old, new


def test_the_fixture_holds_real_runs_with_real_run_to_run_shifts():
    figures = [metrics.throughput(real_steps.record(run, "a")) for run in RUNS]
    assert len(figures) >= 12
    assert np.std(np.log(figures), ddof=1) > 0.02  # the shifts a verdict must not mistake for a change


def test_ten_a_a_comparisons_of_real_runs_give_at_most_one_false_verdict():
    rng = np.random.default_rng(12)
    verdicts = [_row(*_real_split(rng)).ratio.verdict for _ in range(10)]
    assert stats.NOT_ENOUGH not in verdicts  # three runs a side: every comparison decides something
    assert sum(v in DECIDED for v in verdicts) <= 1, verdicts


def test_ten_a_a_comparisons_with_two_percent_run_shifts_give_at_most_one_false_verdict():
    rng = np.random.default_rng(7)
    verdicts = [_row(*_synthetic_sides(rng)).ratio.verdict for _ in range(10)]
    assert sum(v in DECIDED for v in verdicts) <= 1, verdicts


def test_one_run_a_side_is_not_enough_runs_although_step_noise_alone_would_claim_a_difference():
    rng = np.random.default_rng(3)
    rows = [_row(*_real_split(rng, per_side=1)) for _ in range(10)]
    assert all(r.ratio.verdict == stats.NOT_ENOUGH for r in rows)
    assert all(stats.STEP_NOTE in r.ratio.note and r.ratio.ratio for r in rows)
    # the old answer: an interval over steps only excludes 1 for most of these A/A pairs
    assert sum(r.ratio.low > 1 or r.ratio.high < 1 for r in rows) >= 5


def test_a_real_ten_percent_speedup_with_three_runs_a_side_is_detected():
    # at 2% run-to-run shifts Welch's t on 3 + 3 runs detects 10% about 96% of the time
    # (docs/statistics.md, "How many runs"): nine of ten, as the A/A side allows one of ten
    rng = np.random.default_rng(5)
    rows = [_row(*_synthetic_sides(rng, speedup=1.10)).ratio for _ in range(10)]
    assert sum(r.verdict == stats.FASTER for r in rows) >= 9, rows
    assert all(r.verdict != stats.SLOWER and r.ratio == pytest.approx(1.10, abs=0.05) for r in rows)


def test_a_ten_percent_slowdown_is_worded_as_slower_and_is_a_regression():
    rng = np.random.default_rng(9)
    old = _synthetic(RUNS[:3], "a", rng, 0.02)
    new = _synthetic(RUNS[3:6], "b", rng, 0.02, speedup=1 / 1.10)
    row = _row(old, new)
    assert row.ratio.verdict == stats.SLOWER and row.regression


def test_pairing_is_used_when_runs_were_interleaved_and_cancels_the_machine_drift():
    # pair i ran back to back: both runs see the machine as it was (the real series of run i)
    rng = np.random.default_rng(4)
    chosen = [RUNS[i] for i in (0, 8, 16)]  # three different machine states of the fixture
    old, new = [], []
    for i, run in enumerate(chosen):
        old.append(real_steps.record(run, "a", n=i, pair=f"p{i}", scale=1 + 0.01 * rng.standard_normal()))
        new.append(real_steps.record(run, "b", n=i, pair=f"p{i}",
                                     scale=(1 + 0.01 * rng.standard_normal()) / 1.10))
    paired = _row(old, new).ratio
    assert paired.method == stats.PAIRED and paired.pairs == 3
    assert paired.verdict == stats.FASTER and paired.ratio == pytest.approx(1.10, abs=0.03)
    unpaired = _row([r.model_copy(update={"sweep": None}) for r in old],
                    [r.model_copy(update={"sweep": None}) for r in new]).ratio
    assert unpaired.method == stats.WELCH and unpaired.verdict == stats.INCONCLUSIVE  # the drift swamps 10%


def test_a_single_complete_pair_falls_back_to_the_unpaired_comparison():
    old = [real_steps.record(RUNS[i], "a", n=i, pair="p0" if i == 0 else None) for i in range(3)]
    new = [real_steps.record(RUNS[i], "b", n=i, pair="p0" if i == 0 else None) for i in range(3, 6)]
    assert _row(old, new).ratio.method == stats.WELCH
