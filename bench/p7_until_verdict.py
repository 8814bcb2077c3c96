"""P7: benchmark minutes `repro bench --until-verdict` needs to call a 5% difference, against fixed repeats.

    python bench/p7_until_verdict.py [--sweeps 400] [--aa-sweeps 1000] [--max-pairs 100,200] [--trim 0.2]
                                     [--spending pocock|obrien-fleming] [--rho none,0.5,0.7] [--store DIR]

Side by side, at the same confidence (95%) and threshold (2%), on the same run-to-run noise:
  until-verdict  pairs A/B until the sequential rule (repro.results.sequential, Pocock alpha spending, a trimmed
                 mean, at most --max-pairs) says faster; its pairs to a verdict and how often it gets there (its
                 power); and on A/A sweeps of the same budget how often it says faster or slower (false verdicts)
  fixed          n pairs, then one paired t test (what `--repeats n` and `repro compare` do): the smallest n
                 whose power matches the sequential rule's, simulated on the same noise
With --rho, every run also records its other work, correlated -rho with its shift (tests/unit/test_sequential.py
`covariates`), and the rule adjusts on it (repro.results.sequential.adjusted); "adj.fx" is then the fixed test
adjusted alike, to show what the adjustment alone buys. The noise is the real run-to-run shifts of back-to-back
runs in tests/data/steps (calm invocations, heavy tail kept), plus a 0.5%/run drift of the machine, as
tests/unit/test_sequential.py simulates. Minutes are
pairs x 2 runs x the mean duration of one run: that of the fixture's calm runs (resnet20, batch 8, 30 steps,
2-core VM), or with --store DIR the mean `duration_s` of the real runs stored there (e.g. a real short
`--until-verdict` sweep, whose ratios are printed too). Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repro.results import sequential, stats
from tests.unit import real_steps
from tests.unit.test_sequential import SHIFTS, covariates, simulate

EFFECT = 1.05


def fixed_power(n: int, rng: np.random.Generator, sweeps: int, drift: float = 0.005,
                rho: float | None = None) -> float:
    """How often n fixed pairs and one paired t test (95%, threshold 2%) call a 5% speedup faster; with `rho`,
    the same test adjusted on the runs' recorded other work (sequential.adjusted at one look)."""
    found = 0
    when = np.arange(2 * n).reshape(n, 2) * drift
    a_first = np.arange(n) % 2 == 0
    drift_a, drift_b = np.where(a_first, when[:, 0], when[:, 1]), np.where(a_first, when[:, 1], when[:, 0])
    for _ in range(sweeps):
        shift = rng.choice(SHIFTS, size=(n, 2)) + rng.normal(0.0, 0.005, (n, 2))
        d = (shift[:, 1] - drift_b + math.log(EFFECT)) - (shift[:, 0] - drift_a)
        if rho is None:
            found += stats.compare_pairs([(1.0, math.exp(x)) for x in d]).verdict == stats.FASTER
            continue
        c = covariates(rng, shift, rho)
        centre, se, df = sequential.adjusted(d, c[:, 1] - c[:, 0])
        low = centre - stats.t_quantile(0.975, df) * se
        found += low > 0 and centre > math.log(1.02)
    return found / sweeps


def run_minutes(store: str | None) -> tuple[float, str]:
    if store:
        from repro.results.store import Store

        records = [r for r in Store(store).records() if r.duration_s]
        if records:
            pairs: dict[str, list] = {}
            for r in records:
                if r.sweep and r.sweep.pair:
                    pairs.setdefault(r.sweep.pair, []).append(r)
            from repro.results import metrics

            ratios = [metrics.throughput(b) / metrics.throughput(a) for a, b in
                      (sorted(v, key=lambda r: r.stack.name) for v in pairs.values() if len(v) == 2)
                      if metrics.throughput(a) and metrics.throughput(b)]
            if ratios:
                print(f"real pairs in {store}: B/A " + ", ".join(f"{x:.3f}" for x in ratios)
                      + f" (sd of log ratios {statistics.stdev(np.log(ratios)):.1%})" if len(ratios) > 1 else "")
            return statistics.mean(r.duration_s for r in records) / 60, f"mean of {len(records)} runs in {store}"
    durations = [r["duration_s"] for r in real_steps.runs() if r["invocation"] <= 4]
    return statistics.mean(durations) / 60, f"mean of the fixture's {len(durations)} calm runs"


