"""`repro bench`, running: each point of the planned sweeps on its hosts (checked first, the runtime prepared,
stale leftovers removed), one record stored per run, a failed point stored with its reason and the sweep going
on; Ctrl-C stores the interrupted point and stops. `--resume` skips the points (and repeats) of the same sweep
already stored as successful.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from repro.errors import HostError, Interrupted
from repro.hosts.inventory import Host, Inventory
from repro.hosts.remote import preflight
from repro.launch import collect, diagnose
from repro.launch.conditions import Sampler
from repro.launch.plan import LaunchPlan
from repro.launch.points import SweepSpec, point_key
from repro.launch.runtimes import JobInterrupted, Outcome, Runtime, RuntimeReport, create
from repro.launch.runtimes.watch import Echo
from repro.manifest import LoadedStack
from repro.pipeline.stage import safe_call
from repro.pipeline.sweep_plan import BenchOptions, Sweep, runtime_backend
from repro.progress import Progress
from repro.results import steady
from repro.results.metrics import for_storage
from repro.results.record import RunRecord, Settings, StackRef, SweepRef, new_id
from repro.results.store import Store
from repro.results.threads import threads_warning
from repro.secrets import redact_tree

INTERRUPTED = "interrupted (Ctrl-C, or the terminal or a service manager stopped repro)"
PROBE_AFTER_FAILURE_S = 5.0
FAILURE_LINES = 5  # of the launcher's output, shown under a failed point (all of the tail is in the record)


@dataclass(frozen=True)
class BenchResult:
    """What a sweep produced."""

    sweep_id: str
    records: list[RunRecord] = field(default_factory=list)
    skipped: int = 0
    plans: list[LaunchPlan] = field(default_factory=list)
    cleanup_pending: tuple[str, ...] = ()
    labels: list[str] = field(default_factory=list)  # dry run: which stack and point each plan is, and its turn
    # --resume: every run of the sweep, those stored earlier included (per point and repeat: its successful run,
    # else its latest failed one), so that the final table covers the whole sweep
    sweep_records: list[RunRecord] = field(default_factory=list)

    @property
    def failed(self) -> list[RunRecord]:
        return [r for r in self.records if r.status != "ok"]

def start_runs(stacks: Sequence[LoadedStack], sweeps: Sequence[Sweep], inventory: Inventory, spec: SweepSpec,
               options: BenchOptions, store: Store, progress: Progress) -> list[_Run]:
    """Every stack's runtime, prepared on the sweep's hosts (checked once), ready to run points."""
    runs: list[_Run] = []
    for one, sw in zip(stacks, sweeps, strict=True):
        runtime = create(sw.runtime, one.stack, sw.image)
        hosts = [pl.host for pl in sw.placements[max(sw.placements)]]
        backend = runtime_backend(sw.points[0], spec, one)
        if sw.scheduler.batch:  # a batch scheduler reaches the nodes its own way (srun), and gathers their facts
            report = sw.scheduler.prepare(runtime, hosts, backend=backend,
                                          keep_facts=partial(store.put_facts, inventory),
                                          launcher=sw.launcher(options, sw.points[0]), progress=progress.message)
            sw = replace(sw, facts=store.facts(inventory))
        else:
            names = ", ".join(h.name for h in hosts)
            if not runs:  # the same hosts for every stack: checked once
                progress.status(f"checking SSH to {names}")
                check_hosts(hosts)
            removed = runtime.cleanup_stale(hosts)
            if removed:
                progress.message(f"removed {len(removed)} container(s) left by an earlier run: {', '.join(removed)}")
            progress.status(f"{sw.runtime} runtime on {names}, stack {one.stack.name}: {_preparing(runtime, one)}")
            report = runtime.prepare(hosts, backend=backend, progress=progress.message)
        runs.append(_Run(one, sw, options, store, runtime, report, progress))
    return runs


def conditions_sampler(runs: Sequence[_Run]) -> contextlib.AbstractContextManager[Sampler | None]:
    """One Sampler of the sweep's hosts for every stack's runs (direct scheduler only: a batch scheduler's
    nodes need not answer SSH, and Slurm keeps its own accounting)."""
    first = runs[0]
    if first.sweep.scheduler.batch:
        return contextlib.nullcontext()
    hosts = [pl.host for pl in first.sweep.placements[max(first.sweep.placements)]]
    return Sampler(hosts, gpu=first.loaded.stack.gpu)


FRAMEWORK_WORDS = {"tensorflow": {"software": "TensorFlow, Horovod and MPI", "framework": "TensorFlow"},
                   "pytorch": {"software": "PyTorch and MPI", "framework": "torch"}}


def _preparing(runtime: Runtime, loaded: LoadedStack | None = None) -> str:
    """What the runtime's prepare() does, in its own words (the first sentence of its docstring, its {software}
    and {framework} said for the stack's framework), for the line a sweep shows while it waits for it (the host
    runtime's software probe takes up to a minute)."""
    doc = " ".join((type(runtime).prepare.__doc__ or "").split())
    framework = getattr(loaded.stack, "framework", "tensorflow") if loaded is not None else "tensorflow"
    words = FRAMEWORK_WORDS.get(framework, FRAMEWORK_WORDS["tensorflow"])
    for key, value in words.items():
        doc = doc.replace("{" + key + "}", value)
    sentence = doc.split(". ")[0].split("; ")[0].rstrip(".")
    return (sentence[:1].lower() + sentence[1:]) if sentence else "checking what it needs on the hosts"


