"""`repro compare OLD NEW`: select each side's records from the store, then compare them (pure), then the report
and the figure.

`compare_report` is the command from paths and flag values: every value checked before any work, the store read,
both sides selected and compared, the report built (repro.compare.render) and the figure drawn; the CLI renders the
report's document in the format asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repro.compare import Comparison, Options
from repro.compare import compare as compare_records
from repro.errors import InputError, ReproError
from repro.formats import Document
from repro.pipeline.suggest import suggester
from repro.results import stats
from repro.results.select import Filters, Selection, parse_filters, select
from repro.results.store import Store

__all__ = ["CompareReport", "CompareRequest", "CompareResult", "Filters", "Options", "compare", "compare_report",
           "levels", "parse_filters", "reading_store"]


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


def reading_store(path: str | None) -> Store:
    """The store a command reads from; a --store that is not a directory is an error (exit 2), not an empty store."""
    if path is not None and not Path(path).is_dir():
        raise InputError(f"--store {path}: no such directory", hint="give the results directory `repro bench` "
                         "stored its runs in (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    return Store(path)


def levels(threshold: float | None, confidence: float | None) -> tuple[float, float]:
    """--threshold and --confidence (their defaults where not given), checked: what a verdict is judged by."""
    threshold = stats.DEFAULT_THRESHOLD if threshold is None else threshold
    confidence = stats.DEFAULT_CONFIDENCE if confidence is None else confidence
    if not 0 <= threshold < 1:
        raise InputError(f"--threshold: expected a fraction in [0, 1), found {threshold}")
    if not 0.5 <= confidence < 1:
        raise InputError(f"--confidence: expected a level in [0.5, 1), found {confidence}")
    return threshold, confidence


@dataclass(frozen=True)
class CompareRequest:
    """`repro compare` as given: the selectors, the store, the filters (comma lists), the rule, the figure."""

    old: str
    new: str | None = None
    reference: str | None = None  # judge `old` (the one selection given) against this
    within: float | None = None  # the margin of `reference` (default 5%)
    store: str | None = None
    models: Sequence[str] = ()
    batches: Sequence[str] = ()
    precisions: Sequence[str] = ()
    workers: Sequence[str] = ()
    hosts: Sequence[str] = ()
    threshold: float | None = None
    confidence: float | None = None
    allow_different_hardware: bool = False
    warmup: str | None = None
    baseline_workers: int | None = None
    plot: str | None = None
    quiet: bool = False  # the report's tables and verdicts only
    fail_on_regression: bool = False


@dataclass(frozen=True)
class CompareReport:
    """The comparison, its report, the figure drawn (or why not) and, with fail_on_regression, what regressed."""

    comparison: Comparison
    document: Document
    plot: Path | None = None  # the figure written
    plot_error: ReproError | None = None  # why it could not be drawn (raised once the report is printed)
    regression: str | None = None  # '2 point(s) significantly slower' when the request fails on it


def sides(request: CompareRequest) -> tuple[str, str]:
    """OLD and NEW: the two selections, or with a reference the reference and the one selection given."""
    r = request
    if r.reference is not None:
        if r.new is not None:
            raise InputError("compare --reference REF takes one selection (the candidate), not two",
                             hint=f"repro compare {r.old} --reference {r.reference} --within 5%")
        return r.reference, r.old
    if r.within is not None:
        raise InputError("--within is the margin of --reference", hint="give --reference REF, or use --threshold")
    if r.new is None:
        raise InputError("compare needs OLD and NEW (or one selection and --reference REF)")
    return r.old, r.new


def _options(r: CompareRequest) -> Options:
    threshold, confidence = levels(r.threshold, r.confidence)
    within = (0.05 if r.within is None else r.within) if r.reference is not None else None
    return Options(threshold=threshold, confidence=confidence, allow_different_hardware=r.allow_different_hardware,
                   warmup=r.warmup or "fixed", baseline_workers=r.baseline_workers, within=within)


def _regression(c: Comparison) -> str | None:
    """What --fail-on-regression fails on: figures below the reference's margin, else points significantly slower."""
    if c.reference is not None and c.reference.below:
        return f"{len(c.reference.below)} figure(s) below {1 - c.reference.within:.0%} of the reference"
    if c.regressions:
        return f"{len(c.regressions)} point(s) significantly slower"
    return None


def compare_report(request: CompareRequest) -> CompareReport:
    """`repro compare`: check every value (the figure's file first), select and compare, build the report, draw."""
    from repro.compare.render import document

    r = request
    if r.plot:
        from repro.results.plots import check_target

        check_target(r.plot)  # before any work
    old, new = sides(r)
    store = reading_store(r.store)
    filters = parse_filters(models=r.models, batches=r.batches, precisions=r.precisions, workers=r.workers,
                            hosts=r.hosts)
    c = compare(old, new, store=store, filters=filters, options=_options(r), store_flag=r.store).comparison
    drawn, error = None, None
    if r.plot:
        from repro.compare.plot import plot

        try:
            drawn = plot(c, r.plot)
        except ReproError as exc:  # the report is still printed; then this error, as before
            error = exc
    return CompareReport(c, document(c, quiet=r.quiet), drawn, error,
                         _regression(c) if r.fail_on_regression else None)
