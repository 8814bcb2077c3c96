"""Student's t distribution: its upper tail and quantiles (pure; numpy has no quantile function and scipy is not a
dependency). repro.results.stats and repro.results.sequential draw their intervals from it."""

from __future__ import annotations

import math
from functools import lru_cache


def _beta_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _beta_regularized(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_tail(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` (real, > 0) degrees of freedom, t >= 0."""
    return 0.5 * _beta_regularized(df / 2.0, 0.5, df / (df + t * t))


@lru_cache(maxsize=1024)  # a comparison asks for a few distinct (p, df) dozens of times; each is a root search
def t_quantile(p: float, df: float) -> float:
    """The p-quantile (0.5 <= p < 1) of Student's t with `df` degrees of freedom."""
    tail = 1.0 - p
    low, high = 0.0, 1.0
    while t_tail(high, df) > tail:
        low, high = high, high * 2.0
    for _ in range(200):  # bisection: t_tail is monotone, 1e-12 is far below what is printed
        mid = (low + high) / 2.0
        low, high = (mid, high) if t_tail(mid, df) > tail else (low, mid)
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0
