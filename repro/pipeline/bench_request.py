"""`repro bench` from paths: every value checked, the stacks, the inventory and the store read, then the sweep run
(or planned), or A/B pairs run until a verdict; the planned files written (--emit), the end-of-sweep table built
and the figure drawn. The CLI parses the flags into a BenchRequest and renders the BenchReport.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repro.errors import InputError, ReproError
from repro.formats import Document
from repro.hosts.inventory import Inventory, load_inventory
from repro.launch.plan import LaunchPlan
from repro.launch.points import SweepSpec
from repro.manifest import LoadedStack, load_stack
from repro.pipeline.bench import bench
from repro.pipeline.running import BenchResult
from repro.pipeline.sweep_plan import BenchOptions
from repro.pipeline.verdict import VerdictOptions, VerdictResult, dry_run_lines, until_verdict, verdict_options
from repro.progress import Lines, Progress
from repro.results.store import Store

__all__ = ["BenchOptions", "BenchReport", "BenchRequest", "SweepSpec", "run_bench"]


@dataclass(frozen=True)
class BenchRequest:
    """`repro bench` as given: stack manifests, inventory and store paths, what to sweep, how, and what to show."""

    stacks: tuple[str, ...]
    hosts: str
    spec: SweepSpec
    options: BenchOptions
    store: str | None = None
    emit: str | None = None  # with a dry run: write each plan's files there
    plot: str | None = None
    baseline_workers: int | None = None
    link_gbps: float | None = None
    until_verdict: bool = False  # A/B pairs until the sequential rule decides, within these budgets:
    max_pairs: int | None = None
    max_time: float | None = None  # seconds of wall time
    threshold: float | None = None
    confidence: float | None = None


@dataclass(frozen=True)
class BenchReport:
    """What `repro bench` did: the sweep's result or the verdict, a dry run's plans, files written, table, figure."""

    stacks: tuple[str, ...]  # the stacks' names, in the order given
    store_root: Path
    result: BenchResult | None = None
    verdict: VerdictResult | None = None
    planned: tuple[str, ...] = ()  # a dry run: every plan's lines (which stack and point, then its commands)
    emitted: tuple[Path, ...] = ()
    document: Document | None = None  # the end-of-sweep table: the runs made, or after --resume the whole sweep
    plot: Path | None = None  # the figure written
    plot_error: ReproError | None = None  # why it could not be drawn (raised once the table is printed)


def run_bench(request: BenchRequest, progress: Progress | Lines | None = None) -> BenchReport:
    """Check, read, run (or plan) and report one `repro bench` (module docstring)."""
    verdict = _verdict_options(request)
    if request.plot:
        from repro.results.plots import check_target

        check_target(request.plot)  # a plot that cannot be written is refused before the sweep, not after it
    loaded = [load_stack(s) for s in request.stacks]
    inventory, store = load_inventory(request.hosts), Store(request.store)
    names = tuple(one.stack.name for one in loaded)
    if verdict is not None:
        if len(loaded) != 2:
            raise InputError(f"--until-verdict compares two stacks; {len(loaded)} given",
                             hint="give --stack OLD --stack NEW")
        if request.options.dry_run:
            planned = _verdict_plans(request, verdict, loaded, inventory, store, progress)
            return BenchReport(names, store.root, planned=planned)
        found = until_verdict(loaded, inventory, request.spec, request.options, store, verdict, progress)
        return BenchReport(names, store.root, verdict=found)
    result = bench(loaded if len(loaded) > 1 else loaded[0], inventory, request.spec, request.options, store, progress)
    if request.options.dry_run:
        planned = tuple(line for i, plan in enumerate(result.plans) for line in [*result.labels[i:i + 1],
                                                                                   *plan.describe()])
        emitted = _emit(result.plans, request.emit) if request.emit else ()
        return BenchReport(names, store.root, result, planned=planned, emitted=emitted)
    return _sweep_report(request, names, store.root, result)


def _verdict_options(request: BenchRequest) -> VerdictOptions | None:
    """The sequential rule and budget of --until-verdict, checked; None without it."""
    r = request
    if not r.until_verdict:
        if r.max_pairs or r.max_time:
            raise InputError("--max-pairs and --max-time are budgets of --until-verdict", hint="add --until-verdict")
        return None
    return verdict_options(max_pairs=r.max_pairs, max_time=r.max_time, threshold=r.threshold,
                           confidence=r.confidence, warmup=r.options.warmup)


def _verdict_plans(request: BenchRequest, verdict: VerdictOptions, loaded: list[LoadedStack], inventory: Inventory,
                   store: Store, progress: Progress | Lines | None) -> tuple[str, ...]:
    """--until-verdict --dry-run: the rule, then the one point's plan for A and for B."""
    result = bench(loaded, inventory, request.spec, request.options, store, progress)
    if len(result.plans) != 2:
        raise InputError(f"--until-verdict decides one point at a time; these flags make {len(result.plans) // 2}",
                         hint="give one value each of --workers, --model, --batch-size, ...")
    lines = dry_run_lines(loaded, verdict.rule)
    for i, plan in enumerate(result.plans):
        lines += [f"# {'AB'[i]}: {loaded[i].stack.name}", *plan.describe()]
    return tuple(lines)


def _emit(plans: Sequence[LaunchPlan], folder: str) -> tuple[Path, ...]:
    """Write every plan's files (--emit DIR); the paths written, in order."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for index, plan in enumerate(plans, 1):
        for name, text in plan.files().items():
            name = f"{index:02d}-{name}" if len(plans) > 1 else name  # a dry run's points share a run id
            (out / name).write_text(text, encoding="utf-8")
            written.append(out / name)
    return tuple(written)


def _sweep_report(request: BenchRequest, names: tuple[str, ...], root: Path, result: BenchResult) -> BenchReport:
    """The end-of-sweep table of every stack's records (after --resume: of the whole sweep) and the figure."""
    from repro.compare.kind import plot_records, sweep_document

    records = list(result.sweep_records or result.records)
    if not records:
        return BenchReport(names, root, result)
    shown = {"warmup": request.options.warmup, "baseline_workers": request.baseline_workers,
             "link": request.link_gbps}
    document = sweep_document(records, **shown)
    drawn, error = None, None
    if request.plot and any(r.status == "ok" for r in records):
        try:
            drawn = plot_records([r for r in records if r.status == "ok"], request.plot, **shown)
        except ReproError as exc:  # the sweep's table is still printed; then this error, as before
            error = exc
    return BenchReport(names, root, result, document=document, plot=drawn, plot_error=error)
