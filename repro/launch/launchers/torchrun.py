"""PyTorch's torchrun (torch.distributed.run): one agent per host starts that host's ranks, and the agents meet
at a c10d rendezvous (--nnodes, --nproc-per-node, --rdzv-backend=c10d, --rdzv-endpoint=HOST:PORT).

* One host: torchrun itself, `--standalone` (c10d on this host at a free port).
* Several hosts, repro reaching them (`direct`): one torchrun per host, each with its own --nproc-per-node,
  started by mpirun as one MPMD job over SSH with host-key checking on (as the mpirun launcher does); the first
  host holds the rendezvous (`--rdzv-conf=is_host=true`), so torch need not guess it from the hostname, which
  hosts sharing a machine share.
* Inside a Slurm allocation: `srun --ntasks-per-node=1` starts repro.workloads.torchrun on every node, which
  reads the job's nodes and the first node's address from Slurm's environment and becomes torchrun.

The workload's command must be `python -m MODULE ...` (after whatever the runtime puts in front of it): torchrun
runs it with `--no-python --` (repro.workloads.torchrun.script_words), so its workers run exactly that command and
torchrun reads none of the workload's flags as its own.
"""

from __future__ import annotations

from repro.errors import InputError
from repro.launch.launchers import LAUNCHERS, Allocation, Launcher, SshOptions
from repro.launch.launchers.mpirun import _common, _exports, rsh_args
from repro.launch.placement import Placement
from repro.workloads.torchrun import RDZV_PORT, script_words, torchrun_options


def python_at(command: list[str]) -> int:
    """Where `python -m repro.workloads...` starts in a rank's command (a container wrapper may precede it)."""
    for index in range(len(command) - 2):
        if command[index + 1] == "-m" and command[index + 2].startswith("repro.workloads."):
            return index
    raise InputError(f"the torchrun launcher runs repro's workloads (python -m repro.workloads.NAME), not "
                     f"{' '.join(command[:4])} ...", hint="use --launcher mpirun for other programs")


@LAUNCHERS.register("torchrun", instance=True)
class Torchrun(Launcher):
    """torchrun per host, c10d rendezvous on the first host."""

    name = "torchrun"
    in_batch = True

    def argv(self, placement: tuple[Placement, ...], command: list[str], env_names: list[str], *, interface: str,
             ssh: SshOptions | None, forwarded: tuple[str, ...]) -> list[str]:
        at = python_at(command)
        python, prefix = command[at], command[:at]
        if len(placement) == 1:
            return [*prefix, python, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
                    f"--nproc-per-node={placement[0].ranks}", *script_words(command[at:])]
        endpoint = f"{placement[0].host.address}:{RDZV_PORT}"
        local = all(p.host.local for p in placement)
        argv = ["mpirun", "--allow-run-as-root", *_common(interface)]
        if ssh is not None and not local:
            argv += ["--mca", "plm_rsh_args", rsh_args(ssh)]
        argv += _exports(env_names, forwarded)
        for index, p in enumerate(placement):
            options = torchrun_options(len(placement), p.ranks, endpoint, "repro", index == 0)
            argv += [*([":"] if index else []), "-np", "1", "-H", f"{p.host.address}:1",
                     *prefix, python, "-m", "torch.distributed.run", *options, *script_words(command[at:])]
        return argv

    def batch_argv(self, allocation: Allocation, command: list[str], env_names: list[str], *,
                   interface: str) -> list[str]:
        """srun, one task per node, each becoming that node's torchrun (repro.workloads.torchrun)."""
        if allocation.tasks_per_node is None:
            raise InputError("torchrun starts the same number of ranks on every node of a Slurm job, and this point "
                             f"spreads {allocation.tasks} ranks unevenly over {allocation.nodes} nodes",
                             hint="choose --workers a multiple of the ranks per node, or --launcher srun")
        at = python_at(command)
        python = command[at]
        wrapper = [python, "-m", "repro.workloads.torchrun", "--nproc-per-node", str(allocation.tasks_per_node),
                   "--"]
        return ["srun", f"--nodes={allocation.nodes}", f"--ntasks={allocation.nodes}", "--ntasks-per-node=1",
                "--kill-on-bad-exit=1", "--export=ALL", *command[:at], *wrapper, *command[at:]]
