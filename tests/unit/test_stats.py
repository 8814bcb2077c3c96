"""repro.results.stats, student_t and repetition: Student's t, run-level intervals, paired comparison, step-only
fallback, verdicts, steps worth a run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.results import repetition, stats

# two-sided 95% critical values from any t table
T_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 10: 2.228, 30: 2.042}


@pytest.mark.parametrize(("df", "expected"), sorted(T_TABLE.items()))
def test_t_quantile_matches_the_table(df, expected):
    assert stats.t_quantile(0.975, df) == pytest.approx(expected, abs=1e-3)


def test_t_quantile_tends_to_the_normal_and_takes_fractional_degrees_of_freedom():
    assert stats.t_quantile(0.975, 1e7) == pytest.approx(1.95996, abs=1e-4)
    assert stats.t_quantile(0.5, 3) == pytest.approx(0.0, abs=1e-9)
    between = stats.t_quantile(0.975, 3.5)
    assert T_TABLE[4] < between < T_TABLE[3]


def test_a_point_interval_is_over_runs_and_centred_on_their_geometric_mean():
    est = stats.run_estimate([100.0, 110.0, 121.0])
    assert est.value == pytest.approx(110.0)
    logs = np.log([100.0, 110.0, 121.0])
    half = T_TABLE[2] * logs.std(ddof=1) / math.sqrt(3)
    assert est.low == pytest.approx(110.0 * math.exp(-half), rel=1e-4)
    assert est.high == pytest.approx(110.0 * math.exp(half), rel=1e-4)
    assert est.scope == stats.RUNS_SCOPE and est.repeats == 3


def test_one_run_has_no_run_level_interval():
    est = stats.run_estimate([100.0])
    assert est.value == 100.0 and math.isnan(est.low) and math.isnan(est.high)


def test_fewer_than_two_runs_a_side_is_not_enough_runs_with_the_ratio_shown():
    result = stats.compare_runs([100.0], [130.0, 131.0, 129.0])
    assert result.verdict == stats.NOT_ENOUGH == "not enough runs"
    assert result.ratio == pytest.approx(130.0 / 100.0, rel=1e-3)
    assert result.low is None and "1 run on OLD" in result.note


def test_welch_on_logs_decides_when_runs_agree_and_refuses_when_they_do_not():
    tight = stats.compare_runs([100, 101, 99], [110, 111, 109])
    assert tight.verdict == stats.FASTER and tight.method == stats.WELCH
    assert tight.low < tight.ratio < tight.high and tight.low > 1
    loose = stats.compare_runs([100, 120, 85], [110, 95, 125])
    assert loose.verdict == stats.INCONCLUSIVE and loose.low < 1 / 1.02 and loose.high > 1.02


def test_slower_uses_the_whole_ratio_and_the_threshold_is_symmetric_on_the_log_scale():
    slower = stats.compare_runs([100, 100.5, 99.5], [97, 97.3, 96.7])
    assert slower.verdict == stats.SLOWER and slower.high < 1
    within = stats.compare_runs([100, 100.1, 99.9], [99, 99.1, 98.9])  # 1% slower: significant, under 2%
    assert within.high < 1 and within.verdict == stats.EQUIVALENT  # and the whole interval within ±2%
    small = stats.compare_runs([100, 100.5, 99.5], [98.6, 99.0, 98.2])  # under 2% slower, interval past 2%
    assert small.high < 1 and small.low < 1 / 1.02 and small.verdict == stats.SAME


def test_equivalent_needs_the_whole_interval_within_the_threshold_and_inconclusive_needs_both_sides_beyond():
    assert stats.verdict(1.0, 0.99, 1.01, 0.02) == stats.EQUIVALENT  # TOST: both one-sided tests reject
    assert stats.verdict(1.0, 0.99, 1.03, 0.02) == stats.SAME  # one end beyond: not shown equivalent
    assert stats.verdict(1.0, 0.97, 1.03, 0.02) == stats.INCONCLUSIVE  # beyond on both sides
    assert stats.verdict(1.0, 0.071, 19.945, 0.02) == stats.INCONCLUSIVE  # the A/A: not "no difference"
    assert stats.verdict(1.0, 0.96, 1.04, 0.05) == stats.EQUIVALENT  # the margin is --threshold
    assert stats.verdict(1.0, 1.0, 1.0, 0.0) == stats.SAME  # a zero margin never shows equivalence


def test_identical_runs_give_a_zero_width_interval_and_a_threshold_verdict():
    same = stats.compare_runs([100, 100], [100, 100])
    assert (same.ratio, same.low, same.high, same.verdict) == (1.0, 1.0, 1.0, stats.EQUIVALENT)
    up = stats.compare_runs([100, 100], [110, 110])
    assert up.verdict == stats.FASTER and up.low == pytest.approx(1.1)


def test_pairing_cancels_a_drift_that_falls_on_both_runs_of_a_pair():
    drift = [1.0, 1.25, 0.8, 1.1]  # the machine's state during pair i: it moves both runs of the pair
    old = [300 * d for d in drift]
    new = [300 * 1.05 * d * (1 + e) for d, e in zip(drift, (0.002, -0.003, 0.001, 0.0), strict=True)]
    assert stats.compare_runs(old, new).verdict == stats.INCONCLUSIVE  # unpaired, the drift swamps 5%
    paired = stats.compare_pairs(list(zip(old, new, strict=True)))
    assert paired.verdict == stats.FASTER and paired.method == stats.PAIRED and paired.pairs == 4
    assert paired.ratio == pytest.approx(1.05, abs=0.003)


def test_one_pair_is_not_enough_runs():
    result = stats.compare_pairs([(100.0, 120.0)])
    assert result.verdict == stats.NOT_ENOUGH and result.ratio == pytest.approx(1.2)


def test_step_fallback_shows_a_step_noise_interval_but_never_a_verdict():
    rng = np.random.default_rng(3)
    old = [list(0.1 * (1 + 0.01 * rng.standard_normal(50)))]
    new = [list(0.08 * (1 + 0.01 * rng.standard_normal(50)))]  # 25% faster, one run each
    result = stats.compare(old, 8, new, 8)
    assert result.verdict == stats.NOT_ENOUGH and result.method == stats.STEPS_ONLY
    assert result.low < result.ratio < result.high and result.low > 1.2
    assert stats.STEP_NOTE in result.note


def test_step_fallback_is_seeded():
    old, new = [[0.1, 0.11, 0.09, 0.1, 0.12]], [[0.09, 0.1, 0.08, 0.1, 0.11]]
    a = stats.compare(old, 8, new, 8, seed=1)
    assert a == stats.compare(old, 8, new, 8, seed=1)
    assert a != stats.compare(old, 8, new, 8, seed=2)


def test_generic_compare_uses_runs_when_each_side_has_two():
    old = [[0.1] * 5, [0.102] * 5, [0.098] * 5]
    new = [[0.08] * 5, [0.081] * 5, [0.079] * 5]
    result = stats.compare(old, 8, new, 8)
    assert result.method == stats.WELCH and result.verdict == stats.FASTER
    assert result.ratio == pytest.approx(1.25, rel=0.01)


def test_geometric_mean_ignores_missing_and_non_positive_values():
    assert stats.geometric_mean([2.0, None, 8.0, 0.0]) == pytest.approx(4.0)
    assert stats.geometric_mean([]) is None


def test_steps_worth_follows_kalibera_and_jones_on_real_runs():
    from tests.unit import real_steps

    runs = [r for r in real_steps.runs() if r["invocation"] <= 4]
    series = [r["ranks"][0]["step_times"] for r in runs]
    advice = repetition.steps_worth(series, [r["duration_s"] for r in runs])
    # a run's start (process, TensorFlow import, compile, warm-up: ~11 s) costs hundreds of 30 ms steps
    assert advice is not None and advice.start_s > 5 and 0.02 < advice.step_s < 0.05
    n1 = math.ceil(math.sqrt(advice.start_s / advice.step_s * advice.within / advice.between))
    assert advice.steps == n1 and 10 < advice.steps < 60  # about 20: the fixture's 30 steps per run are plenty
    assert repetition.steps_worth(series[:1], [10.0]) is None
    same = repetition.steps_worth([[0.1, 0.2, 0.1, 0.2]] * 3, [5.0] * 3)
    assert same is not None and same.steps is None  # identical runs: no run-to-run variance to spread over
