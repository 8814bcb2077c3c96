"""Sequential A/B verdicts (pure, numpy only): decide after every interleaved pair, error rate controlled.

`repro bench --stack A --stack B --until-verdict` runs A/B pairs and asks `decide` after each complete
pair whether the paired log-ratios d_i = log(B_i / A_i) already settle the question. Looking after every
pair with a fixed-sample interval would call an A/A comparison "faster" or "slower" far more often than
its nominal 5% (each look is another chance). Instead this is a group-sequential design:

- **Alpha spending** (Lan and DeMets 1983): the two-sided error rate alpha = 1 - confidence is spent over
  the planned looks k = FIRST_LOOK .. max_pairs as a function of the information fraction t = k / max_pairs,
  Pocock-type by default (alpha·ln(1 + (e - 1)·t): early looks get a fair share, so clear differences stop
  early), O'Brien-Fleming-type on request (almost nothing early, nearly the fixed-sample level at the end).
- **Boundaries** on the z scale come from the exact recursive integration of the partial sums of the pairs'
  standardised log-ratios (Armitage, McPherson and Rowe 1969): at every look the probability of a first
  crossing under "no difference" equals that look's share of alpha.
- **Unknown variance**: each look's z boundary is turned into the Student t quantile with the same nominal
  tail probability (Jennison and Turnbull 2000, ch. 11), and the look's **repeated confidence interval** is
  centre ± t·se. These intervals hold the true ratio at every look simultaneously with probability about
  `confidence`, so every claim made from them at any look (faster, slower, equivalent) is wrong at most about
  1 - confidence of the time.
- **A trimmed mean** (`Rule.trim`, off by default; 0.2 is Wilcox's usual choice): the centre is the mean of the
  log-ratios left after the lowest and highest share `trim` are set aside, its standard error the winsorized
  standard deviation / ((1 - 2·trim)·√k), with k - 2g - 1 degrees of freedom for g values trimmed a side (Tukey
  and McLaughlin 1963; Wilcox, "Introduction to Robust Estimation and Hypothesis Testing", ch. 4). The runs of a
  pair are exchangeable under "no difference", so their log-ratio is symmetric about the true one and the
  trimmed mean estimates the same ratio. Off by default: on the fixture's noise its t approximation let A/A
  sweeps of up to 40 pairs be called faster or slower 6.4% of the time (4.8% untrimmed).
- **Regression adjustment on the run conditions** (`decide(..., covariate=x)`; CUPED, Deng et al. 2013, as an
  analysis of covariance of the paired differences): x_i is how much more other work (cores, from the run's
  recorded conditions) B's run of pair i had than A's. The fit d_i = a + b·x_i + e_i takes out the part of the
  pair's noise that the recorded interference explains; the centre is a, the log-ratio at equal conditions,
  with its ordinary least squares standard error and k - 2 degrees of freedom. Valid because a run's other work
  is not caused by the stack under test (the run's own processes are not counted in it) and interleaving
  makes its expected difference within a pair zero; when it explains nothing it costs one degree of freedom.

The verdict at a look, with threshold τ (symmetric on the log scale, as in repro.results.stats):
faster when the whole interval is above 1 and the ratio exceeds 1 + τ; slower likewise below; equivalent
when the whole interval lies within [1/(1 + τ), 1 + τ]; otherwise go on, and at the last look or when the
budget is spent: undecided. tests/unit/test_sequential.py simulates the error rates on real step series.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from repro.results import stats

FASTER, SLOWER, EQUIVALENT, UNDECIDED, CONTINUE = "faster", "slower", "equivalent", "undecided", "continue"
POCOCK, OBRIEN_FLEMING = "pocock", "obrien-fleming"
SPENDING = (POCOCK, OBRIEN_FLEMING)
FIRST_LOOK = 3  # pairs: a t interval from 2 pairs (1 degree of freedom) is too wide to be worth a look
DEFAULT_MAX_PAIRS = 30
_GRID_STEP = 0.04  # grid spacing of the recursive integration, in units of one pair's standard deviation
# Off by default: a 20% trim gains ~10% of pairs on the fixture's noise but its t approximation is not conservative
# enough at few pairs (A/A false verdicts 6.4% over 1,000 sweeps of up to 40 pairs, against 4.8% untrimmed)
DEFAULT_TRIM = 0.0
# pairs before the rule adjusts on the covariate: a slope and a robust error from fewer are too noisy (from 4 pairs,
# A/A sweeps of up to 40 pairs were called faster or slower 5.3% of the time on the fixture's noise)
MIN_ADJUSTED = 8
_Z_CAP = 8.0  # a look that spends (next to) nothing: its boundary is effectively never crossed


def _phi(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _cdf(x: np.ndarray | float) -> np.ndarray:
    """Standard normal CDF, vectorised (erf from Abramowitz and Stegun 7.1.26, |error| < 1.5e-7)."""
    z = np.asarray(x, dtype=float) / math.sqrt(2.0)
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = 1.0 - poly * np.exp(-a * a)
    return 0.5 * (1.0 + np.sign(z) * erf)


def spent(t: float, alpha: float, spending: str = POCOCK) -> float:
    """Alpha spent by information fraction t (0 < t <= 1), Lan-DeMets spending function."""
    t = min(max(t, 0.0), 1.0)
    if spending == POCOCK:
        return alpha * math.log(1.0 + (math.e - 1.0) * t)
    if spending == OBRIEN_FLEMING:
        if t <= 0:
            return 0.0
        z = _z_quantile(1 - alpha / 2)
        return float(2.0 * (1.0 - _cdf(z / math.sqrt(t))))
    raise ValueError(f"unknown spending function {spending!r} (one of {', '.join(SPENDING)})")


def _z_quantile(p: float) -> float:
    low, high = 0.0, 40.0
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if float(_cdf(mid)) < p else (low, mid)
    return (low + high) / 2


@lru_cache(maxsize=64)
def z_boundaries(max_pairs: int, alpha: float, spending: str = POCOCK, first: int = FIRST_LOOK) -> tuple[float, ...]:
    """Two-sided z boundaries c_k for looks k = first .. max_pairs (one pair between looks).

    S_k, the sum of k standardised pair differences, is a Gaussian random walk under "no difference";
    |S_k| >= c_k·√k at look k stops it. Each c_k is set (bisection) so that the probability of first
    crossing at look k equals spent(k/N) - spent((k-1)/N), the sub-density of the walks still going
    being carried from look to look on a grid (recursive numerical integration).
    """
    if max_pairs < first:
        raise ValueError(f"max_pairs {max_pairs} is below the first look ({first} pairs)")
    out: list[float] = []
    x = w = None  # grid of S values still going, and their sub-density times the grid weights
    used = 0.0
    for k in range(first, max_pairs + 1):
        share = spent(k / max_pairs, alpha, spending) - used
        sk = math.sqrt(k)

        def exit_probability(c: float, x=x, w=w, k=k, sk=sk) -> float:
            if x is None:  # first look: S ~ N(0, k)
                return float(2.0 * (1.0 - _cdf(c)))
            return float(np.sum(w * (_cdf(-c * sk - x) + 1.0 - _cdf(c * sk - x))))

        if share <= 1e-12 or exit_probability(_Z_CAP) >= share:
            c = _Z_CAP
        else:
            low, high = 0.0, _Z_CAP
            for _ in range(60):
                mid = (low + high) / 2
                low, high = (mid, high) if exit_probability(mid) > share else (low, mid)
            c = (low + high) / 2
        used += exit_probability(c)
        out.append(c)
        # sub-density of S_k on the continuation region (-c√k, c√k)
        n = max(2, math.ceil(2 * c * sk / _GRID_STEP))
        y = np.linspace(-c * sk, c * sk, n + 1)
        h = y[1] - y[0]
        weights = np.full(y.size, h)
        weights[0] = weights[-1] = h / 2
        density = _phi(y / sk) / sk if x is None else (w[None, :] * _phi(y[:, None] - x[None, :])).sum(axis=1)
        x, w = y, density * weights
    return tuple(out)


@lru_cache(maxsize=4096)
def _t_critical(max_pairs: int, alpha: float, spending: str, first: int, k: int, df: int) -> float:
    c = z_boundaries(max_pairs, alpha, spending, first)[k - first]
    tail = float(1.0 - _cdf(c))
    return math.inf if tail <= 1e-15 else stats.t_quantile(1.0 - tail, df)


def trimmed(d: Sequence[float], trim: float) -> tuple[float, float, int]:
    """Trimmed mean, its standard error and degrees of freedom (Tukey-McLaughlin): (centre, se, df)."""
    x = np.sort(np.asarray(d, dtype=float))
    k = x.size
    g = math.floor(trim * k)
    if g == 0 or k - 2 * g < 2:
        return float(x.mean()), float(x.std(ddof=1)) / math.sqrt(k), k - 1
    centre = float(x[g:k - g].mean())
    winsorized = np.clip(x, x[g], x[k - g - 1])
    se = float(winsorized.std(ddof=1)) / ((1 - 2 * g / k) * math.sqrt(k))
    return centre, se, k - 2 * g - 1


@dataclass(frozen=True)
class Rule:
    """A sequential plan: how many pairs at most, at what confidence, threshold and spending."""

    max_pairs: int = DEFAULT_MAX_PAIRS
    confidence: float = stats.DEFAULT_CONFIDENCE
    threshold: float = stats.DEFAULT_THRESHOLD
    spending: str = POCOCK
    first: int = FIRST_LOOK
    trim: float = DEFAULT_TRIM  # the share of the log-ratios set aside at each end (0: the plain paired t)
    adjust: bool = True  # adjust on the runs' recorded other work where every pair has it (`decide`'s covariate)

    def __post_init__(self) -> None:
        if not 0 <= self.trim < 0.5:
            raise ValueError("trim must be in [0, 0.5)")
        if self.max_pairs < self.first:
            raise ValueError(f"max_pairs must be at least {self.first} (the first look)")
        if self.spending not in SPENDING:
            raise ValueError(f"spending must be one of {', '.join(SPENDING)}")

    def t_critical(self, k: int, df: int | None = None) -> float:
        """The t multiplier of the repeated confidence interval at look k (k complete pairs; df: k - 1 unless
        given)."""
        return _t_critical(self.max_pairs, round(1 - self.confidence, 12), self.spending, self.first, k,
                           max(1, k - 1 if df is None else df))


@dataclass(frozen=True)
class Decision:
    """What the rule says after k complete pairs."""

    verdict: str  # FASTER, SLOWER, EQUIVALENT, CONTINUE (more pairs may decide) or UNDECIDED (budget spent)
    pairs: int  # complete pairs used
    ratio: float | None  # exp(trimmed mean log-ratio): NEW/OLD (the plain geometric mean before the first look)
    low: float | None  # the repeated confidence interval of the ratio (None before the first look)
    high: float | None
    confidence: float
    threshold: float

    @property
    def decided(self) -> bool:
        return self.verdict in (FASTER, SLOWER, EQUIVALENT)


def log_ratios(pairs: Sequence[tuple[float | None, float | None]]) -> list[float]:
    """log(new/old) of the complete pairs (both figures positive and finite); incomplete pairs are left out."""
    return [math.log(n / o) for o, n in pairs
            if o is not None and n is not None and o > 0 and n > 0 and math.isfinite(o) and math.isfinite(n)]


def adjusted(d: Sequence[float], x: Sequence[float]) -> tuple[float, float, int]:
    """The intercept of d = a + b·x by least squares, its standard error and degrees of freedom: (a, se, k - 2);
    the plain mean when x does not vary (nothing to adjust on) or before MIN_ADJUSTED pairs."""
    dd, xx = np.asarray(d, dtype=float), np.asarray(x, dtype=float)
    k = dd.size
    sxx = float(((xx - xx.mean()) ** 2).sum())
    if k < MIN_ADJUSTED or sxx <= 1e-12 * max(1.0, float((xx ** 2).sum())):
        return float(dd.mean()), float(dd.std(ddof=1)) / math.sqrt(k), k - 1
    slope = float(((xx - xx.mean()) * (dd - dd.mean())).sum()) / sxx
    a = float(dd.mean()) - slope * float(xx.mean())
    residual = dd - a - slope * xx
    # the intercept's variance robust to a spread that depends on x (HC3, MacKinnon and White 1985): the runs'
    # real shifts are heavy-tailed, and the classical OLS error let A/A sweeps be called faster or slower 6%
    # of the time in the simulation (bench/p7_until_verdict.py)
    design = np.column_stack([np.ones(k), xx])
    bread = np.linalg.inv(design.T @ design)
    leverage = np.einsum("ij,jk,ik->i", design, bread, design)
    meat = (design * (residual / (1.0 - leverage))[:, None] ** 2).T @ design
    variance = float((bread @ meat @ bread)[0, 0])
    return a, math.sqrt(max(variance, 0.0)), k - 2


def decide(d: Sequence[float], rule: Rule, *, final: bool = False,
           covariate: Sequence[float] | None = None) -> Decision:
    """The verdict after the complete pairs' log-ratios `d`; `final`: no more pairs will come (budget spent);
    `covariate`: per pair, B's other work minus A's (cores), to adjust on (module docstring)."""
    k = len(d)
    if covariate is not None and len(covariate) != k:
        raise ValueError(f"{len(covariate)} covariate values for {k} pairs")
    conf, thr = rule.confidence, rule.threshold
    if k == 0:
        return Decision(UNDECIDED if final else CONTINUE, 0, None, None, None, conf, thr)
    arr = np.asarray(d, dtype=float)
    if k < rule.first:
        return Decision(UNDECIDED if final else CONTINUE, k, math.exp(float(arr.mean())), None, None, conf, thr)
    look = min(k, rule.max_pairs)  # pairs beyond the plan reuse its last boundary (conservative enough: rare)
    mean, se, df = adjusted(arr, covariate) if covariate is not None else trimmed(arr, rule.trim)
    half = rule.t_critical(look, df) * se if se > 0 else 0.0
    low, high = mean - half, mean + half
    beyond = math.log1p(thr)
    if low > 0 and mean > beyond:
        word = FASTER
    elif high < 0 and -mean > beyond:
        word = SLOWER
    elif -beyond < low and high < beyond:
        word = EQUIVALENT
    else:
        word = UNDECIDED if final or k >= rule.max_pairs else CONTINUE
    return Decision(word, k, math.exp(mean), math.exp(low) if math.isfinite(low) else 0.0,
                    math.exp(high) if math.isfinite(high) else math.inf, conf, thr)


def fixed_pairs_needed(sd: float, effect: float, *, confidence: float = stats.DEFAULT_CONFIDENCE,
                       threshold: float = stats.DEFAULT_THRESHOLD, power: float = 0.5) -> int:
    """Pairs a fixed-size paired t comparison needs so that a true `effect` (log scale) is called with the
    given probability (0.5: the median case) at `confidence`: the smallest n whose interval's lower end
    is expected above 0 and whose mean is beyond the threshold. For P7's side-by-side (bench/)."""
    z_power = _z_quantile(power) if power > 0.5 else 0.0
    for n in range(2, 100_000):
        half = stats.t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
        if effect - z_power * sd / math.sqrt(n) - half > 0 and effect > math.log1p(threshold):
            return n
    return 100_000
