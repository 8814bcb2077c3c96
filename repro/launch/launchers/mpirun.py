"""Open MPI's mpirun: across the placement's hosts over SSH with host-key checking on, or inside a batch
allocation, where Open MPI built with Slurm support (Debian's is) reads the allocation and starts its
daemons through Slurm: no -H, no SSH."""

from __future__ import annotations

import re
import socket

from repro.errors import InputError
from repro.launch.launchers import LAUNCHERS, Allocation, Launcher, MpiNeed, SshOptions
from repro.launch.placement import Placement, host_list

# Open MPI splits plm_rsh_args on blanks and passes quotes on literally, so every value must be one plain
# word: ssh then sees exactly what was written, and expands a leading ~ itself.
_PLAIN = re.compile(r"[A-Za-z0-9_./~:@%+=,-]+")
MASTER_PORT = 29500  # torch.distributed's own default


def rsh_args(ssh: SshOptions) -> str:
    """One mpirun argument holding ssh's options; host-key checking stays on.

    InputError for a key or known_hosts path Open MPI cannot pass intact (blanks, quotes, shell characters).
    """
    for what, value in (("repro_launch_key", ssh.key), ("repro_launch_known_hosts", ssh.known_hosts)):
        if value is not None and (not _PLAIN.fullmatch(value) or value.startswith("-")):
            raise InputError(f"{what} {value!r} cannot be passed to ssh through mpirun intact",
                             hint="Open MPI splits plm_rsh_args on blanks and keeps quotes: use a path of letters, "
                             "digits and ._/~:@%+=,- only (e.g. a symlink without blanks)")
    argv = ["-p", str(ssh.port)]
    if ssh.key:
        argv += ["-i", ssh.key, "-o", "IdentitiesOnly=yes"]
    if ssh.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={ssh.known_hosts}"]
    return " ".join([*argv, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"])


@LAUNCHERS.register("mpirun", instance=True)
class Mpirun(Launcher):
    """mpirun -np N -H addr:slots,... with TCP for MPI's own traffic on the inventory's interface."""

    name = "mpirun"
    in_batch = True
    mpi_need = MpiNeed("plm", in_runtime=False)  # mpirun on the node starts its daemons through the batch system

    def argv(self, placement: tuple[Placement, ...], command: list[str], env_names: list[str], *, interface: str,
             ssh: SshOptions | None, forwarded: tuple[str, ...]) -> list[str]:
        workers = sum(p.ranks for p in placement)
        local = all(p.host.local for p in placement)
        argv = ["mpirun", "--allow-run-as-root", "-np", str(workers), "-H", host_list(placement, local_names=local),
                *_common(interface)]
        if ssh is not None and not local:
            argv += ["--mca", "plm_rsh_args", rsh_args(ssh)]
        return argv + _exports(env_names, forwarded) + rendezvous(placement, local) + command

    def batch_argv(self, allocation: Allocation, command: list[str], env_names: list[str], *,
                   interface: str) -> list[str]:
        """mpirun inside the allocation: it takes the nodes and slots from the batch system, so the ranks fill
        the nodes in order as on the hosts (--map-by slot)."""
        return ["mpirun", "--allow-run-as-root", "-np", str(allocation.tasks), *_common(interface),
                *_exports(env_names, ("PATH",)), *command]

    def mpi_problem(self, pmi: str, plugins: list[str], found: set[str] | None) -> str | None:
        return slurm_mpirun_problem(found)


def rendezvous(placement: tuple[Placement, ...], local: bool) -> list[str]:
    """MASTER_ADDR and MASTER_PORT for torch.distributed's env:// start-up (Open MPI sets only OMPI_COMM_WORLD_*):
    the first host, where rank 0 runs. Horovod's workloads ignore them. On this machine alone the port is one
    the kernel says is free now, so that two runs at once (two sweeps, two test workers) do not take the same;
    across hosts it is torch's default, which the first host must have free."""
    address = "127.0.0.1" if local else placement[0].host.address
    port = free_local_port() if local else MASTER_PORT
    return ["-x", f"MASTER_ADDR={address}", "-x", f"MASTER_PORT={port}"]


def free_local_port() -> int:
    """A TCP port of 127.0.0.1 that no socket holds now (the kernel's choice of an ephemeral port)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _common(interface: str) -> list[str]:
    return ["--bind-to", "none", "--map-by", "slot",
            # TCP for MPI's own traffic (NCCL carries GPU tensors), as Horovod's docs recommend
            "--mca", "pml", "ob1", "--mca", "btl", "^openib",
            "--mca", "btl_tcp_if_include", interface, "--mca", "oob_tcp_if_include", interface]


def _exports(env_names: list[str], forwarded: tuple[str, ...]) -> list[str]:
    return [a for name in sorted(set(env_names) | set(forwarded)) for a in ("-x", name)]


def slurm_mpirun_problem(plm_components: set[str] | None) -> str | None:
    """Why `mpirun` cannot start its daemons inside the allocation, or None (pure)."""
    if plm_components is not None and "slurm" not in plm_components:
        return ("mpirun inside a Slurm allocation needs Open MPI built with Slurm support (its plm framework has: "
                f"{', '.join(sorted(plm_components)) or 'nothing'}; no slurm): use --launcher srun")
    return None
