"""Workloads take their rank and world size from the launcher that started them: Open MPI's mpirun (also inside
a Slurm allocation, where SLURM_PROCID is its daemon's), srun with PMIx, srun alone, MPICH's hydra."""

from __future__ import annotations

import pytest

from repro.workloads import WorkloadError
from repro.workloads import _net as net


@pytest.mark.parametrize(("env", "expected"), [
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "SLURM_PROCID": "1", "SLURM_NTASKS": "2"},
     (3, 4, "mpirun")),
    ({"PMIX_RANK": "1", "SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2", "SLURM_NTASKS": "8"}, (1, 2, "pmix")),
    ({"SLURM_PROCID": "5", "SLURM_NTASKS": "8"}, (5, 8, "srun")),
    ({"PMI_RANK": "0", "PMI_SIZE": "2"}, (0, 2, "hydra")),
    ({"PMIX_RANK": "0"}, (0, None, "pmix")),
    ({}, None),
])
def test_rank_and_size_come_from_the_launcher_that_started_the_process(env, expected):
    assert net.launcher_rank(env) == expected


def test_a_rank_outside_its_world_is_refused():
    with pytest.raises(WorkloadError, match="not a rank of a world of 2"):
        net.launcher_rank({"SLURM_PROCID": "2", "SLURM_NTASKS": "2"})


def test_gloo_slots_come_from_the_rank_srun_gave():
    gloo = {"HOROVOD_CONTROLLER": "gloo", "REPRO_GLOO_HOSTS": "127.0.0.1:2", "REPRO_GLOO_NP": "2"}
    env = {**gloo, "PMIX_RANK": "1", "SLURM_STEP_NUM_TASKS": "2"}
    assert net.prepare_gloo_environment(env) is True
    assert (env["HOROVOD_RANK"], env["HOROVOD_SIZE"], env["HOROVOD_LOCAL_RANK"]) == ("1", "2", "1")
    with pytest.raises(WorkloadError, match="srun started 3 processes but the Gloo rendezvous expects 2"):
        net.prepare_gloo_environment({**gloo, "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "3"})
