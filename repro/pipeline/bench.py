"""`repro bench`: run a sweep of points on an inventory's hosts and store one record per run.

    stack (gate) -> points (launch.points) -> per point: place -> plan (runtime, launcher, workload)
    -> run (scheduler + runtime) -> collect (launch.collect) -> store

A failed point is stored as failed with its reason and the sweep goes on; Ctrl-C stores the interrupted
point as failed and stops, keeping everything already measured. `--resume` re-runs only points (and
repeats) of the same sweep that are missing or failed.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from repro.errors import HostError, InputError, Interrupted
from repro.hosts.inventory import Host, Inventory
from repro.hosts.remote import preflight
from repro.launch import collect, diagnose
from repro.launch.conditions import Sampler
from repro.launch.expect import sweep_expectation
from repro.launch.launchers import LAUNCHERS, for_backend
from repro.launch.nccl_files import point_dir
from repro.launch.placement import Placement, place
from repro.launch.plan import LaunchPlan, PlanContext
from repro.launch.points import SweepSpec, expand, point_key, sweep_id
from repro.launch.runtimes import RUNTIMES, JobInterrupted, Outcome, Runtime, RuntimeReport, create
from repro.launch.runtimes.watch import Echo
from repro.launch.schedulers import SCHEDULERS, Scheduler, given_options, options_of
from repro.manifest import LoadedStack
from repro.manifest.frameworks import FRAMEWORKS, Framework
from repro.pipeline.gate import admit
from repro.pipeline.stage import safe_call
from repro.results import steady
from repro.results.metrics import for_storage
from repro.results.provenance import HostFacts, ImageLock
from repro.results.record import RunRecord, Settings, StackRef, SweepRef, new_id
from repro.results.redact import redact_tree
from repro.results.store import Store, inventory_key
from repro.results.threads import threads_warning
from repro.workloads._common import step_of

INTERRUPTED = "interrupted (Ctrl-C, or the terminal or a service manager stopped repro)"
PROBE_AFTER_FAILURE_S = 5.0
FAILURE_LINES = 5  # of the launcher's output, shown under a failed point (all of the tail is in the record)


@dataclass(frozen=True)
class BenchOptions:
    """How to run the sweep (what to run is a SweepSpec)."""

    runtime: str | None = None  # a registered runtime; None: host for local-only inventories, else docker
    launcher: str | None = None  # a registered launcher; None: the one the point's Horovod controller needs
    scheduler: str = "direct"
    repeats: int = 1
    timeout: float = 1800.0
    resume: bool = False
    dry_run: bool = False
    warmup: str = steady.FIXED  # the window stored figures use (--warmup); the warm-up warnings speak of it
    site: dict[str, Any] = field(default_factory=dict)  # batch site settings given as flags, by inventory variable
    verbose: bool = False  # -v: each point's command lines and the workload's own output as it runs


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


STEP_LINE_EVERY_S = 10.0  # a training step's progress line in a log: one per this many seconds (and the last)


class LineProgress:
    """Progress as plain lines on stderr (logs, CI); the CLI shows a live bar on terminals instead."""

    def __init__(self, write: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.clock = clock
        self.step_shown = -STEP_LINE_EVERY_S

    def status(self, text: str) -> None:
        """What is happening before the points run (checking hosts, probing their software)."""
        self.write(text)

    def message(self, text: str) -> None:
        step = step_of(text)
        if step is not None and step[2] and step[0] < step[1]:  # training steps: a line every few seconds
            if self.clock() - self.step_shown < STEP_LINE_EVERY_S:
                return
            self.step_shown = self.clock()
        self.write(text)

    def running(self, n: int, total: int, label: str, where: str) -> None:
        self.write(f"{label}: running on {where}")

    def finished(self, n: int, total: int, label: str, summary: str) -> None:
        self.write(f"{label}: {summary}")


def _progress(progress: object) -> LineProgress:
    if progress is None:
        return LineProgress()
    if callable(progress) and not hasattr(progress, "running"):
        return LineProgress(progress)  # a plain callable that takes lines
    return progress  # type: ignore[return-value]


def choose_runtime(inventory: Inventory, requested: str | None) -> str:
    """The runtime to use: the one asked for (checked), else host for a local inventory, else docker."""
    name = requested or ("host" if inventory.local_only else "docker")
    RUNTIMES.get(name)
    return name


@dataclass(frozen=True)
class Sweep:
    """Everything decided before any host is touched."""

    id: str
    points: list[Settings]
    placements: dict[int, tuple[Placement, ...]]  # workers -> placement, computed once
    runtime: str
    image: ImageLock | None
    image_ref: str | None  # the tag to run (or, in a dry run without a lock, the tag `repro up` would build)
    facts: dict[str, HostFacts]
    scheduler: Scheduler = field(default_factory=lambda: SCHEDULERS.get("direct"))  # configured for this sweep
    inventory: str | None = None  # the inventory file, as given (kept in each record's SweepRef)
    expect: dict[str, str] = field(default_factory=dict)  # the paths NCCL must take: the stack's and inventory's
    framework: str | None = None  # the stack's framework: it picks a workload family's program

    def launcher(self, options: BenchOptions, point: Settings) -> str:
        """The launcher of a point: the one asked for, else the scheduler's, else the one its controller needs."""
        if options.launcher or self.scheduler.launcher:
            return options.launcher or self.scheduler.launcher  # type: ignore[return-value]
        framework = _framework(point.workload, self.framework)
        own = framework.default_launcher if framework is not None and point.backend is None else None
        return own or for_backend(point.backend)

    def plan(self, point: Settings, ctx: PlanContext) -> LaunchPlan:
        """A point's plan, as the scheduler makes it (a batch job's script; by default the runtime's, pure)."""
        return self.scheduler.plan(point, self.placements[point.workers], self.runtime, ctx)

    def context(self, loaded: LoadedStack, options: BenchOptions, point: Settings, run_id: str) -> PlanContext:
        stack = loaded.stack
        # pass the HCAs into the containers where the inventory says so or `repro prepare` found some
        infiniband = any(p.host.infiniband or bool(self.facts.get(p.host.name)
                         and self.facts[p.host.name].pci.mellanox) for p in self.placements[point.workers])
        python = f"python{stack.python.split('.')[0]}" if RUNTIMES.get(self.runtime).needs_image else None
        return PlanContext(run_id=run_id, stack_env=dict(stack.env), gpu=stack.gpu, image=self.image_ref,
                           ssh_port=stack.container.ssh_port, python=python, infiniband=infiniband,
                           launcher=self.launcher(options, point), framework=stack.framework,
                           nccl_dir=point_dir(point, gpu=stack.gpu, run_id=run_id, framework=stack.framework))


