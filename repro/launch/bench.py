"""`repro bench`: run a sweep of points on an inventory's hosts and store one record per run.

Stages per point: plan (pure) -> run (runtime) -> collect (pure) -> store. A failed point is stored
as failed with its reason and the sweep goes on; Ctrl-C stores the interrupted point as failed and
stops, keeping everything already measured. `--resume` re-runs only points (and repeats) of the same
sweep that are missing or failed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from repro.errors import CompatibilityError, Interrupted
from repro.hosts.inventory import Inventory
from repro.launch import collect
from repro.launch.plan import LaunchPlan, place, plan_point
from repro.launch.points import SweepSpec, expand, point_key, sweep_id
from repro.launch.runtime import DockerRuntime, HostRuntime
from repro.manifest.resolve import LoadedStack
from repro.results.record import RunRecord, Settings, StackRef, SweepRef, new_id
from repro.results.store import Store, inventory_key


@dataclass(frozen=True)
class BenchOptions:
    """How to run the sweep (what to run is a SweepSpec)."""

    runtime: str | None = None  # docker | host; None: host for local-only inventories, else docker
    repeats: int = 1
    timeout: float = 1800.0
    resume: bool = False
    dry_run: bool = False


@dataclass(frozen=True)
class BenchResult:
    """What a sweep produced."""

    sweep_id: str
    records: list[RunRecord] = field(default_factory=list)
    skipped: int = 0
    plans: list[LaunchPlan] = field(default_factory=list)
    cleanup_pending: tuple[str, ...] = ()

    @property
    def failed(self) -> list[RunRecord]:
        return [r for r in self.records if r.status != "ok"]


class LineProgress:
    """Progress as plain lines on stderr (logs, CI); the CLI shows a live bar on terminals instead."""

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))

    def message(self, text: str) -> None:
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
    if requested:
        return requested
    return "host" if inventory.local_only else "docker"


def _done(store: Store, stack_hash: str, sweep: str) -> set[tuple[str, int]]:
    done = set()
    for r in store.records(stack_hash=stack_hash):
        if r.sweep and r.sweep.id == sweep and r.status == "ok":
            done.add((r.sweep.point, r.sweep.repeat))
    return done


def _describe(point: Settings, repeat: int, repeats: int) -> str:
    what = point.workload + (f" {point.model}" if point.model else "")
    batch = f" batch/worker={point.batch_per_worker}" if point.batch_per_worker else ""
    extra = f" backend={point.backend}" if point.workload == "allreduce" else ""
    xla = " xla" if point.xla else ""
    rep = f" repeat {repeat + 1}/{repeats}" if repeats > 1 else ""
    return f"{what} workers={point.workers}{batch}{xla}{extra}{rep}"


def bench(loaded: LoadedStack, inventory: Inventory, spec: SweepSpec, options: BenchOptions, store: Store,
          progress: object = None) -> BenchResult:
    """Run (or, with dry_run, plan) every point of the sweep; returns the records stored.

    `progress` gets message/running/finished calls (see LineProgress); a plain callable gets lines.
    """
    progress = _progress(progress)
    from repro.manifest.compat import check

    errors = [f for f in check(loaded) if f.severity == "error"]
    if errors:
        raise CompatibilityError(f"{loaded.file}: the stack has compatibility errors; `repro validate` shows them")
    stack = loaded.stack
    points = expand(spec, stack)
    runtime_name = choose_runtime(inventory, options.runtime)
    sid = sweep_id(loaded.hash, inventory_key(inventory), points, options.repeats)
    image, lock = (None, None)
    if runtime_name == "docker":
        if options.dry_run and store.lock(loaded.hash) is None:
            from repro.image.build import plan_build

            image = plan_build(loaded, check_inputs=False).tag  # what `repro up` would build
        else:
            from repro.image.lock import image_tag, read_lock

            lock = read_lock(store, loaded)
            image = image_tag(lock)
    ssh_port = stack.container.ssh_port
    facts = store.facts(inventory)
    # pass the HCAs into the containers where the inventory says so or `repro prepare` found some
    infiniband = any(bool(h.vars.get("repro_infiniband"))
                     or bool((facts.get(h.name) or {}).get("pci", {}).get("mellanox")) for h in inventory.hosts)
    plan_args = dict(runtime=runtime_name, stack_env=dict(stack.env), gpu=stack.gpu, image=image, ssh_port=ssh_port,
                     python=f"python{stack.python.split('.')[0]}" if runtime_name == "docker" else None,
                     infiniband=infiniband)
    for p in points:  # fail fast on points that do not fit, before touching any host
        place(inventory, p.workers)

    if options.dry_run:
        plans = [plan_point(p, inventory, run_id="dry-run", **plan_args) for p in points]
        return BenchResult(sid, plans=plans)

    hosts = [pl.host for pl in place(inventory, max(p.workers for p in points))]
    runtime = DockerRuntime(stack, image) if runtime_name == "docker" else HostRuntime(stack)
    removed = runtime.cleanup_stale(hosts)
    if removed:
        progress.message(f"removed {len(removed)} container(s) left by an earlier run: {', '.join(removed)}")
    found = runtime.prepare(hosts, backend=spec.backends[0] if spec.backends else "mpi")
    if runtime_name == "host":
        lock = found
    stack_ref = StackRef(name=stack.name, hash=loaded.hash, image_hash=loaded.image_hash, file=loaded.file,
                         manifest=stack.model_dump(mode="json"))
    done = _done(store, loaded.hash, sid) if options.resume else set()
    records: list[RunRecord] = []
    pending: list[str] = []
    skipped = 0
    total = len(points) * options.repeats
    n = 0
    for point in points:
        for repeat in range(options.repeats):
            n += 1
            label = f"[{n}/{total}] {_describe(point, repeat, options.repeats)}"
            if (point_key(point), repeat) in done:
                skipped += 1
                progress.finished(n, total, label, "done earlier, skipped (--resume)")
                continue
            run_id = new_id().split("-")[-1]
            plan = plan_point(point, inventory, run_id=run_id, **plan_args)
            sweep = SweepRef(id=sid, point=point_key(point), repeat=repeat)
            ctx = collect.Context(stack_ref, lock, sweep, runtime_name, facts)
            progress.running(n, total, label, ", ".join(f"{p.host.name}x{p.ranks}" for p in plan.placement))
            try:
                outcome = runtime.run(plan, options.timeout)
            except KeyboardInterrupt:
                rec = collect.record(point, plan, ctx, stdout="", stderr="", returncode=None, duration_s=0.0,
                                     failure="interrupted (Ctrl-C, or the terminal or a service manager stopped repro)")
                store.put(rec)
                records.append(rec)
                progress.finished(n, total, label, f"interrupted; {len([r for r in records if r.status == 'ok'])} "
                                  f"point(s) kept in {store.root}; `repro bench ... --resume` completes the sweep")
                raise Interrupted("benchmark interrupted; results gathered so far are stored") from None
            rec = collect.record(point, plan, ctx, stdout=outcome.stdout, stderr=outcome.stderr,
                                 returncode=outcome.returncode, duration_s=outcome.duration_s,
                                 failure=outcome.failure)
            store.put(rec)
            records.append(rec)
            pending += [h for h in outcome.cleanup_pending if h not in pending]
            progress.finished(n, total, label, _summary(rec))
            if outcome.cleanup_pending:
                progress.message(f"{label}: could not clean up on {', '.join(outcome.cleanup_pending)} "
                                 "(unreachable); the next run removes what is left there")
    return BenchResult(sid, records, skipped, cleanup_pending=tuple(pending))


def _summary(rec: RunRecord) -> str:
    from repro.results.metrics import throughput

    if rec.status != "ok":
        return f"FAILED after {rec.duration_s:.1f} s: {rec.failure}"
    if rec.settings.workload == "cnn":
        ips = throughput(rec)
        return f"{ips:.1f} images/sec ({rec.duration_s:.1f} s)" if ips else f"ok ({rec.duration_s:.1f} s)"
    if rec.settings.workload == "tta":
        m = rec.metrics
        if m.get("reached"):
            return f"reached {m.get('target')} in {m.get('time_to_accuracy_s', 0):.1f} s, {m.get('epochs')} epochs"
        return f"did not reach {m.get('target')} (top-1 {m.get('final_top1')}) in {m.get('epochs')} epochs"
    return f"ok ({rec.duration_s:.1f} s)"
