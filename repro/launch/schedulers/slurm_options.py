"""The Slurm scheduler's site settings as `repro bench` flags (Slurm.options): declared apart from the scheduler,
so that the CLI's help lists them without importing it."""

from __future__ import annotations

from repro.launch.schedulers import SiteOption

# the site settings `repro bench` flags override (Slurm.options; the CLI's group for --scheduler slurm)
OPTIONS = (
    SiteOption("repro_slurm_partition", "--partition", "Slurm partition (repro_slurm_partition)"),
    SiteOption("repro_slurm_account", "--account", "Slurm account to charge (repro_slurm_account)"),
    SiteOption("repro_slurm_time", "--time-limit", "job time limit: minutes, HH:MM:SS or D-HH:MM:SS "
               "(repro_slurm_time; default: --timeout in whole minutes)", metavar="LIMIT"),
    SiteOption("repro_slurm_extra", "--sbatch", "an extra #SBATCH line, given as --sbatch=--qos=high (repeatable; "
               "repro_slurm_extra)", metavar="LINE", repeat=True),
    SiteOption("repro_slurm_mpi", "--slurm-mpi", "srun --mpi plugin for the srun launcher (repro_slurm_mpi; default "
               "pmix)", metavar="PLUGIN"),
)