def plan_sweep(loaded: LoadedStack, inventory: Inventory, spec: SweepSpec, options: BenchOptions,
               store: Store) -> Sweep:
    """Points, placements, runtime and image of a sweep: every input checked before anything starts."""
    points = expand(spec, loaded.stack)  # InputError for a workload without a program for the stack's framework
    runtime = choose_runtime(inventory, options.runtime)
    if options.launcher:
        LAUNCHERS.get(options.launcher)
    scheduler = configured(options, inventory)
    placements = {w: place(inventory, w) for w in sorted({p.workers for p in points})}
    stack = loaded.stack
    expect = sweep_expectation(stack.expect.model_dump() if stack.expect else None, gpu=stack.gpu, stack=stack.name,
                               inventory=inventory, hosts=[p.host for p in placements[max(placements)]])
    image = ref = None
    if RUNTIMES.get(runtime).needs_image:
        image = store.lock(loaded.hash)
        if image is not None:
            ref = image.tag
        elif options.dry_run:
            from repro.image.build import default_options, plan_build

            ref = plan_build(loaded, default_options(), check_inputs=False).tag  # what `repro up` would build
        else:
            from repro.image.lock import read_lock

            image = read_lock(store, loaded)  # ImageError naming `repro up`
    sid = sweep_id(loaded.hash, inventory_key(inventory), points, options.repeats)
    sweep = Sweep(sid, points, placements, runtime, image, ref, store.facts(inventory), scheduler, inventory.path,
                  expect, loaded.stack.framework)
    for launcher in {sweep.launcher(options, p) for p in points}:
        scheduler.check(runtime, launcher, spec.backends)
    return sweep


def _framework(workload: str, pinned: str | None) -> Framework | None:
    """The plug-in of the framework a workload runs on with a stack pinning `pinned` (None: it needs none)."""
    from repro.launch.workloads import WORKLOADS

    return FRAMEWORKS.get(pinned) if pinned and WORKLOADS.get(workload).spec.frameworks else None


def runtime_backend(point: Settings, spec: SweepSpec, loaded: LoadedStack) -> str:
    """What the runtime checks the hosts for: Horovod's controller, the backend of a framework's own
    communication library (a workload's dist_backend; `auto` is the framework's rule for the stack), or nothing ('')
    for a workload without a framework (the probe needs no Horovod controller and no torch.distributed backend)."""
    framework = _framework(point.workload, loaded.stack.framework)
    if framework is None:
        return ""
    auto = framework.auto_backend(loaded.stack.gpu)
    if auto is not None:
        chosen = str(point.extra.get("dist_backend") or "auto")
        return chosen if chosen != "auto" else auto
    return spec.backends[0] if spec.backends else "mpi"


