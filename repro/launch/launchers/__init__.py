"""Launchers: how the worker processes of a point are started (one per rank), as an argv list.

    @LAUNCHERS.register("mpirun")
    class Mpirun:
        def argv(self, placement, command, env_names, *, interface, ssh, forwarded) -> list[str]: ...

`mpirun` (Open MPI over SSH; Horovod's MPI controller) and `gloo` (the same mpirun wrapped so that
Horovod's Gloo controller gets its rendezvous) are built in. Adding one is a class with `argv` plus a
registration; `repro bench --launcher NAME` then offers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from repro.launch.placement import Placement
from repro.registry import Registry


@dataclass(frozen=True)
class SshOptions:
    """How the launcher reaches the other hosts (the containers' sshd, or the hosts' own).

    key / known_hosts None: ssh's own (~/.ssh/config, which `repro prepare --tags ssh_trust` writes, and
    ~/.ssh/known_hosts on the launching host). Host-key checking stays on either way.
    """

    port: int
    key: str | None = None
    known_hosts: str | None = None


class Launcher(Protocol):
    """Starts `command` once per rank of `placement`, passing the environment variables `env_names`."""

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
