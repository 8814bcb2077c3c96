"""Runtimes: the software environment a point's ranks run in, and how it is set up and torn down.

    @RUNTIMES.register("docker")
    class DockerRuntime:
        needs_image = True
        @classmethod
        def plan(cls, point, placement, ctx) -> LaunchPlan: ...      # pure
        def __init__(self, stack, image): ...
        @classmethod
        def job(cls, point, placement, ctx, nodes) -> JobStep: ...  # pure: the ranks inside a batch job
        def prepare(self, hosts, backend, via=None, progress=None) -> RuntimeReport: ...  # checks first
        def cleanup_stale(self, hosts) -> list[str]: ...            # what an interrupted run left behind
        def run(self, plan, timeout, progress=None) -> Outcome: ...  # run one point, always clean up

`plan` and `run` are how the `direct` scheduler runs a point over SSH; `job` is how a batch scheduler
(Slurm) runs it: the runtime says how each rank's command runs in its environment on a node the batch
system chose, and what the job script does around it (a JobStep; rendered, never run, by the runtime).
`prepare` reaches the hosts through `via` (a callable giving a Remote-like object per host: SSH by
default, `srun` on that node under Slurm). A runtime with `batch_only = True` has no `direct` form.

Built in: `host` (the hosts' own TensorFlow/Horovod/MPI, checked against the stack), `docker` (a
worker container from the stack's image on every host), and for batch jobs `charliecloud` (ch-run of
the image converted to a directory), `pyxis` (srun --container-image) and `apptainer` (apptainer exec
of a SIF). Adding one is a class plus a registration.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from repro.registry import Registry

if TYPE_CHECKING:
    from repro.hosts.inventory import Host
    from repro.launch.placement import Placement
    from repro.launch.plan import LaunchPlan, PlanContext
    from repro.manifest.schema import Stack
    from repro.manifest.software import Software
    from repro.results.provenance import ImageLock
    from repro.results.record import BatchJob, Settings


@dataclass(frozen=True)
class Outcome:
    """How a point ended."""

    stdout: str
    stderr: str
    returncode: int | None
    duration_s: float
    failure: str | None = None
    cleanup_pending: tuple[str, ...] = ()
    job: BatchJob | None = None  # the batch job that ran the point, when a batch scheduler did (RunRecord.batch)
    placement: tuple[Placement, ...] | None = None  # where the ranks ran, when the batch system chose the nodes
    # the ranks' NCCL files, read back (repro.launch.nccl_files); None: the point did not use NCCL
    nccl_log: str | None = None


class JobInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) while a batch job ran: the scheduler cancelled the job; `job` is its record part."""

    def __init__(self, job: BatchJob | None, message: str = "interrupted; the batch job was cancelled") -> None:
        super().__init__(message)
        self.job = job


@dataclass(frozen=True)
class JobStep:
    """How a runtime runs a point's ranks inside a batch job (pure; the scheduler renders it into the script).

    Every rank runs `command`: the workload's argv in the runtime's environment (`ch-run IMAGE -- python ..`,
    or a shell function of `functions` that enters a container). `functions` are bash function definitions the
    script exports to the job's tasks; `setup` and `teardown` are script lines run before the launcher and
    when the script ends (also after scancel or the time limit); `launcher_options` go to the launcher's own
    command inside the job (pyxis' --container-image to srun); `launchers` names the launchers the runtime works
    with in a job (None: any).
    """

    command: list[str]
    env: dict[str, str]
    functions: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    teardown: tuple[str, ...] = ()
    launcher_options: tuple[str, ...] = ()
    launchers: tuple[str, ...] | None = None
    notes: tuple[str, ...] = ()  # comment lines for the script's reader (how to make the image, ...)


# A path setting of slurmd as this node expands it (%n: node name, %h: host name), for runtimes that bind the
# PMIx server's directories (SlurmdSpoolDir/pmix.JOB.STEP, TmpFS/spmix_appdir_*) into a container.
NODE_PATH_FUNCTION = """\
# A slurm.conf path as this node expands it (%n: node name, %h: host name).
repro_node_path() {
  local value
  value=$(scontrol show config | sed -n "s/^$1 *= *//p")
  value=${value//%n/$SLURMD_NODENAME}
  printf '%s\\n' "${value//%h/$(hostname)}"
}"""


