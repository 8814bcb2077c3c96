"""Schedulers: who starts the processes of a point.

    @SCHEDULERS.register("direct", instance=True,
                         help="repro starts each point itself, over SSH on the inventory's hosts")
    class Direct:
        def execute(self, plan, runtime, timeout, progress=None) -> Outcome: ...

`direct` runs each point itself over SSH on the inventory's hosts (the runtime sets up, launches and
cleans up). `slurm` submits each point as a batch job and lets Slurm choose the nodes (see
repro/launch/schedulers/slurm.py). `kubernetes` makes each point a Trainer v2 TrainJob or an MPIJob, checked
offline and run through kubectl (repro/launch/schedulers/kubernetes.py, docs/kubernetes.md). Besides
`execute`, a scheduler may have (the pipeline uses them where present):

    launcher: str                                        # its default launcher (slurm: srun)
    def configure(self, inventory, flags, timeout) -> Scheduler   # site settings for one sweep, checked
    def check(self, runtime, launcher, backends) -> None          # refuse what cannot run, before anything
    def plan(self, point, placement, runtime, ctx) -> LaunchPlan  # pure; default: the runtime's plan
    def prepare(self, runtime, hosts, *, backend, store, inventory, launcher, progress) -> RuntimeReport

Adding one is a class plus a registration; `repro bench --scheduler NAME` then offers it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from repro.errors import InputError
from repro.registry import Registry

if TYPE_CHECKING:
    from repro.launch.plan import LaunchPlan
    from repro.launch.runtimes import Outcome, Runtime


class Scheduler(Protocol):
    name: str

    def execute(self, plan: LaunchPlan, runtime: Runtime, timeout: float,
                progress: Callable[[str], None] | None = None) -> Outcome: ...


SCHEDULERS: Registry[Scheduler] = Registry("scheduler")


@SCHEDULERS.register("direct", instance=True,
                     help="repro starts each point itself, over SSH on the inventory's hosts")
class Direct:
    """No batch system: the runtime runs the plan on the hosts directly."""

    name = "direct"

    def check(self, runtime: str, launcher: str, backends: tuple[str, ...] = ()) -> None:
        """Refuse runtimes and launchers that only work inside a batch job."""
        from repro.launch.launchers import LAUNCHERS
        from repro.launch.runtimes import RUNTIMES

        for kind, name, item in (("runtime", runtime, RUNTIMES.get(runtime)),
                                 ("launcher", launcher, LAUNCHERS.get(launcher))):
            if getattr(item, "batch_only", False):
                raise InputError(f"the {name} {kind} runs inside a batch job only",
                                 hint="use --scheduler slurm with an inventory of the cluster's nodes")

    def execute(self, plan: LaunchPlan, runtime: Runtime, timeout: float,
                progress: Callable[[str], None] | None = None) -> Outcome:
        return runtime.run(plan, timeout, progress)


SCHEDULERS.lazy("slurm", "repro.launch.schedulers.slurm:Slurm", instance=True,
                help="each point is a Slurm job (sbatch), submitted on repro_slurm_submit_host and followed "
                "with squeue/scontrol; Slurm chooses the nodes")
SCHEDULERS.lazy("kubernetes", "repro.launch.schedulers.kubernetes:Kubernetes", instance=True,
                help="each point is a Trainer v2 TrainJob (or an MPIJob, repro_k8s_kind), checked offline against "
                "the CRDs' types and rules, created and followed with kubectl; Kubernetes chooses the nodes")
