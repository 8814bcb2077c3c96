"""Slurm's srun as the launcher: Slurm starts every rank inside the job's allocation and wires MPI up
through the PMI plugin the site's Slurm and the MPI share (`--mpi=pmix`: Debian 12's Slurm 22.05 and Open MPI
4.1.4 share PMIx 4.2.2). Whether the MPI can use that plugin is checked before a job is submitted
(repro.launch.schedulers.slurm_nodes: pmi_problem)."""

from __future__ import annotations

from repro.errors import InputError
from repro.launch.launchers import LAUNCHERS, Allocation, SshOptions
from repro.launch.placement import Placement


@LAUNCHERS.register("srun", instance=True)
class Srun:
    """srun --mpi=PMI --nodes N --ntasks W [--ntasks-per-node K] COMMAND, inside a batch job."""

    name = "srun"
    batch_only = True

    def argv(self, placement: tuple[Placement, ...], command: list[str], env_names: list[str], *, interface: str,
             ssh: SshOptions | None, forwarded: tuple[str, ...]) -> list[str]:
        raise InputError("the srun launcher starts ranks inside a Slurm job's allocation",
                         hint="use --scheduler slurm, or --launcher mpirun to start the ranks over SSH")

    def batch_argv(self, allocation: Allocation, command: list[str], env_names: list[str], *,
                   interface: str) -> list[str]:
        """Every rank as a task of one job step; the step ends, and the job fails, as soon as one rank fails."""
        argv = ["srun", f"--mpi={allocation.pmi}", f"--nodes={allocation.nodes}", f"--ntasks={allocation.tasks}"]
        if allocation.tasks_per_node is not None:
            argv.append(f"--ntasks-per-node={allocation.tasks_per_node}")
        # Open MPI under direct launch has no mpirun to pass --mca to: the same settings as MCA variables.
        mca = {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "^openib", "OMPI_MCA_btl_tcp_if_include": interface}
        exports = ",".join(["ALL", *(f"{k}={v}" for k, v in mca.items())])
        return [*argv, "--kill-on-bad-exit=1", f"--export={exports}", *command]
