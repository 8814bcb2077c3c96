"""Turn what a point printed into a RunRecord (pure).

The workload's parser (repro.launch.workloads) reads its output: for repro's own workloads the one
`REPRO_RESULT <json>` line of rank 0 (docs/design.md). Ranks report their addresses; repro maps them back
to inventory hosts, since hosts on one machine (or containers with host networking) can share a hostname.
The record's settings are the point's, completed with what the workload reports it ran with; a workload
that ran something other than the point asked for fails the record rather than mislabel it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from repro.launch.diagnose import rank_host, tail
from repro.launch.placement import Placement
from repro.launch.plan import LaunchPlan
from repro.launch.runtimes import Outcome, RuntimeReport
from repro.launch.workloads import WORKLOADS
from repro.results.fabric import unmet
from repro.results.metrics import for_storage
from repro.results.nccl import parse as parse_nccl
from repro.results.provenance import HostFacts
from repro.results.record import (
    BatchJob,
    HostRef,
    RankResult,
    RunRecord,
    Settings,
    StackRef,
    SweepRef,
    new_id,
    now_iso,
)
from repro.secrets import redact_argv, redact_env, redact_text, redact_tree

# common settings a workload reports under these names in its result's `settings`
REPORTED = ("model", "batch_per_worker", "precision", "xla", "data_format", "warmup_steps", "steps")
LOG_LINES = 40


@dataclass(frozen=True)
class Context:
    """What a record carries besides the measurement: provenance of the run."""

    stack: StackRef
    report: RuntimeReport
    sweep: SweepRef
    runtime: str
    facts: dict[str, HostFacts] = field(default_factory=dict)
    # the paths NCCL must take (repro.launch.expect: the stack's and the inventory's); None: the stack's `expect`
    expect: dict[str, str] | None = None


def _host_of(addresses: list[str], placement: tuple[Placement, ...]) -> str:
    by_address = {p.host.address: p.host.name for p in placement}
    for a in addresses:
        if a in by_address:
            return by_address[a]
    if all(p.host.local for p in placement):
        return placement[0].host.name
    return ""


def _ranks(result: dict[str, Any], placement: tuple[Placement, ...]) -> list[RankResult]:
    ranks = []
    for r in result.get("ranks", []):
        addresses = [str(a) for a in r.get("addresses", [])]
        rank = int(r.get("rank", 0))
        # programs that do not report their addresses: the rank's place in mpirun's fill order
        host = _host_of(addresses, placement) or (rank_host(rank, placement) or "")
        ranks.append(RankResult(
            rank=rank, local_rank=int(r.get("local_rank", 0)), host=host,
            hostname=str(r.get("hostname", "")), addresses=addresses, device=str(r.get("device", "CPU")),
            warmup_times=[float(x) for x in r.get("warmup_times", [])],
            step_times=[float(x) for x in r.get("step_times", [])],
            items_per_step=int(r.get("items_per_step", 0)),
        ))
    return ranks


def reported_settings(point: Settings, resolved: dict[str, Any]) -> tuple[Settings, str | None]:
    """The point completed with the workload's report of what it ran, and a mismatch if it ran something else."""
    spec = WORKLOADS.get(point.workload).spec
    update: dict[str, Any] = {}
    for name in REPORTED:
        if spec.by_setting(name) is None or resolved.get(name) is None:
            continue
        asked, ran = getattr(point, name), resolved[name]
        if asked is None:
            update[name] = ran
        elif str(asked) != str(ran):
            return point, f"the workload ran {name}={ran}, but the point asked for {asked}"
    if "batch_per_worker" in update and spec.batch == "per_worker":
        update["global_batch"] = update["batch_per_worker"] * point.workers
    return point.model_copy(update=update), None


def rank_mismatch(point: Settings, result: dict[str, Any]) -> str | None:
    """Why a result of repro's own workloads does not describe the point's workers: another count of ranks (a
    launcher that left every rank alone in a world of one, or started more processes), else None. Programs
    repro does not ship (tf_cnn_benchmarks) report their ranks their own way and are not judged by this."""
    if not WORKLOADS.get(point.workload).spec.runs_program:
        return None
    ranks = len(result.get("ranks") or [])
    size = (result.get("world") or {}).get("size")
    if ranks == point.workers and size in (None, point.workers):
        return None
    return (f"the workload reported {ranks} rank(s) in a world of {size}, but the point has {point.workers} "
            f"worker(s): the launcher did not start the job the point describes")


