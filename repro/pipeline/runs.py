"""`repro results` (list, rm, prune): open the store -> select -> (remove) -> a typed result the CLI renders.

Each function takes the store's root (None: the default store) and the values the CLI parsed; the store,
the selection and the index are used here so that the CLI never reaches the results stage itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from repro.errors import InputError
from repro.results.index import Broken, Summary
from repro.results.select import Filters, parse_filters  # request types, re-exported for the CLI (__all__)
from repro.results.store import Store

__all__ = ["Filters", "Listing", "Removal", "list_runs", "parse_filters", "prune_runs", "reading_store",
           "remove_runs"]


def reading_store(root: str | Path | None) -> Store:
    """The store a command reads from; a root that is not a directory is an error (exit 2), not an empty store."""
    if root is not None and not Path(root).is_dir():
        raise InputError(f"--store {root}: no such directory", hint="give the results directory `repro bench` "
                         "stored its runs in (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    return Store(root)


@dataclass(frozen=True)
class Listing:
    """The runs `repro results` lists, and each non-throughput run's figure and unit (empty when every run
    measures images/sec: the listing then keeps its images/sec column)."""

    root: Path
    runs: tuple[Summary, ...]
    figures: Mapping[str, tuple[float | None, str]] = field(default_factory=dict)
    selection_file: Path | None = None  # --save-selection, written

    def figure(self, run: Summary) -> tuple[float | None, str]:
        """The run's figure and its unit (images/sec unless it is another kind of result)."""
        return self.figures.get(run.id) or (run.images_per_sec, "images/sec")


def list_runs(root: str | Path | None, stack: str | None = None, filters: Filters | None = None,
              save_selection: str | Path | None = None) -> Listing:
    """The stored runs of `stack` (every stack when None) that pass `filters`; `save_selection`: write the
    selection to that file as well."""
    from repro.results.select import select, write_selection_file

    filters = filters or Filters()
    store = reading_store(root)
    saved = write_selection_file(Path(save_selection), store.root, stack, filters) if save_selection else None
    if stack:
        runs = tuple(select(stack, store, filters).summaries)
    else:
        runs = tuple(s for s in store.summaries() if filters.matches(s))
    return Listing(store.root, runs, _figures(store, runs), saved)


def _figures(store: Store, runs: Sequence[Summary]) -> dict[str, tuple[float | None, str]]:
    """The figure of every run that is not a throughput run (all-reduce, time to accuracy), by id: only those
    records are read; {} when every run measures images/sec."""
    from repro.workloads.catalog import kind_of

    other = [s for s in runs if kind_of(s.workload) != "throughput"]
    if not other:
        return {}
    from repro.compare.kind import headline

    return {r.id: headline(r) for r in store.read_all(other)}


@dataclass(frozen=True)
class Removal:
    """The runs and unreadable record files removed (or, with dry_run, that would be)."""

    root: Path
    runs_dir: Path  # where the record files are: unreadable files are named relative to it
    runs: tuple[Summary, ...]
    files: tuple[Broken, ...]
    dry_run: bool


def _remove(store: Store, runs: Sequence[Summary], files: Sequence[Broken], dry_run: bool) -> Removal:
    if not dry_run:
        store.remove([s.path for s in runs] + [b.path for b in files])
    return Removal(store.root, store.runs, tuple(runs), tuple(files), dry_run)


def remove_runs(root: str | Path | None, ids: Sequence[str], *, dry_run: bool = False) -> Removal:
    """Remove the runs named by id or unique prefix; every id is resolved before anything goes."""
    store = reading_store(root)
    paths = list(dict.fromkeys(store.find(i) for i in ids))
    by_path = {s.path: s for s in store.summaries(stack_hashes=sorted({p.split("/", 1)[0] for p in paths}))}
    broken = {b.path: b for b in store.broken()}
    return _remove(store, [by_path[p] for p in paths if p in by_path], [broken[p] for p in paths if p in broken],
                   dry_run)


def prune_runs(root: str | Path | None, *, failed: bool = False, older_than: str | None = None,
               stack: str | None = None, filters: Filters | None = None, unreadable: bool = False,
               dry_run: bool = False) -> Removal:
    """Remove the runs matching every criterion given (filters narrow `stack`), and with `unreadable` the record
    files that cannot be read."""
    from repro.results.prune import Criteria, parse_cutoff, to_prune
    from repro.results.select import select

    filters = filters or Filters()
    store = reading_store(root)
    stack_paths = None
    if stack:
        selection = select(stack, store, filters)
        if selection.source is not store:
            raise InputError(f"--stack {stack}: give a stack name, hash or manifest file of {store.root}")
        stack_paths = frozenset(s.path for s in selection.summaries)
    elif not filters.empty:
        raise InputError("the filters (--model, --batch, ...) narrow --stack; give --stack too")
    before = parse_cutoff(older_than, datetime.now(timezone.utc)) if older_than else None
    criteria = Criteria(failed=failed, before=before, stack_paths=stack_paths, unreadable=unreadable)
    runs, files = to_prune(store.summaries() if criteria.selects_runs else [], store.broken(), criteria)
    return _remove(store, runs, files, dry_run)
