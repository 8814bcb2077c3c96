"""Runtimes: the software environment a point's ranks run in, and how it is set up and torn down.

    @RUNTIMES.register("docker")
    class DockerRuntime(Runtime):                                  # defaults for what it does not give
        needs_image = True
        image_based = True                                         # a container engine runs the image (pods too)
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

A toy runtime needs `name`, `plan` and `run` (tests/unit/test_extensions.py); every other member has a default.

Built in: `host` (the hosts' own TensorFlow/Horovod/MPI, checked against the stack), `docker` (a
worker container from the stack's image on every host), and for batch jobs `charliecloud` (ch-run of
the image converted to a directory), `pyxis` (srun --container-image) and `apptainer` (apptainer exec
of a SIF). Adding one is a class plus a registration.
"""

from __future__ import annotations

import textwrap
from abc import ABC
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from repro.errors import LaunchError
from repro.launch.bases import refuse_misspelt
from repro.progress import Lines
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


class Runtime(ABC):
    """What the schedulers call of a runtime class: every member, with its default. A runtime gives `plan` and
    `run` (the direct form, over SSH) or, with `batch_only = True`, `job` (inside a batch job); either or both."""

    name: ClassVar[str]
    needs_image: ClassVar[bool] = False  # True: it runs the stack's image (`repro up` built and locked it)
    # True: its ranks run in containers a container engine starts from the stack's image, which is what a
    # Kubernetes pod is (the kubernetes scheduler accepts only such a runtime)
    image_based: ClassVar[bool] = False
    batch_only: ClassVar[bool] = False  # True: no direct form (runs inside a batch job only)
    batch_launchers: ClassVar[tuple[str, ...] | None] = None  # the launchers it works with in a batch job (None: any)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        refuse_misspelt(cls, Runtime)

    def __init__(self, stack: Stack, image: ImageLock | None = None) -> None:
        self.stack = stack
        self.image = image

    @classmethod
    def plan(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext) -> LaunchPlan:
        """The launch plan of one point (pure; default: none, the runtime runs inside batch jobs only)."""
        raise LaunchError(f"the {cls.name} runtime runs inside batch jobs only", hint="use --scheduler slurm")

    @classmethod
    def job(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext,
            nodes: tuple[Host, ...]) -> JobStep:
        """How each rank runs inside a batch job (pure; default: it has no batch form)."""
        raise LaunchError(f"the {cls.name} runtime does not run inside batch jobs",
                          hint="choose another --runtime for --scheduler slurm")

    def prepare(self, hosts: list[Host], backend: str, via: Via | None = None,
                progress: Lines | None = None) -> RuntimeReport:
        """What it checks on the hosts before the sweep (default: nothing)."""
        return RuntimeReport(image=self.image)

    def cleanup_stale(self, hosts: list[Host]) -> list[str]:
        """What an interrupted run left behind, removed (default: nothing to remove)."""
        return []

    def run(self, plan: LaunchPlan, timeout: float, progress: Lines | None = None) -> Outcome:
        """Run one point and always clean up (default: none, the runtime runs inside batch jobs only)."""
        raise LaunchError(f"the {self.name} runtime runs inside batch jobs only", hint="use --scheduler slurm")

    def node_command(self, argv: list[str], host: Host) -> list[str] | None:
        """`argv` as it runs in this runtime's environment on a batch node (None: cannot be run there alone)."""
        return None


def _check(cls: type) -> None:
    """A runtime is a Runtime subclass with a form to run in: `plan` and `run`, or (batch_only) `job`."""
    if not (isinstance(cls, type) and issubclass(cls, Runtime)):
        raise TypeError(f"runtime {getattr(cls, '__name__', cls)!r} must be a subclass of "
                        "repro.launch.runtimes.Runtime (every member the schedulers call, with its default)")
    if cls.batch_only and cls.job.__func__ is Runtime.job.__func__:  # type: ignore[attr-defined]
        raise TypeError(f"runtime {cls.__qualname__} is batch-only but has no job()")
    if not cls.batch_only and (cls.plan.__func__ is Runtime.plan.__func__  # type: ignore[attr-defined]
                               or cls.run is Runtime.run):
        raise TypeError(f"runtime {cls.__qualname__} has no plan() and run() (its direct form); one that runs "
                        "inside batch jobs only says batch_only = True and gives job()")


RUNTIMES: Registry[type[Runtime]] = Registry("runtime", on_add=_check)


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
