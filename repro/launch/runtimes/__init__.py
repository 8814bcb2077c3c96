"""Runtimes: the software environment a point's ranks run in, and how it is set up and torn down.

    @RUNTIMES.register("docker")
    class DockerRuntime:
        needs_image = True
        @classmethod
        def plan(cls, point, placement, ctx) -> LaunchPlan: ...      # pure
        def __init__(self, stack, image): ...
        def prepare(self, hosts, backend) -> RuntimeReport: ...     # checks before any worker starts
        def cleanup_stale(self, hosts) -> list[str]: ...            # what an interrupted run left behind
        def run(self, plan, timeout, progress=None) -> Outcome: ...  # run one point, always clean up

Built in: `host` (the hosts' own TensorFlow/Horovod/MPI, checked against the stack) and `docker` (a
worker container from the stack's image on every host). Adding one is a class plus a registration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from repro.registry import Registry

if TYPE_CHECKING:
    from repro.hosts.inventory import Host
    from repro.launch.placement import Placement
    from repro.launch.plan import LaunchPlan, PlanContext
    from repro.manifest.schema import Stack
    from repro.manifest.software import Software
    from repro.results.provenance import ImageLock
    from repro.results.record import Settings


@dataclass(frozen=True)
class Outcome:
    """How a point ended."""

    stdout: str
    stderr: str
    returncode: int | None
    duration_s: float
    failure: str | None = None
    cleanup_pending: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuntimeReport:
    """What a runtime checked before the sweep: the image it runs, or the software found on each host."""

    image: ImageLock | None = None
    host_image_ids: dict[str, str] = field(default_factory=dict)
    host_software: dict[str, Software] = field(default_factory=dict)


class Runtime(Protocol):
    name: ClassVar[str]
    needs_image: ClassVar[bool]

    @classmethod
    def plan(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext) -> LaunchPlan: ...

    def prepare(self, hosts: list[Host], backend: str) -> RuntimeReport: ...

    def cleanup_stale(self, hosts: list[Host]) -> list[str]: ...

    def run(self, plan: LaunchPlan, timeout: float, progress: Callable[[str], None] | None = None) -> Outcome: ...


RUNTIMES: Registry[type] = Registry("runtime")


def plan_point(point: Settings, placement: tuple[Placement, ...], runtime: str, ctx: PlanContext) -> LaunchPlan:
    """The launch plan of one point, built by the runtime named `runtime` (pure)."""
    return RUNTIMES.get(runtime).plan(point, placement, ctx)


def create(name: str, stack: Stack, image: ImageLock | None) -> Runtime:
    """An instance of the runtime called `name` for a stack (and its image lock, for container runtimes)."""
    return RUNTIMES.get(name)(stack, image)


RUNTIMES.lazy("host", "repro.launch.runtimes.host:HostRuntime",
              help="the hosts' own software, checked against the stack")
RUNTIMES.lazy("docker", "repro.launch.runtimes.docker:DockerRuntime",
              help="a worker container from the stack's image on every host")
