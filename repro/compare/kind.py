"""Comparison kinds: what a family of workloads measures, and everything repro says about it.

    class Toy(Kind):
        name = "toy"
        def compare(self, pairs, old, new, options) -> KindRows: ...    # the aligned rows of `repro compare`
        def tables(self, c, part) -> tuple[Block, ...]: ...             # its part of the comparison document
        def sweep_document(self, records, **options) -> Document: ...   # the end-of-sweep report

    KINDS.add("toy", Toy())

A kind owns, for the records of its workloads: the line after a bench point (`summary`), a run's figure in a
listing (`headline`), its comparison rows (`compare`), its part of the comparison document (`tables`,
`summary_blocks`), its JSON (`data`), its figure panels (`panels`), its regression rule (`regressions`), and the
end-of-sweep document and figure (`sweep_document`, `sweep_figure`). Generic code (repro.compare.core,
render, plot, and the end-of-sweep report below) only iterates over KINDS; none names a kind.

Built in (registered by name, imported on first use, so listing them costs nothing): throughput (items/sec:
cnn, tf_cnn_benchmarks, imported logs), allreduce (per-size latency and bandwidth), tta (time to accuracy),
in repro.compare.kinds. A workload names its kind in its spec (repro.workloads.spec).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.errors import ResultsError
from repro.formats import Block, Document
from repro.registry import Registry

if TYPE_CHECKING:
    from repro.compare.align import Pair
    from repro.compare.core import Comparison
    from repro.compare.throughput import Options
    from repro.results import stats
    from repro.results.record import RunRecord


@dataclass(frozen=True)
class KindRows:
    """A kind's part of a comparison: its rows, its notes, and what it sums them up to (throughput: per model)."""

    rows: tuple[Any, ...]
    notes: tuple[str, ...] = ()
    summaries: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Panel:
    """One row of a comparison figure: draw(row, labels) fills it; speedup: the row has a second axis; title: the
    settings it shares with the others, for the figure's title; note: a line under the title (what bars mean)."""

    draw: Callable[[Any, tuple[str, str]], None]
    speedup: bool = False
    title: str = ""
    note: str = ""


class Kind(ABC):
    """The base of every comparison kind: the abstract methods must be given, the others have defaults."""

    name: str = ""
    sequential: bool = False  # its points can be decided pair by pair (`repro bench --until-verdict`)

    def summary(self, record: RunRecord) -> str:
        """The line `repro bench` prints after a successful run."""
        return f"ok ({record.duration_s or 0:.1f} s)"

    def headline(self, record: RunRecord) -> tuple[float | None, str]:
        """A run's one figure and its unit, for `repro results` listings (None: none)."""
        return None, ""

    def warnings(self, record: RunRecord, warmup: str) -> tuple[str, ...]:
        """What `repro bench` warns about a successful run's figures (throughput: a warm-up not reached)."""
        return ()

    @abstractmethod
    def compare(self, pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                options: Options) -> KindRows:
        """The aligned rows of the pairs of this kind (`old`/`new`: every record of each side)."""

    @abstractmethod
    def tables(self, c: Comparison, part: KindRows) -> tuple[Block, ...]:
        """This kind's tables in the comparison document (only called when it has rows)."""

    def summary_blocks(self, c: Comparison, part: KindRows) -> tuple[Block, ...]:
        """What follows every kind's tables (throughput: the summary per model)."""
        return ()

    def data(self, c: Comparison, part: KindRows) -> dict[str, Any]:
        """This kind's part of the comparison's JSON, as top-level keys (default: {name: its rows})."""
        return {self.name: [_plain(r) for r in part.rows]}

    def regressions(self, part: KindRows) -> tuple[Any, ...]:
        """The rows that fail `--fail-on-regression` (default: the rows whose `regression` is true)."""
        return tuple(r for r in part.rows if getattr(r, "regression", False))

    def ratios(self, part: KindRows) -> tuple[tuple[str, stats.RatioResult], ...]:
        """Each row's figure NEW/OLD oriented so that above 1 is better, with a label naming what it measures
        beyond the row's key (the reference verdict of `repro compare --reference` judges these); none: this
        kind gives no reference verdict."""
        return ()

    def unpaired(self, part: KindRows) -> bool:
        """Whether an interleaved `repro bench` would settle these rows better (they were not measured in pairs)."""
        return False

    def panels(self, c: Comparison, part: KindRows) -> tuple[Panel, ...]:
        """This kind's rows of the comparison figure (none: it is not drawn)."""
        return ()

    @abstractmethod
    def sweep_document(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                       baseline_workers: int | None = None, link: float | None = None) -> Document:
        """The end-of-sweep report of this kind's records (`repro bench`, `repro results table`)."""

    def sweep_figure(self, records: Sequence[RunRecord], *, warmup: str = "fixed",
                     baseline_workers: int | None = None, link: float | None = None) -> Any:
        """The end-of-sweep figure (a matplotlib Figure) of this kind's records."""
        raise ResultsError(f"nothing to plot: the {self.name} kind draws no figure")