def check_hosts(hosts: list[Host]) -> None:
    """Every host of the sweep answers SSH with the expected host key, checked at once before anything starts;
    HostError naming each host that does not and why."""
    problems = preflight(hosts)
    if problems:
        address = {h.name: h.address for h in hosts}
        lines = [f"{name} ({address[name]}): {why}" for name, why in problems.items()]
        raise HostError(f"cannot start the sweep: {len(problems)} of {len(hosts)} hosts are not usable; nothing was "
                        "started on any host\n  " + "\n  ".join(lines), host=next(iter(problems)))


def _done(store: Store, stack_hash: str, sweep: str) -> set[tuple[str, int]]:
    return {(r.sweep.point, r.sweep.repeat) for r in store.records(stack_hash=stack_hash)
            if r.sweep and r.sweep.id == sweep and r.status == "ok"}


@dataclass
class _Run:
    """The state of a running sweep: what it needs for every point, and what it produced so far."""

    loaded: LoadedStack
    sweep: Sweep
    options: BenchOptions
    store: Store
    runtime: Runtime
    report: RuntimeReport
    progress: Progress
    records: list[RunRecord] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    sampler: Sampler | None = None  # the sweep's conditions sampler (None: not sampled)

    @property
    def stack_ref(self) -> StackRef:
        s = self.loaded.stack
        return StackRef(name=s.name, hash=self.loaded.hash, image_hash=self.loaded.image_hash, file=self.loaded.file,
                        manifest=redact_tree(s.model_dump(mode="json")))

    def keep(self, rec: RunRecord) -> None:
        self.store.put(rec)
        self.records.append(rec)

    def diagnose(self, plan: LaunchPlan, outcome: Outcome) -> str:
        """Why the point failed: probe every host of it first, so that a lost host is named whoever noticed
        (not under a batch scheduler: its nodes need not answer SSH, and Slurm said which node died)."""
        unreachable = {} if outcome.job is not None else preflight([p.host for p in plan.placement],
                                                                   timeout=PROBE_AFTER_FAILURE_S)
        return diagnose.explain(placement=plan.placement, stdout=outcome.stdout, stderr=outcome.stderr,
                                returncode=outcome.returncode, failure=outcome.failure, unreachable=unreachable,
                                launcher=plan.launcher_name)

    def warnings(self, rec: RunRecord) -> tuple[str, ...]:
        """The warm-up warnings of a successful throughput run, for the steps its figures use (--warmup); none for
        other kinds (an all-reduce or time-to-accuracy run has no steady state of step times to reach)."""
        from repro.compare.kind import kind_of_record

        if rec.status != "ok":
            return ()
        return kind_of_record(rec).warnings(rec, self.options.warmup)

    def point(self, point: Settings, repeat: int, label: str, n: int, total: int, *, pair: str | None = None) -> None:
        """Plan, run, collect and store one repeat of one point (Ctrl-C: stored as interrupted, then raised)."""
        placement = self.sweep.placements[point.workers]
        ctx = collect.Context(self.stack_ref, self.report,
                              SweepRef(id=self.sweep.id, point=point_key(point), repeat=repeat, pair=pair,
                                       inventory=self.sweep.inventory),
                              self.sweep.runtime,
                              self.sweep.facts, expect=self.sweep.expect)
        run_id = new_id().split("-")[-1]
        planned = safe_call("planning", partial(self.sweep.plan, point,
                                                self.sweep.context(self.loaded, self.options, point, run_id)))
        if planned.value is None:
            rec = collect.failed(point, placement, ctx, planned.failure or "planning failed")
            self.keep(rec)
            self.progress.finished(n, total, label, _summary(rec))
            return
        plan = planned.value
        self.progress.running(n, total, label, ", ".join(f"{p.host.name}x{p.ranks}" for p in placement))
        if self.options.verbose:  # what runs where, as --dry-run prints it
            for line in plan.describe()[1:]:
                self.progress.message(f"    $ {line}")
        sampling = self.sampler.run([p.host.name for p in placement]) if self.sampler else contextlib.nullcontext()

        def shown(text: str) -> None:
            self.progress.message(f"    {text}")

        def output(text: str) -> None:
            self.progress.message(f"    | {text}")

        try:
            with sampling as taken:
                outcome = self.sweep.scheduler.execute(
                    plan, self.runtime, self.options.timeout, Echo(shown, output) if self.options.verbose else shown)
        except KeyboardInterrupt as exc:  # a batch scheduler cancelled the job first (its record rides along)
            job = exc.job if isinstance(exc, JobInterrupted) else None
            self.keep(collect.failed(point, placement, ctx, INTERRUPTED, plan=plan, job=job))
            kept = sum(1 for r in self.records if r.status == "ok")
            self.progress.finished(n, total, label, f"interrupted; {kept} point(s) kept in {self.store.root}; "
                                   "`repro bench ... --resume` completes the sweep")
            raise Interrupted("benchmark interrupted; results gathered so far are stored") from None
        if outcome.placement is not None:  # the batch system chose the nodes: the record names those
            plan = replace(plan, placement=outcome.placement)
        rec = collect.record(point, plan, ctx, outcome, diagnose=partial(self.diagnose, plan),
                             nccl_log=outcome.nccl_log)
        if self.options.warmup != steady.FIXED:  # the figure stored is the one the sweep's table shows
            rec = for_storage(rec, self.options.warmup)
        if taken is not None and taken.conditions is not None:
            rec = rec.model_copy(update={"conditions": taken.conditions})
            judged = threads_warning(rec)
            if judged:  # kept in the record, and printed with the run's other warnings below
                rec = rec.model_copy(update={"conditions": taken.conditions.model_copy(update={"warnings": [judged]})})
        self.keep(rec)
        self.pending += [h for h in outcome.cleanup_pending if h not in self.pending]
        if outcome.cleanup_pending:
            self.progress.message(f"{label}: could not clean up on {', '.join(outcome.cleanup_pending)} "
                                  "(unreachable); the next run removes what is left there")
        self.progress.finished(n, total, label, _summary(rec))
        for warning in (*self.warnings(rec), *(rec.conditions.warnings if rec.conditions else ())):
            self.progress.message(f"    warning: {warning}")
        if rec.status != "ok" and rec.log_tail:
            last = rec.log_tail.splitlines()[-FAILURE_LINES:]
            self.progress.message("    " + "\n    ".join(last))


