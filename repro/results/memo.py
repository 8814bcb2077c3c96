"""Figures of immutable values computed once per object: a command that groups the same records into points
several times (a comparison's points, then each side's scaling series) detects each rank's steady state and
each run's images/sec once, not at every grouping.

Records and ranks are frozen (repro.results.record), so a figure of one object never changes. The memo keys on
the object's identity and holds the object, so an id is never reused for another object while remembered; it
forgets everything past LIMIT entries, which bounds a long-lived process's memory.

A run read from the store's index (repro.results.indexed) is `Known`: it carries the figures the index computed
when it read the file, and every memo answers from them first, so the run's file is never parsed for them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")
LIMIT = 200_000
MISSING = object()


class Known:
    """An object that carries some of its figures already computed, by the argument a Memo keys them with."""

    __slots__ = ()

    def figure(self, argument: Hashable) -> Any:
        """The figure computed already for this argument, or MISSING."""
        return MISSING


class Memo:
    """Values of `compute(obj)` by (object identity, argument)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._values: dict[tuple[int, Hashable], tuple[Any, Any]] = {}

    def get(self, obj: object, argument: Hashable, compute: Callable[[], T]) -> T:
        """The remembered value for (obj, argument), else compute() remembered."""
        if isinstance(obj, Known):
            found = obj.figure(argument)
            if found is not MISSING:
                return found
        key = (id(obj), argument)
        hit = self._values.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = compute()
        if len(self._values) >= self.limit:
            self._values.clear()
        self._values[key] = (obj, value)
        return value

    def clear(self) -> None:
        """Forget every value."""
        self._values.clear()