def stack_backend(loaded: LoadedStack) -> str:
    """What the stack's own workload (benchmark.workload) needs with its defaults: Horovod's mpi controller, the
    backend the framework's `auto` rule picks, or nothing (`repro prepare --check-only --stack S` checks that)."""
    framework = _framework(loaded.stack.benchmark.workload, loaded.stack.framework)
    if framework is None:
        return ""
    auto = framework.auto_backend(loaded.stack.gpu)
    return auto if auto is not None else "mpi"


def configured(options: BenchOptions, inventory: Inventory) -> Scheduler:
    """The scheduler named in the options, with the site's settings where it takes them (InputError otherwise)."""
    scheduler = SCHEDULERS.get(options.scheduler)
    given = given_options(options.site)
    takes = {o.variable for o in scheduler.options}
    foreign = sorted(set(given) - takes)
    if foreign:
        owners = {o.variable: (o.flag, name) for name in SCHEDULERS.names() for o in options_of(name)}
        flags = ", ".join(owners.get(v, (v, ""))[0] for v in foreign)
        theirs = sorted({owners[v][1] for v in foreign if v in owners})
        raise InputError(f"{flags}: site settings of --scheduler {' or '.join(theirs) or '?'}; --scheduler "
                         f"{options.scheduler} takes " + (", ".join(o.flag for o in scheduler.options) or "none"),
                         hint=f"use --scheduler {theirs[0]}" if theirs else "")
    return scheduler.configure(inventory, given, options.timeout)


def bench(loaded: LoadedStack | Sequence[LoadedStack], inventory: Inventory, spec: SweepSpec, options: BenchOptions,
          store: Store, progress: object = None) -> BenchResult:
    """Run (or, with dry_run, plan) every point of the sweep; returns the records stored.

    With several stacks the sweep is interleaved: each repeat of each point runs for every stack in turn
    (A B A B ...) on the same hosts, so that a shared machine's drift falls on every stack alike; the records
    of one turn share a `pair` id that `repro compare` pairs them by.
    `progress` gets message/running/finished calls (see LineProgress); a plain callable gets lines.
    """
    progress = _progress(progress)
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
        return _run_sweeps(runs, options, progress)


def admitted_sweeps(loaded: LoadedStack | Sequence[LoadedStack], inventory: Inventory, spec: SweepSpec,
                    options: BenchOptions, store: Store) -> tuple[list[LoadedStack], list[Sweep]]:
    """The stacks (each admitted by the gate) and their planned sweeps; interleaved stacks must sweep the same
    points."""
    stacks = [loaded] if isinstance(loaded, LoadedStack) else list(loaded)
    for one in stacks:
        admit(one, action="launched")
    same = [one for one in stacks if sum(other.hash == one.hash for other in stacks) > 1]
    if same:  # their runs would share sweep and stack ids: compare could not tell them apart
        raise InputError(f"{' and '.join(one.file or one.stack.name for one in same)} have the same content (stack "
                         f"hash {same[0].hash}): interleaving a stack with itself measures nothing twice",
                         hint="for an A/A check, make the copies differ harmlessly, e.g. an `env:` entry each")
    sweeps = [plan_sweep(one, inventory, spec, options, store) for one in stacks]
    if len({tuple((p.workload, p.workers) for p in sw.points) for sw in sweeps}) > 1:
        raise InputError("interleaved stacks must sweep the same points (workload and worker counts, in order)",
                         hint="give every stack the same --workload/--model/--batch-size/... flags explicitly")
    return stacks, sweeps


def run_order(stacks: Sequence[LoadedStack], sweeps: Sequence[Sweep], repeats: int) -> list[str]:
    """For a dry run, one line per planned (point, stack), in the order the plans are listed: which stack and
    point it is, and where its runs fall in the sweep (interleaved: each repeat runs every stack in turn)."""
    total = len(sweeps[0].points) * repeats * len(stacks)
    lines = []
    for i in range(len(sweeps[0].points)):
        for k, one in enumerate(stacks):
            where = [i * repeats * len(stacks) + r * len(stacks) + k + 1 for r in range(repeats)]
            file = f" ({one.file})" if one.file else ""
            turn = (f"; in each of its {repeats} repeat(s) it runs {_ordinal(k + 1)} of {len(stacks)} stacks "
                    f"({' then '.join(s.stack.name for s in stacks)}), back to back on the same hosts"
                    if len(stacks) > 1 else "")
            lines.append(f"# stack {one.stack.name}{file}, point {i + 1} of {len(sweeps[0].points)}: runs "
                         f"{', '.join(map(str, where))} of {total}{turn}")
    return lines


def _ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def start_runs(stacks: Sequence[LoadedStack], sweeps: Sequence[Sweep], inventory: Inventory, spec: SweepSpec,
               options: BenchOptions, store: Store, progress: LineProgress) -> list[_Run]:
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
    progress: LineProgress
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


def _run_sweeps(runs: list[_Run], options: BenchOptions, progress: LineProgress) -> BenchResult:
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