def run_sweeps(runs: list[_Run], options: BenchOptions, progress: Progress) -> BenchResult:
    """Every point and repeat, each run for every stack in turn (one stack: the plain sweep)."""
    done = [_done(r.store, r.loaded.hash, r.sweep.id) if options.resume else set() for r in runs]
    group = "-".join(r.sweep.id.removeprefix("sw-")[:6] for r in runs) if len(runs) > 1 else None
    skipped, n, total = 0, 0, len(runs[0].sweep.points) * options.repeats * len(runs)
    point: Settings
    for index in range(len(runs[0].sweep.points)):
        for repeat in range(options.repeats):
            pair = f"{group}-{index}-{repeat}" if group else None
            for run, finished in zip(runs, done, strict=True):
                point = run.sweep.points[index]
                n += 1
                who = f"{run.loaded.stack.name} " if len(runs) > 1 else ""
                label = f"[{n}/{total}] {who}{_describe(point, repeat, options.repeats)}"
                if (point_key(point), repeat) in finished:
                    skipped += 1
                    progress.finished(n, total, label, "done earlier, skipped (--resume)")
                    continue
                run.point(point, repeat, label, n, total, pair=pair)
    records = [rec for run in runs for rec in run.records]
    pending = tuple(dict.fromkeys(h for run in runs for h in run.pending))
    whole = [rec for run in runs for rec in sweep_records(run.store, run.loaded.hash, run.sweep.id)] \
        if options.resume else []
    return BenchResult(runs[0].sweep.id, records, skipped, cleanup_pending=pending, sweep_records=whole)


def sweep_records(store: Store, stack_hash: str, sweep: str) -> list[RunRecord]:
    """The runs of one stack's sweep in the store: per (point, repeat) its latest successful run, else its latest
    failed one; in the order they were made."""
    best: dict[tuple[str, int], RunRecord] = {}
    for r in sorted(store.records(stack_hash=stack_hash), key=lambda r: (r.created, r.id)):
        if r.sweep is None or r.sweep.id != sweep:
            continue
        key = (r.sweep.point, r.sweep.repeat)
        if key not in best or r.status == "ok" or best[key].status != "ok":
            best[key] = r
    return sorted(best.values(), key=lambda r: (r.created, r.id))


def _describe(point: Settings, repeat: int, repeats: int) -> str:
    what = point.workload + (f" {point.model}" if point.model else "")
    batch = f" batch/worker={point.batch_per_worker}" if point.batch_per_worker else ""
    extra = f" backend={point.backend}" if point.workload == "allreduce" else ""
    xla = " xla" if point.xla else ""
    threads = f" threads={point.threads}" if point.threads else ""
    rep = f" repeat {repeat + 1}/{repeats}" if repeats > 1 else ""
    return f"{what} workers={point.workers}{batch}{threads}{xla}{extra}{rep}"


def _summary(rec: RunRecord) -> str:
    from repro.compare.kind import KINDS
    from repro.launch.workloads import WORKLOADS

    if rec.status != "ok":
        return f"FAILED after {rec.duration_s or 0:.1f} s: {rec.failure}"
    kind = WORKLOADS.get(rec.settings.workload).spec.kind if rec.settings.workload in WORKLOADS else "throughput"
    return KINDS.get(kind).summary(rec) if kind in KINDS else f"ok ({rec.duration_s or 0:.1f} s)"
