"""Schedulers: who starts the processes of a point.

    @SCHEDULERS.register("direct", instance=True,
                         help="repro starts each point itself, over SSH on the inventory's hosts")
    class Direct(Scheduler):
        def check(self, runtime, launcher, backends) -> None: ...
        def execute(self, plan, runtime, timeout, progress=None) -> Outcome: ...

`direct` runs each point itself over SSH on the inventory's hosts (the runtime sets up, launches and
cleans up). `slurm` submits each point as a batch job and lets Slurm choose the nodes (see
repro/launch/schedulers/slurm.py). `kubernetes` makes each point a Trainer v2 TrainJob or an MPIJob, checked
offline and run through kubectl (repro/launch/schedulers/kubernetes.py, docs/kubernetes.md).

The base class `Scheduler` lists every member the pipeline uses, with its default; a registered scheduler must
derive from it (checked at registration), and a name that looks like a misspelt member is refused when the
class is made. Adding one is a class plus a registration; `repro bench --scheduler NAME` then offers it.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from repro.errors import InputError
from repro.launch.bases import refuse_misspelt
from repro.registry import Registry

if TYPE_CHECKING:
    from repro.hosts.inventory import Host, Inventory
    from repro.launch.placement import Placement
    from repro.launch.plan import LaunchPlan, PlanContext
    from repro.launch.runtimes import Outcome, Runtime, RuntimeReport
    from repro.results.provenance import HostFacts
    from repro.results.record import Settings


@dataclass(frozen=True)
class SiteOption:
    """One site setting of a scheduler, as a workload declares its options: the inventory variable that holds it
    for a cluster, and the `repro bench` flag that overrides it for one sweep (one CLI group per scheduler).

    The scheduler's `configure` gets the given flags keyed by `variable`; `repeat`: the flag may be given several
    times (a tuple of values).
    """

    variable: str  # inventory variable, e.g. repro_slurm_partition
    flag: str  # e.g. --partition
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    repeat: bool = False


class Scheduler(ABC):
    """Who starts a point's processes: every member the pipeline calls, with its default."""

    name: ClassVar[str]
    options: ClassVar[tuple[SiteOption, ...]] = ()  # its site settings (configure gets the given ones)
    launcher: ClassVar[str | None] = None  # its default launcher (slurm: srun); None: the point's controller's
    # True: a batch system chooses the nodes. The scheduler then prepares them itself (`prepare`), and the pipeline
    # neither checks nor samples them over SSH, nor probes them after a failure (they need not answer SSH).
    batch: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        refuse_misspelt(cls, Scheduler)
        if cls.batch and cls.prepare is Scheduler.prepare:
            raise TypeError(f"{cls.__qualname__} is a batch scheduler but has no prepare()")

    def configure(self, inventory: Inventory, flags: Mapping[str, Any], timeout: float) -> Scheduler:
        """This scheduler for one sweep, with the site's settings checked: `flags` holds the given `options`, by
        variable (default: it takes none)."""
        return self

    @abstractmethod
    def check(self, runtime: str, launcher: str, backends: tuple[str, ...] = ("mpi",)) -> None:
        """Refuse, before anything runs, a runtime, launcher or controller this scheduler cannot run."""

    def plan(self, point: Settings, placement: tuple[Placement, ...], runtime: str, ctx: PlanContext) -> LaunchPlan:
        """A point's plan (pure; default: the runtime's)."""
        from repro.launch.runtimes import plan_point

        return plan_point(point, placement, runtime, ctx)

    def prepare(self, runtime: Runtime, hosts: list[Host], *, backend: str, keep_facts: Callable[[str, HostFacts], Any],
                launcher: str, progress: Callable[[str], None]) -> RuntimeReport:
        """Before the first point of a batch scheduler: reach the nodes its own way, check them, and hand each
        node's facts to `keep_facts(host, facts)` (the pipeline stores them). A scheduler that is not `batch` is
        never asked: the pipeline checks the hosts over SSH."""
        raise NotImplementedError(f"the {self.name} scheduler reaches its hosts over SSH (the pipeline prepares them)")

    @abstractmethod
    def execute(self, plan: LaunchPlan, runtime: Runtime, timeout: float,
                progress: Callable[[str], None] | None = None) -> Outcome:
        """Run one planned point to its end."""


def _check(item: object) -> None:
    if not isinstance(item, Scheduler):
        raise TypeError(f"a scheduler must be an instance of repro.launch.schedulers.Scheduler, not {item!r}")


SCHEDULERS: Registry[Scheduler] = Registry("scheduler", on_add=_check)


@SCHEDULERS.register("direct", instance=True,
                     help="repro starts each point itself, over SSH on the inventory's hosts")
class Direct(Scheduler):
    """No batch system: the runtime runs the plan on the hosts directly."""

    name = "direct"

    def check(self, runtime: str, launcher: str, backends: tuple[str, ...] = ()) -> None:
        """Refuse runtimes and launchers that only work inside a batch job."""
        from repro.launch.launchers import LAUNCHERS
        from repro.launch.runtimes import RUNTIMES

        for kind, name, batch_only in (("runtime", runtime, RUNTIMES.get(runtime).batch_only),
                                       ("launcher", launcher, LAUNCHERS.get(launcher).batch_only)):
            if batch_only:
                raise InputError(f"the {name} {kind} runs inside a batch job only",
                                 hint="use --scheduler slurm with an inventory of the cluster's nodes")

    def execute(self, plan: LaunchPlan, runtime: Runtime, timeout: float,
                progress: Callable[[str], None] | None = None) -> Outcome:
        return runtime.run(plan, timeout, progress)


def options_of(name: str) -> tuple[SiteOption, ...]:
    """A scheduler's site options; for a built-in, from the light module that declares them (the class's `options`
    is that same tuple: tests/unit/test_scheduler_bases.py), so that `repro bench --help` does not import it."""
    if name in _OPTIONS_AT:
        module, _, attr = _OPTIONS_AT[name].partition(":")
        return getattr(importlib.import_module(module), attr)
    return SCHEDULERS.get(name).options


def given_options(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The site settings actually given (a flag left out is None, a repeatable one left out is empty)."""
    return {k: v for k, v in flags.items() if v not in (None, "", ())}


_OPTIONS_AT = {"slurm": "repro.launch.schedulers.slurm_options:OPTIONS",
               "kubernetes": "repro.launch.schedulers.kube_options:OPTIONS"}

SCHEDULERS.lazy("slurm", "repro.launch.schedulers.slurm:Slurm", instance=True,
                help="each point is a Slurm job (sbatch), submitted on repro_slurm_submit_host and followed "
                "with squeue/scontrol; Slurm chooses the nodes")
SCHEDULERS.lazy("kubernetes", "repro.launch.schedulers.kubernetes:Kubernetes", instance=True,
                help="each point is a Trainer v2 TrainJob (or an MPIJob, repro_k8s_kind), checked offline against "
                "the CRDs' types and rules, created and followed with kubectl; Kubernetes chooses the nodes")