def _plain(row: Any) -> Any:
    if isinstance(row, dict):
        return row
    if is_dataclass(row) and not isinstance(row, type):
        return asdict(row)
    return row


class KindRegistry(Registry[Kind]):
    """The registry of comparison kinds: it refuses what is not a Kind (before registering it), so a kind that
    misses a method fails when it is added, not when a report needs it."""

    def add(self, name: str, item: Kind, *, help: str = "") -> Kind:
        if not isinstance(item, Kind):
            raise TypeError(f"comparison kind {name!r}: expected an instance of repro.compare.kind.Kind, "
                            f"found {item!r}")
        return super().add(name, item, help=help)


KINDS = KindRegistry("comparison kind")
KINDS.lazy("throughput", "repro.compare.kinds:Throughput", instance=True,
           help="items (images) per second, with speedup and scaling efficiency")
KINDS.lazy("allreduce", "repro.compare.kinds:Allreduce", instance=True,
           help="all-reduce latency and bandwidth per message size")
KINDS.lazy("tta", "repro.compare.kinds:TimeToAccuracy", instance=True, help="time to a target validation accuracy")
KINDS.lazy("lm", "repro.compare.kinds:Transformer", instance=True,
           help="transformer training tokens/sec, with MFU and peak memory beside it")

DEFAULT = "throughput"  # the kind of a workload no spec describes (repro.workloads.catalog.kind_of)


def kind_name(record: RunRecord) -> str:
    """The name of the kind a record's workload belongs to."""
    from repro.workloads.catalog import kind_of

    return kind_of(record.settings.workload)


def kind_of_record(record: RunRecord) -> Kind:
    """The kind a record's workload belongs to."""
    return KINDS.get(kind_name(record))


def order(names: Sequence[str]) -> list[str]:
    """`names` in the order the kinds were registered (an unknown name last)."""
    known = list(KINDS.names())
    return sorted(dict.fromkeys(names), key=lambda k: known.index(k) if k in known else len(known))


# -- end-of-sweep reports, by kind ------------------------------------------------------------------

def by_kind(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    """The records of each comparison kind present, in registration order (an unknown kind last)."""
    out: dict[str, list[RunRecord]] = {}
    for rec in records:
        out.setdefault(kind_name(rec), []).append(rec)
    return {k: out[k] for k in order(list(out))}


def sweep_document(records: Sequence[RunRecord], *, warmup: str = "fixed", baseline_workers: int | None = None,
                   link: float | None = None) -> Document:
    """The end-of-sweep report of these records, by their workload's comparison kind."""
    kind = kind_of_record(records[0]) if records else KINDS.get(DEFAULT)
    return kind.sweep_document(records, warmup=warmup, baseline_workers=baseline_workers, link=link)


def results_document(records: Sequence[RunRecord], *, warmup: str = "fixed", baseline_workers: int | None = None,
                     link: float | None = None) -> Document:
    """Every kind's report of these records, one after the other (`repro results table`); json: one kind's data
    as `repro bench` writes it, several kinds' as {kind: data}."""
    docs = {kind: sweep_document(group, warmup=warmup, baseline_workers=baseline_workers, link=link)
            for kind, group in by_kind(records).items()}
    if len(docs) == 1:
        return next(iter(docs.values()))

    def data(doc: Document) -> Any:
        if doc.data is not None:
            return doc.data
        return [dict(row) for t in doc.tables for row in t.data]

    return Document(tuple(b for d in docs.values() for b in d.blocks),
                    data={kind: data(doc) for kind, doc in docs.items()})


def headline(record: RunRecord) -> tuple[float | None, str]:
    """One run's figure and its unit, for a listing (its kind's `headline`)."""
    return kind_of_record(record).headline(record)


def records_figure(records: Sequence[RunRecord], *, warmup: str = "fixed", baseline_workers: int | None = None,
                   link: float | None = None) -> Any:
    """The figure for these records, by their workload's comparison kind."""
    kind = kind_of_record(records[0]) if records else KINDS.get(DEFAULT)
    return kind.sweep_figure(records, warmup=warmup, baseline_workers=baseline_workers, link=link)


def plot_records(records: Sequence[RunRecord], path: str | Path, **options: Any) -> Path:
    """Write the records' figure to a .png or .svg file."""
    from repro.results.plots import save

    return save(records_figure(records, **options), path)
