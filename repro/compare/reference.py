"""A candidate against a reference (pure): "within X% of the reference", "below", or "undecided", one-sided.

    repro compare NEW --reference REF --within 5%

REF is OLD of an ordinary comparison (an imported published table, imported logs, or a stack in the store). Every
comparison kind's rows are computed again at the two-sided level 2c - 1, so that the low end of each interval is
a one-sided lower bound at confidence c (and the high end a one-sided upper bound), and each row's figure ratio
NEW/REF, oriented so that above 1 is better (`Kind.ratios`: images/sec, bus bandwidth, speed-up to accuracy, any
kind registered later), is judged by repro.results.stats.reference_verdict: within when the lower bound is at
least 1 - X, below when the upper bound is under 1 - X. Where REF has runs the interval covers both sides'
spread (Welch's t, or paired for interleaved runs); where it is a single published number it covers NEW's runs
only, and the row says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from repro.compare.align import Key
from repro.compare.kind import KINDS
from repro.results import stats

if TYPE_CHECKING:
    from repro.compare.align import Pair
    from repro.compare.options import Options
    from repro.results.record import RunRecord


@dataclass(frozen=True)
class ReferenceRow:
    """One figure of one aligned point against the reference."""

    kind: str
    key: Key
    figure: str  # what the ratio measures ("images/sec", "busbw horovod float32 1,048,576 B", ...)
    ratio: stats.RatioResult  # NEW/REF at the two-sided level 2c - 1: its ends are one-sided bounds at c
    verdict: str  # stats.WITHIN, stats.BELOW or stats.UNDECIDED


@dataclass(frozen=True)
class ReferenceCheck:
    """Every figure against the reference, with the margin and the one-sided confidence it was judged at."""

    within: float
    confidence: float
    rows: tuple[ReferenceRow, ...]

    @property
    def below(self) -> tuple[ReferenceRow, ...]:
        """The figures shown to be below the margin (`--fail-on-regression` fails on them)."""
        return tuple(r for r in self.rows if r.verdict == stats.BELOW)

    def words(self, row: ReferenceRow) -> str:
        """'within 5% of the reference', 'below 95% of the reference', 'undecided'."""
        if row.verdict == stats.WITHIN:
            return f"within {self.within:.0%} of the reference"
        if row.verdict == stats.BELOW:
            return f"below {1 - self.within:.0%} of the reference"
        return stats.UNDECIDED


def check(by_kind: Mapping[str, Sequence[Pair]], old: Sequence[RunRecord], new: Sequence[RunRecord],
          options: Options) -> ReferenceCheck:
    """Judge every kind's figures of NEW against OLD, the reference (module docstring)."""
    within = options.within if options.within is not None else 0.05
    level = replace(options, confidence=stats.one_sided(options.confidence))
    rows = []
    for name, pairs in by_kind.items():
        kind = KINDS.get(name)
        part = kind.compare(pairs, old, new, level)
        for row, (figure, ratio) in zip(part.rows, kind.ratios(part), strict=False):
            rows.append(ReferenceRow(name, row.key, figure, ratio, stats.reference_verdict(ratio, within)))
    return ReferenceCheck(within, options.confidence, tuple(rows))
