"""Which stored runs `repro results prune` removes (pure): failed runs, runs older than an age, unreadable files.

Every criterion given must hold for a run to go (they narrow one another); `unreadable` adds the record
files that cannot be read at all, except those written by a newer repro, which are valid data for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from repro.errors import InputError
from repro.results.index import Broken, Summary

_AGE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_cutoff(text: str, now: datetime) -> datetime:
    """--older-than: an age (90m, 12h, 30d, 2w) before `now`, or a date or time (2024-05-01, ISO 8601)."""
    match = _AGE.match(text.strip().lower())
    if match:
        try:
            return now - timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
        except (OverflowError, ValueError):  # older than the calendar reaches: every record
            return datetime.min.replace(tzinfo=timezone.utc)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"--older-than: expected an age (90m, 12h, 30d, 2w) or a date (2024-05-01), "
                         f"found '{text}'") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _created(summary: Summary) -> datetime | None:
    try:
        when = datetime.fromisoformat(summary.created)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Criteria:
    """What to prune; at least one must be set."""

    failed: bool = False
    before: datetime | None = None
    stack_paths: frozenset[str] | None = None  # the runs of --stack, by path
    unreadable: bool = False

    @property
    def empty(self) -> bool:
        return not (self.failed or self.before or self.stack_paths is not None or self.unreadable)

    @property
    def selects_runs(self) -> bool:
        return self.failed or self.before is not None or self.stack_paths is not None

    def matches(self, summary: Summary) -> bool:
        """Whether a readable run goes."""
        if not self.selects_runs:
            return False
        if self.failed and summary.status == "ok":
            return False
        if self.stack_paths is not None and summary.path not in self.stack_paths:
            return False
        if self.before is not None:
            created = _created(summary)
            if created is None or created >= self.before:
                return False
        return True


def to_prune(summaries: Sequence[Summary], broken: Sequence[Broken], criteria: Criteria
             ) -> tuple[list[Summary], list[Broken]]:
    """The runs and the unreadable files that the criteria remove."""
    if criteria.empty:
        raise InputError("repro results prune: give what to remove (--failed, --older-than, --stack, --unreadable)",
                         hint="nothing is removed without a criterion; --dry-run lists what would go")
    runs = [s for s in summaries if criteria.matches(s)]
    files = [b for b in broken if criteria.unreadable and not b.newer]
    return runs, files
