"""`repro results scaling|table`: select runs -> keep the kinds asked for -> each kind's results document
(and, with a plot file, its figure). The CLI parses the flags and renders the document; the selection,
the kind filter and the figure are chained here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repro.compare.kind import by_kind, results_document
from repro.errors import InputError, ResultsError
from repro.formats import Document
from repro.results import metrics
from repro.results.record import RunRecord
from repro.results.select import Filters, records_of, select
from repro.results.store import Store
from repro.workloads.catalog import kind_of


@dataclass(frozen=True)
class Table:
    """The runs tabulated, their document (one report per kind) and the figure written, if any."""

    records: tuple[RunRecord, ...]
    document: Document
    plot: Path | None = None


def runs_table(root: str | Path | None, selectors: Sequence[str], filters: Filters, *, kind: str | None = None,
               throughput_first: bool = False, warmup: str | None = None, baseline_workers: int | None = None,
               link_gbps: float | None = None, plot: str | None = None) -> Table:
    """The selected runs of `kind` (every kind when None) of the store at `root` as one document;
    `throughput_first`: only the throughput runs where the selection holds any (`repro results scaling`);
    `plot`: also draw them there."""
    from repro.pipeline.runs import reading_store

    store: Store = reading_store(root)  # a --store that is not a directory is the first error, as it always was
    if plot:
        from repro.results.plots import check_target

        check_target(plot)  # before any work
    if link_gbps is not None and link_gbps <= 0:
        raise InputError(f"--link-gbps: expected a positive number, found {link_gbps:g}")
    wanted = (lambda k: k == kind) if kind else (lambda k: True)
    if selectors:
        records = records_of([select(s, store, filters) for s in selectors])
    else:  # only the runs of the kinds asked for are parsed
        records = store.indexed(s for s in store.summaries() if filters.matches(s) and wanted(kind_of(s.workload)))
    records = [r for r in records if wanted(kind_of(r.settings.workload))]
    if throughput_first and not kind:  # the scaling table, as before `table` existed
        records = [r for r in records if kind_of(r.settings.workload) == "throughput"] or records
    if not records:
        raise ResultsError(f"no {kind + ' ' if kind else ''}runs to tabulate in {store.root}")
    kinds = by_kind(records)
    if plot and len(kinds) > 1:
        raise InputError(f"--plot draws one kind of result; the selected runs hold {', '.join(kinds)}",
                         hint=f"add --kind {next(iter(kinds))} (or another of them)")
    warmup = warmup or metrics.common_warmup(records)  # as stored: re-printing gives the same numbers
    options = {"warmup": warmup, "baseline_workers": baseline_workers, "link": link_gbps}
    document = results_document(records, **options)
    written = None
    if plot:
        from repro.compare.kind import plot_records

        ok = [r for r in records if r.status == "ok"] or records
        written = plot_records(ok, plot, **options)
    return Table(tuple(records), document, written)
