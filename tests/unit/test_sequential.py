"""The sequential rule behind `repro bench --until-verdict` (repro.results.sequential), simulated on the real
run-to-run shifts of tests/data/steps.

A simulated interleaved sweep: pair i runs A and B back to back (A first on even pairs, B first on odd ones,
as the loop does); each run's figure carries a shift drawn from the real shifts of back-to-back runs in the
fixture's calm invocations (its runs' log figures minus their invocation's mean, rescaled to one run's spread;
heavy-tailed: one run of invocation 3 was 33% faster than its neighbours), a small jitter, and a linear drift
of the machine of 0.5% per run over the whole sweep. The rule looks after every pair.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from repro.results import metrics, sequential
from tests.unit import real_steps

DRIFT_PER_RUN = 0.005
DECIDED = (sequential.FASTER, sequential.SLOWER)


def real_shifts() -> np.ndarray:
    """log(figure) - mean log(figure) of each run of the calm invocations (1-4), scaled to one run's spread."""
    by_invocation: dict[int, list[float]] = {}
    for run in real_steps.runs(workers=1):
        by_invocation.setdefault(run["invocation"], []).append(metrics.throughput(real_steps.record(run, "a")))
    deviations = [np.log(v) - np.log(v).mean() for k, v in by_invocation.items() if k <= 4]
    return np.concatenate(deviations) * math.sqrt(3 / 2)  # a deviation from a 3-run mean has 2/3 of the variance


SHIFTS = real_shifts()


def covariates(rng: np.random.Generator, shift: np.ndarray, rho: float) -> np.ndarray:
    """Each run's recorded other work (cores, about 0.5 apart), correlated -rho with its shift: more other work,
    a slower run. The shift stays the fixture's real one; the covariate is a noisy measurement of what caused it."""
    z = shift / SHIFTS.std(ddof=1)
    return 1.0 + 0.5 * (-rho * z + math.sqrt(1.0 - rho * rho) * rng.standard_normal(shift.shape))


def simulate(rng: np.random.Generator, speedup: float, rule: sequential.Rule,
             rho: float | None = None) -> sequential.Decision:
    """One interleaved sweep that stops at the rule's first verdict (or its budget); with `rho`, each run also
    records its other work (`covariates`) and the rule adjusts on it."""
    n = rule.max_pairs
    shift = rng.choice(SHIFTS, size=(n, 2)) + rng.normal(0.0, 0.005, (n, 2))
    x = None
    if rho is not None:
        c = covariates(rng, shift, rho)
        x = c[:, 1] - c[:, 0]
    when = np.arange(2 * n).reshape(n, 2) * DRIFT_PER_RUN  # the machine slows down as the sweep goes on
    a_first = np.arange(n) % 2 == 0
    drift_a, drift_b = np.where(a_first, when[:, 0], when[:, 1]), np.where(a_first, when[:, 1], when[:, 0])
    d = (shift[:, 1] - drift_b + math.log(speedup)) - (shift[:, 0] - drift_a)
    for k in range(1, n + 1):
        decision = sequential.decide(d[:k], rule, final=k == n, covariate=None if x is None else x[:k])
        if decision.verdict != sequential.CONTINUE:
            return decision
    raise AssertionError("the last look always decides or gives up")


def test_the_shifts_are_the_fixtures_real_run_to_run_shifts():
    assert SHIFTS.size == 12 and 0.05 < SHIFTS.std(ddof=1) < 0.2
    assert SHIFTS.max() > 0.2  # the heavy tail is kept, not trimmed


def test_the_boundaries_spend_exactly_alpha_on_a_gaussian_walk():
    rng = np.random.default_rng(0)
    for spending in sequential.SPENDING:
        c = np.asarray(sequential.z_boundaries(20, 0.05, spending))
        walks = np.cumsum(rng.standard_normal((100_000, 20)), axis=1)[:, sequential.FIRST_LOOK - 1:]
        z = walks / np.sqrt(np.arange(sequential.FIRST_LOOK, 21))
        assert (np.abs(z) >= c).any(axis=1).mean() == pytest.approx(0.05, abs=0.003)
    pocock, obf = sequential.z_boundaries(20, 0.05), sequential.z_boundaries(20, 0.05, sequential.OBRIEN_FLEMING)
    assert obf[0] > pocock[0] and obf[-1] < pocock[-1]  # O'Brien-Fleming: strict early, lenient late


def test_a_a_sweeps_looked_at_after_every_pair_are_called_faster_or_slower_at_most_5_percent_of_the_time():
    rng = np.random.default_rng(29)
    rule = sequential.Rule(max_pairs=40)
    verdicts = Counter(simulate(rng, 1.0, rule).verdict for _ in range(1000))
    false = sum(verdicts[v] for v in DECIDED) / 1000
    print(f"\nA/A, 1000 sweeps of up to 40 pairs: {dict(verdicts)}; false faster/slower {false:.1%}")
    assert false <= 0.05, verdicts