def fixed_matching(power: float, sweeps: int, rho: float | None = None) -> int:
    """The smallest n whose fixed paired t test calls the 5% speedup at least as often as `power`."""
    n = 4
    while n < 1000 and fixed_power(n, np.random.default_rng(n), sweeps, rho=rho) < power:
        n = math.ceil(n * 1.15)
    low, high = max(2, int(n / 1.15)), n
    while high - low > 1:  # bisect to the smallest n with the same power
        mid = (low + high) // 2
        if fixed_power(mid, np.random.default_rng(mid), sweeps, rho=rho) >= power:
            high = mid
        else:
            low = mid
    return high


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sweeps", type=int, default=400)
    p.add_argument("--aa-sweeps", type=int, default=1000, help="A/A sweeps per budget (false verdicts)")
    p.add_argument("--max-pairs", default="100,200", help="budgets to simulate, comma-separated")
    p.add_argument("--trim", type=float, default=sequential.DEFAULT_TRIM, help="the rule's trimming (0: paired t)")
    p.add_argument("--spending", default=sequential.POCOCK, choices=sequential.SPENDING)
    p.add_argument("--rho", default="none", help="correlations of a run's recorded other work with its shift, "
                   "comma-separated ('none': no covariate recorded, the plain paired t)")
    p.add_argument("--store", default=None)
    args = p.parse_args()
    per_run, source = run_minutes(args.store)
    print(f"noise: real run-to-run shifts of tests/data/steps (sd {SHIFTS.std(ddof=1):.1%} per run), drift 0.5%/run;"
          f" one run = {per_run:.2f} min ({source}); rule: {args.spending} spending, a look after every pair from "
          "pair 3," + (f" {args.trim:.0%} trimmed mean" if args.trim else " paired t on the log-ratios"))
    print(f"{'calling a 5% speedup, 95%, threshold 2%':44} {'rho':>5} {'pairs':>6} {'min':>6} {'found':>6} "
          f"{'fixed':>6} {'P7':>6} {'adj.fx':>6} {'A/A false':>9} {'A/A equiv':>9}")
    for rho in (None if x == "none" else float(x) for x in args.rho.split(",")):
        for budget in (int(x) for x in args.max_pairs.split(",")):
            rule = sequential.Rule(max_pairs=budget, trim=args.trim, spending=args.spending)
            rng = np.random.default_rng(7)
            decisions = [simulate(rng, EFFECT, rule, rho) for _ in range(args.sweeps)]
            power = sum(d.verdict == sequential.FASTER for d in decisions) / len(decisions)
            pairs = [d.pairs for d in decisions]
            mean_pairs = statistics.mean(pairs)
            n = fixed_matching(power, max(200, args.sweeps // 2))
            adjusted_n = "-" if rho is None else str(fixed_matching(power, max(200, args.sweeps // 2), rho))
            aa = [simulate(rng, 1.0, rule, rho).verdict for _ in range(args.aa_sweeps)]
            false = sum(v in (sequential.FASTER, sequential.SLOWER) for v in aa) / len(aa)
            equivalent = aa.count(sequential.EQUIVALENT) / len(aa)
            print(f"{f'  --until-verdict --max-pairs {budget} (mean)':44} {'-' if rho is None else f'{rho:.2f}':>5}"
                  f" {mean_pairs:6.1f} {mean_pairs * 2 * per_run:6.1f} {power:6.0%} {n:6d} {n / mean_pairs:5.2f}x"
                  f" {adjusted_n:>6} {false:9.1%} {equivalent:9.1%}   (median {statistics.median(pairs):.0f} pairs)")
    print("fixed: pairs a fixed paired t test (`--repeats n` then `repro compare`) needs for the same power; "
          "P7 = fixed / mean pairs, the ratio of benchmark minutes; adj.fx: a fixed test adjusted on the same "
          "covariate (what the adjustment alone buys)")


if __name__ == "__main__":
    main()
