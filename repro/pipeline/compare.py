"""`repro compare OLD NEW`: select each side's records from the store, then compare them (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from repro.compare import Comparison, Options
from repro.compare import compare as compare_records
from repro.errors import InputError
from repro.pipeline.suggest import suggester
from repro.results.select import Filters, Selection, select
from repro.results.store import Store


@dataclass(frozen=True)
class CompareResult:
    """The comparison and the two selections it was made from."""

    old: Selection
    new: Selection
    comparison: Comparison


def compare(old: str, new: str, *, store: Store, filters: Filters, options: Options,
            store_flag: str | None = None) -> CompareResult:
    """Resolve both selectors in the store, narrowed by `filters`, and compare their records (`store_flag`: the
    --store given, repeated in the commands the comparison suggests)."""
    a = select(old, store, filters)
    b = select(new, store, filters)
    if {s.id for s in a.summaries} == {s.id for s in b.summaries}:  # a stack against itself says nothing
        raise InputError(f"OLD and NEW are the same runs ({a.description}; {len(a.summaries)} runs)",
                         hint="give two different stacks (or selections) to compare")
    result = compare_records(a.records, b.records, options, old_description=a.description,
                             new_description=b.description, suggest=suggester(store, store_flag))
    return CompareResult(a, b, result)