def test_a_real_5_percent_speedup_is_found_and_the_median_pairs_to_a_verdict_is_reported():
    rng = np.random.default_rng(5)
    rule = sequential.Rule(max_pairs=100)
    decisions = [simulate(rng, 1.05, rule) for _ in range(300)]
    verdicts = Counter(d.verdict for d in decisions)
    found = [d.pairs for d in decisions if d.verdict == sequential.FASTER]
    median_all = float(np.median([d.pairs for d in decisions]))
    print(f"\n5% faster, 300 sweeps of up to 100 pairs: {dict(verdicts)}; median pairs to a verdict "
          f"{median_all:.0f} (of those found faster: {np.median(found):.0f})")
    assert len(found) / len(decisions) >= 0.7, verdicts
    assert verdicts[sequential.SLOWER] <= 3  # the wrong direction: at most 1%
    # stopping early favours lucky draws (a sequential estimate is biased away from 1), but not by much
    assert float(np.median([d.ratio for d in decisions if d.verdict == sequential.FASTER])) == pytest.approx(
        1.05, abs=0.03)


def test_a_precise_a_a_sweep_stops_as_equivalent_within_the_threshold():
    rng = np.random.default_rng(1)
    d = rng.normal(0.0, 0.005, 40)  # a quiet machine: 0.5% between the runs of a pair
    decision = next(x for k in range(1, 41) if (x := sequential.decide(d[:k], sequential.Rule(max_pairs=40))).verdict
                    != sequential.CONTINUE)
    assert decision.verdict == sequential.EQUIVALENT and decision.pairs < 10
    assert 1 / 1.02 < decision.low < 1 < decision.high < 1.02


def test_before_the_first_look_and_at_the_budget():
    rule = sequential.Rule(max_pairs=5)
    assert sequential.decide([0.3, 0.31], rule).verdict == sequential.CONTINUE  # 2 pairs: no look yet
    assert sequential.decide([0.3, 0.31], rule, final=True).verdict == sequential.UNDECIDED
    assert sequential.decide([], rule, final=True).verdict == sequential.UNDECIDED
    noisy = [0.2, -0.2, 0.1, -0.1, 0.0]
    assert sequential.decide(noisy, rule).verdict == sequential.UNDECIDED  # the last planned look
    assert sequential.log_ratios([(100.0, 110.0), (100.0, None), (None, 90.0), (0.0, 1.0)]) == [math.log(1.1)]


def test_the_trimmed_rule_sets_aside_the_tails_and_the_plain_rule_is_the_paired_t():
    d = [0.01, 0.02, -0.01, 0.0, 0.03, 0.02, 0.01, 0.9, -0.8, 0.015]  # two bursts among calm pairs
    centre, se, df = sequential.trimmed(d, 0.2)
    assert df == 10 - 2 * 2 - 1 and centre == pytest.approx(np.mean(sorted(d)[2:8]))
    plain = sequential.trimmed(d, 0.0)
    assert plain == pytest.approx((np.mean(d), np.std(d, ddof=1) / math.sqrt(10), 9))
    assert se < plain[1] / 5  # the bursts no longer set the interval's width
    with pytest.raises(ValueError):
        sequential.Rule(trim=0.5)


def test_adjusting_on_the_recorded_other_work_recovers_the_ratio_at_equal_conditions():
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 0.7, 30)  # B's run had this many more cores of other work than A's
    d = math.log(1.05) - 0.15 * x + rng.normal(0.0, 0.02, 30)  # 15% slower per core of other work
    centre, se, df = sequential.adjusted(d, x)
    assert centre == pytest.approx(math.log(1.05), abs=0.015) and df == 28
    plain = sequential.trimmed(d, 0.0)
    assert se < plain[1] / 3  # the interference the conditions recorded no longer sets the width
    assert sequential.adjusted(d, np.zeros(30))[2] == 29  # nothing to adjust on: the plain paired t
    with pytest.raises(ValueError):
        sequential.decide(d, sequential.Rule(max_pairs=40), covariate=x[:5])


def test_a_a_sweeps_adjusted_on_a_covariate_are_called_faster_or_slower_at_most_5_percent_of_the_time():
    rng = np.random.default_rng(31)
    rule = sequential.Rule(max_pairs=40)
    verdicts = Counter(simulate(rng, 1.0, rule, rho=0.7).verdict for _ in range(1000))
    false = sum(verdicts[v] for v in DECIDED) / 1000
    print(f"\nA/A adjusted (rho 0.7), 1000 sweeps of up to 40 pairs: {dict(verdicts)}; false {false:.1%}")
    assert false <= 0.05, verdicts


def test_a_covariate_that_explains_half_the_noise_finds_a_5_percent_speedup_in_fewer_pairs():
    rule = sequential.Rule(max_pairs=100)
    plain = [simulate(np.random.default_rng(100 + i), 1.05, rule) for i in range(150)]
    adjusted = [simulate(np.random.default_rng(100 + i), 1.05, rule, rho=0.7) for i in range(150)]
    found = [sum(d.verdict == sequential.FASTER for d in ds) / 150 for ds in (plain, adjusted)]
    pairs = [float(np.mean([d.pairs for d in ds])) for ds in (plain, adjusted)]
    print(f"\n5% faster: found {found[0]:.0%} in {pairs[0]:.1f} pairs plain, {found[1]:.0%} in {pairs[1]:.1f} adjusted")
    assert found[1] >= found[0] and pairs[1] < 0.85 * pairs[0]
