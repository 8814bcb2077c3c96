"""Turn what a point printed into a RunRecord (pure).

The workload's rank 0 prints one `REPRO_RESULT <json>` line (docs/design.md). Ranks report their
addresses; repro maps them back to inventory hosts, since hosts on one machine (or containers with
host networking) can share a hostname.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from repro.launch.plan import LaunchPlan
from repro.results.record import (
    HostRef,
    RankResult,
    RunRecord,
    Settings,
    StackRef,
    SweepRef,
    new_id,
    now_iso,
    redact_argv,
    redact_env,
)

MARKER = "REPRO_RESULT "
FORMAT = "repro.workload/1"


def find_result(stdout: str) -> dict[str, Any] | None:
    """The workload's result document from its output, or None if it printed none."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith(MARKER):
            try:
                data = json.loads(line[len(MARKER):])
            except ValueError:
                return None
            if isinstance(data, dict) and data.get("format") == FORMAT:
                return data
    return None


def _host_of(addresses: list[str], plan: LaunchPlan) -> str:
    by_address = {p.host.address: p.host.name for p in plan.placement}
    for a in addresses:
        if a in by_address:
            return by_address[a]
    if all(p.host.local for p in plan.placement):
        return plan.placement[0].host.name
    return ""


@dataclass(frozen=True)
class Context:
    """What a record carries besides the measurement: provenance of the run."""

    stack: StackRef
    lock: dict[str, Any] | None
    sweep: SweepRef
    runtime: str
    facts: dict[str, Any] = field(default_factory=dict)


def record(point: Settings, plan: LaunchPlan, ctx: Context, *, stdout: str, stderr: str, returncode: int | None,
           duration_s: float, failure: str | None = None) -> RunRecord:
    """A record of one run of a point: ok with the workload's data, or failed with the reason."""
    result = find_result(stdout) if failure is None else None
    if failure is None and result is None:
        code = "no exit code" if returncode is None else f"exit {returncode}"
        failure = f"the workload printed no result ({code})"
    hosts_used = [HostRef(name=p.host.name, address=p.host.address, slots=p.ranks, gpus=p.host.gpus)
                  for p in plan.placement]
    ranks = []
    if result:
        for r in result.get("ranks", []):
            addresses = [str(a) for a in r.get("addresses", [])]
            ranks.append(RankResult(
                rank=int(r.get("rank", 0)), local_rank=int(r.get("local_rank", 0)), host=_host_of(addresses, plan),
                hostname=str(r.get("hostname", "")), addresses=addresses, device=str(r.get("device", "CPU")),
                warmup_times=[float(x) for x in r.get("warmup_times", [])],
                step_times=[float(x) for x in r.get("step_times", [])],
                items_per_step=int(r.get("items_per_step", 0)),
            ))
    log = (stderr.strip().splitlines() + stdout.strip().splitlines())[-40:]
    return RunRecord(
        id=new_id(), created=now_iso(), status="failed" if failure else "ok", failure=failure,
        origin="bench", stack=ctx.stack, lock=ctx.lock, sweep=ctx.sweep,
        settings=point.model_copy(update={"hosts": len(plan.placement)}), runtime=ctx.runtime, hosts=hosts_used,
        ranks=ranks,
        facts={h.name: ctx.facts[h.name] for h in hosts_used if h.name in ctx.facts},
        command=redact_argv(plan.launch_argv), env=redact_env(plan.env),
        software=dict(result.get("software", {})) if result else {},
        world=dict(result.get("world", {})) if result else {},
        metrics=dict(result.get("metrics", {})) if result else {},
        duration_s=round(duration_s, 3), log_tail="\n".join(line for line in log if MARKER not in line),
    )
