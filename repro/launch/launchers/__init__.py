"""Launchers: how the worker processes of a point are started (one per rank), as an argv list.

    @LAUNCHERS.register("mpirun", instance=True)
    class Mpirun(Launcher):
        in_batch = True
        def argv(self, placement, command, env_names, *, interface, ssh, forwarded) -> list[str]: ...
        def batch_argv(self, allocation, command, env_names, *, interface) -> list[str]: ...

`argv` starts the ranks on hosts repro reaches itself (the `direct` scheduler); `batch_argv`, where a
launcher has it (`in_batch`), starts them inside a batch job's allocation, whose nodes the batch system chose
(the `slurm` scheduler): a launcher without it is refused there before anything is submitted. The base class
`Launcher` lists every member the schedulers use, with its default; a registered launcher must derive from it.

Built in: `mpirun` (Open MPI over SSH; inside an allocation, Open MPI built with Slurm support starts its
daemons through Slurm, no -H and no SSH), `gloo` (the same mpirun wrapped so that Horovod's Gloo
controller gets its rendezvous; direct only), `srun` (Slurm starts every rank and wires MPI up
through PMIx; batch only) and `torchrun` (PyTorch's per-host agent with a c10d rendezvous; both).
Adding one is a class plus a registration; `repro bench --launcher NAME` then offers it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from repro.errors import InputError
from repro.launch.bases import refuse_misspelt
from repro.registry import Registry

if TYPE_CHECKING:  # the inventory (and yaml) load only when a launcher is used, not for `repro bench --help`
    from repro.launch.placement import Placement


@dataclass(frozen=True)
class SshOptions:
    """How the launcher reaches the other hosts (the containers' sshd, or the hosts' own).

    key / known_hosts None: ssh's own (~/.ssh/config, which `repro prepare --tags ssh_trust` writes, and
    ~/.ssh/known_hosts on the launching host). Host-key checking stays on either way.
    """

    port: int
    key: str | None = None
    known_hosts: str | None = None


@dataclass(frozen=True)
class Allocation:
    """The shape of a batch job the ranks fill: counts only, since the batch system chooses the nodes.

    `tasks_per_node` is None when the ranks do not spread evenly over the nodes; `pmi` is the plugin
    `srun --mpi=` wires MPI up with (pmix, pmi2, ...).
    """

    nodes: int
    tasks: int
    tasks_per_node: int | None = None
    pmi: str = "pmix"


def allocation(placement: tuple[Placement, ...], pmi: str = "pmix") -> Allocation:
    """The allocation a placement asks for: one node per placed host, its ranks as tasks (pure)."""
    ranks = {p.ranks for p in placement}
    return Allocation(nodes=len(placement), tasks=sum(p.ranks for p in placement),
                      tasks_per_node=ranks.pop() if len(ranks) == 1 else None, pmi=pmi)


@dataclass(frozen=True)
class MpiNeed:
    """What a launcher needs of the ranks' Open MPI to start them inside a batch allocation: the MCA framework
    `ompi_info --parsable` lists (pmix: direct launch through PMI; plm: mpirun's daemons through the batch
    system), and whether it is probed in the runtime's environment (the ranks' MPI) or on the node itself."""

    framework: str
    in_runtime: bool


class Launcher(ABC):
    """Starts `command` once per rank of `placement`, passing the environment variables `env_names`.

    Every member the schedulers use is here, with its default: a launcher overrides what it has.
    """

    name: ClassVar[str]
    batch_only: ClassVar[bool] = False  # True: starts ranks inside a batch job only (argv refuses)
    in_batch: ClassVar[bool] = False  # True: batch_argv starts the ranks inside a batch job's allocation
    mpi_need: ClassVar[MpiNeed | None] = None  # what it needs of the MPI inside an allocation (checked before)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        refuse_misspelt(cls, Launcher)
        if cls.in_batch and cls.batch_argv is Launcher.batch_argv:
            raise TypeError(f"{cls.__qualname__} says in_batch but has no batch_argv")

    @abstractmethod
    def argv(self, placement: tuple[Placement, ...], command: list[str], env_names: list[str], *, interface: str,
             ssh: SshOptions | None, forwarded: tuple[str, ...]) -> list[str]: ...

    def batch_argv(self, allocation: Allocation, command: list[str], env_names: list[str], *,
                   interface: str) -> list[str]:
        """The ranks inside a batch allocation (default: this launcher cannot; schedulers check `in_batch`)."""
        raise InputError(f"the {self.name} launcher cannot start ranks inside a batch allocation",
                         hint="use --launcher srun or mpirun")

    def mpi_problem(self, pmi: str, plugins: list[str], found: set[str] | None) -> str | None:
        """Why this launcher cannot wire the MPI up inside a batch job, or None (pure): `pmi` is the job's PMI
        plugin, `plugins` the batch system's (empty: not known yet), `found` the components of `mpi_need`'s
        framework on a node (None: not probed, or not Open MPI)."""
        return None

    def batch_note(self, pmi: str) -> str:
        """How it wires the ranks up inside a batch job, for the line a sweep shows before its first job."""
        return ""


def _check(item: object) -> None:
    if not isinstance(item, Launcher):
        raise TypeError(f"a launcher must be an instance of repro.launch.launchers.Launcher, not {item!r}")


LAUNCHERS: Registry[Launcher] = Registry("launcher", on_add=_check)


def for_backend(backend: str | None) -> str:
    """The launcher a Horovod controller needs by default: gloo for Gloo, mpirun otherwise."""
    return "gloo" if backend == "gloo" else "mpirun"


LAUNCHERS.lazy("mpirun", "repro.launch.launchers.mpirun:Mpirun", instance=True,
               help="Open MPI's mpirun over SSH (Horovod's MPI controller)")
LAUNCHERS.lazy("gloo", "repro.launch.launchers.gloo:GlooUnderMpirun", instance=True,
               help="mpirun wrapped for Horovod's Gloo controller (rendezvous by repro)")
LAUNCHERS.lazy("srun", "repro.launch.launchers.srun:Srun", instance=True,
               help="Slurm's srun inside the job (--mpi=pmix by default; --scheduler slurm only)")
LAUNCHERS.lazy("torchrun", "repro.launch.launchers.torchrun:Torchrun", instance=True,
               help="PyTorch's torchrun, c10d rendezvous on the first host (torch_* workloads; one host, several "
               "hosts through mpirun, or srun inside a Slurm job)")
