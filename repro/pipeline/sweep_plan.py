"""`repro bench`, before anything runs: a sweep's points, placements, runtime, launcher, scheduler and image, every
input checked (pure but for reading the store's lock and facts). Interleaved stacks are admitted and planned
together and must sweep the same points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from repro.errors import InputError
from repro.hosts.inventory import Inventory
from repro.launch.expect import sweep_expectation
from repro.launch.launchers import LAUNCHERS, for_backend
from repro.launch.nccl_files import point_dir
from repro.launch.placement import Placement, place
from repro.launch.plan import LaunchPlan, PlanContext
from repro.launch.points import SweepSpec, expand, sweep_id
from repro.launch.runtimes import RUNTIMES
from repro.launch.schedulers import SCHEDULERS, Scheduler, given_options, options_of
from repro.manifest import LoadedStack
from repro.manifest.frameworks import FRAMEWORKS, Framework
from repro.pipeline import counterparts
from repro.pipeline.gate import admit
from repro.results import steady
from repro.results.provenance import HostFacts, ImageLock
from repro.results.record import Settings
from repro.results.store import Store, inventory_key


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
    # across frameworks each stack runs its counterpart of the workload (repro.pipeline.counterparts)
    sweeps = [plan_sweep(one, inventory, own, options, store)
              for one, own in zip(stacks, counterparts.per_stack(spec, stacks), strict=True)]
    counterparts.check_same(stacks, [sw.points for sw in sweeps])
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
