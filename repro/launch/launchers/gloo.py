"""Horovod's Gloo controller under mpirun: repro.workloads.gloo runs Horovod's rendezvous server and
hands each rank its slot, because horovodrun hard-codes `StrictHostKeyChecking=no`."""

from __future__ import annotations

from repro.launch.launchers import LAUNCHERS, Launcher, SshOptions
from repro.launch.launchers.mpirun import Mpirun
from repro.launch.placement import Placement


@LAUNCHERS.register("gloo", instance=True)
class GlooUnderMpirun(Launcher):
    """python -m repro.workloads.gloo --hosts addr:slots,... --iface IF -- mpirun ..."""

    name = "gloo"

    def argv(self, placement: tuple[Placement, ...], command: list[str], env_names: list[str], *, interface: str,
             ssh: SshOptions | None, forwarded: tuple[str, ...]) -> list[str]:
        inner = Mpirun().argv(placement, command, env_names, interface=interface, ssh=ssh, forwarded=forwarded)
        hosts = ",".join(f"{p.host.address}:{p.ranks}" for p in placement)
        return [command[0], "-m", "repro.workloads.gloo", "--hosts", hosts, "--iface", interface, "--", *inner]