def rank_wrapper(function: str, comment: str, pmix_binds: str, extra: list[str], run: str) -> str:
    """A bash function that runs one rank (`"$@"`) in a container: `run` holds `"${binds[@]}"`, the binds of the
    PMIx server's directories of the node (`pmix_binds`; srun --mpi=pmix only: under mpirun, whose daemons set
    OMPI_COMM_WORLD_RANK, /tmp is shared) and `extra` ones (already shell words)."""
    more = f"\n  binds+=({' '.join(extra)})" if extra else ""
    note = "\n".join(f"# {line}" for line in textwrap.wrap(comment, 98))
    return f"""\
{note}
{function}() {{
  local binds=()
  if [[ -n ${{PMIX_SERVER_TMPDIR:-}} && -n ${{SLURM_STEP_ID:-}} && -z ${{OMPI_COMM_WORLD_RANK:-}} ]]; then
    binds+=({pmix_binds})
  fi{more}
  exec {run}
}}"""


@dataclass(frozen=True)
class RuntimeReport:
    """What a runtime checked before the sweep: the image it runs, or the software found on each host."""

    image: ImageLock | None = None
    host_image_ids: dict[str, str] = field(default_factory=dict)
    host_software: dict[str, Software] = field(default_factory=dict)


# How a runtime reaches a host for its checks: host -> a context manager with Remote's `run` (repro.hosts.remote).
Via = Callable[["Host"], Any]


class Runtime(Protocol):
    """What the schedulers call of a runtime class; every member is required (checked at registration)."""

    name: ClassVar[str]
    needs_image: ClassVar[bool]
    batch_only: ClassVar[bool]  # True: no direct form (runs inside a batch job only)
    batch_launchers: ClassVar[tuple[str, ...] | None]  # the launchers it works with in a batch job (None: any)

    @classmethod
    def plan(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext) -> LaunchPlan: ...

    @classmethod
    def job(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext,
            nodes: tuple[Host, ...]) -> JobStep: ...

    def prepare(self, hosts: list[Host], backend: str, via: Via | None = None,
                progress: Callable[[str], None] | None = None) -> RuntimeReport: ...

    def cleanup_stale(self, hosts: list[Host]) -> list[str]: ...

    def run(self, plan: LaunchPlan, timeout: float, progress: Callable[[str], None] | None = None) -> Outcome: ...

    def node_command(self, argv: list[str], host: Host) -> list[str] | None:
        """`argv` as it runs in this runtime's environment on a batch node (None: cannot be run there alone)."""
        ...


_MEMBERS = ("name", "needs_image", "batch_only", "batch_launchers", "plan", "job", "prepare", "cleanup_stale", "run",
            "node_command")


def _check(cls: type) -> None:
    """A runtime is registered with every member of the Runtime protocol (a misspelt one is refused here)."""
    missing = [m for m in _MEMBERS if not hasattr(cls, m)]
    if missing:
        raise TypeError(f"runtime {getattr(cls, '__name__', cls)!r} lacks {', '.join(missing)} (see Runtime)")


RUNTIMES: Registry[type] = Registry("runtime", on_add=_check)


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
RUNTIMES.lazy("charliecloud", "repro.launch.runtimes.charliecloud:CharliecloudRuntime",
              help="ch-run of the stack's image converted to a directory (--scheduler slurm)")
RUNTIMES.lazy("pyxis", "repro.launch.runtimes.hpc:PyxisRuntime",
              help="srun --container-image (pyxis/enroot) of the stack's image as a squashfs file (--scheduler "
              "slurm; rendered and golden-tested, not run on repro's test machines)")
RUNTIMES.lazy("apptainer", "repro.launch.runtimes.hpc:ApptainerRuntime",
              help="apptainer exec of the stack's image as a SIF file (--scheduler slurm; rendered and "
              "golden-tested, not run on repro's test machines)")
