"""Schedulers: who starts a point's processes on the hosts.

    @SCHEDULERS.register("direct")
    @SCHEDULERS.register("direct", instance=True,
                     help="repro starts each point itself, over SSH on the inventory's hosts")
class Direct:
        def execute(self, plan, runtime, timeout, progress=None) -> Outcome: ...

`direct` runs each point itself over SSH on the inventory's hosts (the runtime sets up, launches and
cleans up). A batch scheduler (Slurm) instead submits each point as a job into an allocation. Adding
one is a class plus a registration; `repro bench --scheduler NAME` then offers it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

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

    def execute(self, plan: LaunchPlan, runtime: Runtime, timeout: float,
                progress: Callable[[str], None] | None = None) -> Outcome:
        return runtime.run(plan, timeout, progress)

