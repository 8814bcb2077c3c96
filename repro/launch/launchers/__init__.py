"""Launchers: how the worker processes of a point are started (one per rank), as an argv list.

    @LAUNCHERS.register("mpirun")
    class Mpirun:
        def argv(self, placement, command, env_names, *, interface, ssh, forwarded) -> list[str]: ...
        def batch_argv(self, allocation, command, env_names, *, interface) -> list[str]: ...  # optional

`argv` starts the ranks on hosts repro reaches itself (the `direct` scheduler); `batch_argv`, where a
launcher has it, starts them inside a batch job's allocation, whose nodes the batch system chose (the
`slurm` scheduler): a launcher without it is refused there before anything is submitted.

Built in: `mpirun` (Open MPI over SSH; inside an allocation, Open MPI built with Slurm support starts its
daemons through Slurm, no -H and no SSH), `gloo` (the same mpirun wrapped so that Horovod's Gloo
controller gets its rendezvous; direct only), `srun` (Slurm starts every rank and wires MPI up
through PMIx; batch only) and `torchrun` (PyTorch's per-host agent with a c10d rendezvous; both).
Adding one is a class plus a registration; `repro bench --launcher NAME` then offers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

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


class Launcher(Protocol):
    """Starts `command` once per rank of `placement`, passing the environment variables `env_names`.

    A launcher that can start ranks inside a batch allocation also has
    `batch_argv(allocation, command, env_names, *, interface) -> list[str]` (see the module docstring).
    """

    name: str

    def argv(self, placement: tuple[Placement, ...], command: list[str], env_names: list[str], *, interface: str,
             ssh: SshOptions | None, forwarded: tuple[str, ...]) -> list[str]: ...


LAUNCHERS: Registry[Launcher] = Registry("launcher")


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
