"""`repro bench`: run a sweep of points on an inventory's hosts and store one record per run.

    stack (gate) -> points (launch.points) -> per point: place -> plan (runtime, launcher, workload)
    -> run (scheduler + runtime) -> collect (launch.collect) -> store

A failed point is stored as failed with its reason and the sweep goes on; Ctrl-C stores the interrupted
point as failed and stops, keeping everything already measured. `--resume` re-runs only points (and
repeats) of the same sweep that are missing or failed.

Split by what it does: planning (sweep_plan.py), running and resuming (running.py), progress lines
(progress.py); this module chains them.
"""

from __future__ import annotations

from collections.abc import Sequence

from repro.hosts.inventory import Inventory
from repro.launch.points import SweepSpec
from repro.manifest import LoadedStack
from repro.pipeline.progress import as_progress
from repro.pipeline.running import BenchResult, conditions_sampler, run_sweeps, start_runs
from repro.pipeline.sweep_plan import BenchOptions, admitted_sweeps, run_order
from repro.progress import Lines, Progress
from repro.results.store import Store


def bench(loaded: LoadedStack | Sequence[LoadedStack], inventory: Inventory, spec: SweepSpec, options: BenchOptions,
          store: Store, progress: Progress | Lines | None = None) -> BenchResult:
    """Run (or, with dry_run, plan) every point of the sweep; returns the records stored.

    With several stacks the sweep is interleaved: each repeat of each point runs for every stack in turn
    (A B A B ...) on the same hosts, so that a shared machine's drift falls on every stack alike; the records
    of one turn share a `pair` id that `repro compare` pairs them by.
    `progress` gets status/message/running/finished calls (repro.progress.Progress); a plain callable gets lines.
    """
    progress = as_progress(progress)
    stacks, sweeps = admitted_sweeps(loaded, inventory, spec, options, store)
    if options.dry_run:
        plans = [sw.plan(sw.points[i], sw.context(one, options, sw.points[i], "dry-run"))
                 for i in range(len(sweeps[0].points)) for one, sw in zip(stacks, sweeps, strict=True)]
        labels = run_order(stacks, sweeps, options.repeats) if len(stacks) > 1 else []
        return BenchResult(sweeps[0].id, plans=plans, labels=labels)
    runs = start_runs(stacks, sweeps, inventory, spec, options, store, progress)
    with conditions_sampler(runs) as sampler:
        for run in runs:
            run.sampler = sampler
        return run_sweeps(runs, options, progress)


__all__ = ["BenchOptions", "BenchResult", "bench"]