def _base(point: Settings, placement: tuple[Placement, ...], ctx: Context) -> dict[str, Any]:
    hosts = [HostRef(name=p.host.name, address=p.host.address, slots=p.ranks, gpus=p.host.gpus) for p in placement]
    names = {h.name for h in hosts}
    return dict(
        id=new_id(), created=now_iso(), origin="bench", stack=ctx.stack, image=ctx.report.image,
        host_software={k: v for k, v in ctx.report.host_software.items() if k in names}, sweep=ctx.sweep,
        runtime=ctx.runtime, hosts=hosts, facts={k: v for k, v in ctx.facts.items() if k in names},
        settings=point.model_copy(update={"hosts": len(placement)}))


def failed(point: Settings, placement: tuple[Placement, ...], ctx: Context, reason: str, *,
           plan: LaunchPlan | None = None, job: BatchJob | None = None) -> RunRecord:
    """A record of a point that did not run to the end (planning failed, Ctrl-C; `job`: the cancelled job)."""
    extra = {"command": redact_argv(plan.launch_argv), "env": redact_env(plan.env)} if plan else {}
    return RunRecord(status="failed", failure=reason, duration_s=0.0, batch=_redacted(job),
                     **_base(point, placement, ctx),
                     **extra)


def fabric_failure(ctx: Context, nccl_log: str | None):
    """The parsed NCCL facts of a run (None: no NCCL log was collected) and why they miss the expected paths."""
    fabric = parse_nccl(nccl_log) if nccl_log else None
    expect = (ctx.stack.manifest.get("expect") or {}) if ctx.expect is None else ctx.expect
    why = unmet({k: v for k, v in expect.items() if v}, fabric) if isinstance(expect, dict) else None
    whose = "the stack expects" if ctx.expect is None else "the sweep expects (stack and inventory)"
    return fabric, (f"NCCL took another path than {whose}: {why}" if why else None)


def record(point: Settings, plan: LaunchPlan, ctx: Context, outcome: Outcome,
           diagnose: Callable[[Outcome], str] | None = None, *, nccl_log: str | None = None) -> RunRecord:
    """A record of one run of a point: ok with the workload's data, or failed with the reason.

    `diagnose` says why a run that produced no result failed (repro.launch.diagnose, after probing the hosts);
    `nccl_log`: the ranks' NCCL_DEBUG_FILE files, concatenated (GPU runs), kept parsed as the record's `fabric`.
    """
    failure = outcome.failure
    result = WORKLOADS.get(point.workload).parse(outcome.stdout) if failure is None else None
    if failure is not None or result is None:
        code = "no exit code" if outcome.returncode is None else f"exit {outcome.returncode}"
        failure = diagnose(outcome) if diagnose else (failure or f"the workload printed no result ({code})")
    base = _base(point, plan.placement, ctx)
    resolved = dict((result or {}).get("settings") or {})
    if result is not None:
        settings, mismatch = reported_settings(base["settings"], resolved)
        base["settings"] = settings
        failure = failure or mismatch or rank_mismatch(point, result)
    fabric, off_path = fabric_failure(ctx, nccl_log) if nccl_log is not None else (None, None)
    failure = failure or off_path
    return for_storage(RunRecord(
        status="failed" if failure else "ok", failure=redact_text(failure) if failure else None, **base,
        ranks=_ranks(result, plan.placement) if result else [],
        command=redact_argv(plan.launch_argv), env=redact_env(plan.env),
        resolved=redact_tree({k: v for k, v in resolved.items() if not k.startswith("_")}),
        software=dict(result.get("software", {})) if result else {},
        world=dict(result.get("world", {})) if result else {},
        metrics=dict(result.get("metrics", {})) if result else {},
        reported_images_per_sec=(result or {}).get("reported_images_per_sec"),
        duration_s=round(outcome.duration_s, 3), log_tail=redact_text(tail(outcome.stdout, outcome.stderr, LOG_LINES)),
        batch=_redacted(outcome.job), fabric=fabric,
    ))


def _redacted(job: BatchJob | None) -> BatchJob | None:
    """A scheduler's job with every secret out of its untyped part (a typed part redacts its own fields)."""
    if job is None or not isinstance(job.detail, dict):
        return job
    return job.model_copy(update={"detail": redact_tree(job.detail)})
