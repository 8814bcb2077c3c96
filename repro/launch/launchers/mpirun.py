"""Open MPI's mpirun across the placement's hosts, over SSH with host-key checking on."""

from __future__ import annotations

import shlex

from repro.launch.launchers import LAUNCHERS, SshOptions
from repro.launch.placement import Placement, host_list


def rsh_args(ssh: SshOptions) -> str:
    """One mpirun argument holding ssh's options; host-key checking stays on."""
    return shlex.join(["-p", str(ssh.port), "-i", ssh.key, "-o", f"UserKnownHostsFile={ssh.known_hosts}",
                       "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"])


@LAUNCHERS.register("mpirun", instance=True)
class Mpirun:
    """mpirun -np N -H addr:slots,... with TCP for MPI's own traffic on the inventory's interface."""

    name = "mpirun"

    def argv(self, placement: tuple[Placement, ...], command: list[str], env_names: list[str], *, interface: str,
             ssh: SshOptions | None, forwarded: tuple[str, ...]) -> list[str]:
        workers = sum(p.ranks for p in placement)
        local = all(p.host.local for p in placement)
        argv = ["mpirun", "--allow-run-as-root", "-np", str(workers), "-H", host_list(placement, local_names=local),
                "--bind-to", "none", "--map-by", "slot",
                # TCP for MPI's own traffic (NCCL carries GPU tensors), as Horovod's docs recommend
                "--mca", "pml", "ob1", "--mca", "btl", "^openib",
                "--mca", "btl_tcp_if_include", interface, "--mca", "oob_tcp_if_include", interface]
        if ssh is not None and not local:
            argv += ["--mca", "plm_rsh_args", rsh_args(ssh)]
        for name in sorted(set(env_names) | set(forwarded)):
            argv += ["-x", name]
        return argv + command
