"""Slurm's srun as the launcher: Slurm starts every rank inside the job's allocation and wires MPI up
through the PMI plugin the site's Slurm and the MPI share (`--mpi=pmix`: Debian 12's Slurm 22.05 and Open MPI
4.1.4 share PMIx 4.2.2). Whether the MPI can use that plugin is checked before a job is submitted (pmi_problem,
below, with the MPI's pmix components probed on a node in the runtime's environment)."""

from __future__ import annotations

import re

from repro.errors import InputError
from repro.launch.launchers import LAUNCHERS, Allocation, Launcher, MpiNeed, SshOptions
from repro.launch.placement import Placement


@LAUNCHERS.register("srun", instance=True)
class Srun(Launcher):
    """srun --mpi=PMI --nodes N --ntasks W [--ntasks-per-node K] COMMAND, inside a batch job."""

    name = "srun"
    batch_only = True
    in_batch = True
    mpi_need = MpiNeed("pmix", in_runtime=True)  # the ranks' own MPI must have a client of the PMI

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

    def mpi_problem(self, pmi: str, plugins: list[str], found: set[str] | None) -> str | None:
        return pmi_problem(pmi, plugins, found)

    def batch_note(self, pmi: str) -> str:
        return f"srun --mpi={pmi}"


def pmi_problem(pmi: str, plugins: list[str], pmix_components: set[str] | None) -> str | None:
    """Why `srun --mpi=PMI` cannot wire this MPI up, or None (pure). `pmix_components`: the MPI's Open MPI pmix
    framework (None: not Open MPI, or unknown: nothing is refused on a guess)."""
    if pmi == "none":
        return ("srun --mpi=none starts every rank without PMI: an MPI rank would run alone (Open MPI aborts in "
                "MPI_Init: 'OMPI was not built with SLURM's PMI support')")
    if plugins and pmi not in plugins:
        return f"this Slurm's srun has no --mpi={pmi} plugin (srun --mpi=list: {', '.join(plugins)})"
    if pmix_components is None:
        return None
    listed = ", ".join(sorted(pmix_components)) or "none"
    if pmi == "pmi2" and "s2" not in pmix_components:
        return (f"the MPI was built without PMI-2 (Open MPI's pmix components: {listed}; PMI-2 needs s2, from "
                "--with-pmi; Debian's Open MPI has PMIx only): use --slurm-mpi pmix")
    if pmi == "pmi1" and "s1" not in pmix_components:
        return f"the MPI was built without PMI-1 (Open MPI's pmix components: {listed})"
    if pmi.startswith("pmix") and not any(re.fullmatch(r"(ext|pmix)\d+x", c) for c in pmix_components):
        return f"the MPI has no PMIx client (Open MPI's pmix components: {listed}): use --slurm-mpi pmi2"
    return None
