"""GPU runs that use NCCL write its INFO lines to per-process files that the runtime reads back (issue 37 item 5);
CPU runs and GPU runs without NCCL get none of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.cli import main
from repro.launch.nccl_files import files_of, joined, point_dir, read_argv, uses_nccl
from repro.launch.points import SweepSpec, expand
from repro.manifest import load_stack
from tests.unit.test_launch_plan import CPU, GPU, cluster, plan_of
from tests.unit.test_slurm_script import batch_plan
from tests.unit.test_slurm_script import cluster as slurm_cluster

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "data" / "logs" / "nccl"
TORCH_GPU = load_stack(ROOT / "stacks" / "torch24-cuda124.yaml")
NCCL_VARS = {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}


def _point(loaded, **spec):
    return expand(SweepSpec(workers=(2,), **spec), loaded.stack)[0]


def test_only_gpu_points_whose_workload_talks_through_nccl_use_it():
    assert uses_nccl(_point(GPU), gpu=True, framework="tensorflow")  # Horovod on GPUs: NCCL's all-reduce
    assert not uses_nccl(_point(CPU), gpu=False, framework="tensorflow")
    for name in ("torch_cnn", "cnn"):  # the alias and the family's PyTorch program alike
        torch = _point(TORCH_GPU, workload=name)
        assert uses_nccl(torch, gpu=True, framework="pytorch")  # backend auto: nccl on GPUs
        gloo = torch.model_copy(update={"extra": {**torch.extra, "dist_backend": "gloo"}})
        assert not uses_nccl(gloo, gpu=True, framework="pytorch")
        assert point_dir(torch, gpu=True, run_id="ab12", framework="pytorch") == "/tmp/repro-nccl-ab12"
        assert point_dir(gloo, gpu=True, run_id="ab12", framework="pytorch") is None
    assert not uses_nccl(_point(GPU, workload="probe"), gpu=True, framework="tensorflow")  # no framework: no NCCL


def test_a_gpu_docker_plan_binds_each_hosts_directory_and_sets_nccls_file():
    p = _point(GPU)
    plan = plan_of(p, cluster(), "docker", stack_env={}, gpu=True, run_id="r1", image="img",
                   nccl_dir=point_dir(p, gpu=True, run_id="r1", framework="tensorflow"))
    assert plan.env["NCCL_DEBUG_FILE"] == "/tmp/repro-nccl-r1/nccl.%h.%p.log"
    assert plan.env["NCCL_DEBUG"] == "INFO" and plan.env["NCCL_DEBUG_SUBSYS"] == "INIT,NET,GRAPH,ENV"
    for c in plan.containers:  # hosts on one machine share /tmp: each container its own host directory
        assert f"/tmp/repro-nccl-r1/{c.host.name}:/tmp/repro-nccl-r1" in c.run_argv
    assert "NCCL_DEBUG_FILE" in plan.launch_argv  # forwarded by the launcher to every rank
    assert plan.nccl_dir == "/tmp/repro-nccl-r1"


def test_a_cpu_plan_has_no_nccl_variables_and_the_stacks_own_nccl_debug_yields():
    p = _point(CPU)
    plan = plan_of(p, cluster(), "host", stack_env={}, gpu=False, run_id="r1",
                   nccl_dir=point_dir(p, gpu=False, run_id="r1", framework="tensorflow"))
    assert not NCCL_VARS & set(plan.env) and plan.nccl_dir is None
    gpu = plan_of(_point(GPU), cluster(), "host", stack_env={"NCCL_DEBUG": "WARN"}, gpu=True, run_id="r1",
                  nccl_dir="/tmp/repro-nccl-r1")
    assert gpu.env["NCCL_DEBUG"] == "INFO"  # WARN would print nothing of the path, into the workload's output


def test_a_slurm_job_with_an_absolute_workdir_binds_its_nccl_directory_into_the_containers():
    inv = slurm_cluster(gpus=2, slots=2, repro_slurm_workdir="/shared/repro")
    plan = batch_plan("docker", "srun", workers=2, inventory=inv, stack="stacks/tf114-cuda10.yaml")
    assert plan.nccl_dir == "/shared/repro/repro-0123abcd.nccl"
    assert "export NCCL_DEBUG_FILE=/shared/repro/repro-0123abcd.nccl/nccl.%h.%p.log" in plan.script
    assert "/shared/repro/repro-0123abcd.nccl:/shared/repro/repro-0123abcd.nccl" in plan.script
    assert "mkdir -p /shared/repro/repro-0123abcd.nccl" in plan.script


@pytest.mark.parametrize("runtime", ["apptainer", "pyxis"])
def test_the_other_slurm_containers_bind_it_too(runtime):
    inv = slurm_cluster(gpus=2, slots=2, repro_slurm_workdir="/shared/repro")
    plan = batch_plan(runtime, "srun", workers=2, inventory=inv, stack="stacks/tf114-cuda10.yaml")
    d = "/shared/repro/repro-0123abcd.nccl"
    assert plan.nccl_dir == d and f"export NCCL_DEBUG_FILE={d}/nccl.%h.%p.log" in plan.script
    assert {"apptainer": f"--bind {d}", "pyxis": f"--container-mounts={d}:{d}"}[runtime] in plan.script


def test_a_container_job_with_a_relative_workdir_keeps_no_nccl_file_and_says_so():
    plan = batch_plan("docker", "srun", workers=2, inventory=slurm_cluster(gpus=2, slots=2),
                      stack="stacks/tf114-cuda10.yaml")
    assert plan.nccl_dir is None and "NCCL_DEBUG_FILE" not in plan.script
    assert "# NCCL's INFO lines are not kept: a container binds only an absolute repro_slurm_workdir" in plan.script


def test_the_listing_of_several_hosts_reads_back_each_file_once():
    one = (LOGS / "pxn-ib-gdrdma.log").read_text()
    two = (LOGS / "nccl-1189-mpirun-h20-ib-cumem.log").read_text()
    # what `tail -v -n +1 a b` prints: a header per file, an empty line between files
    listing = f"==> /tmp/d/nccl.h1.10.log <==\n{one}\n==> /tmp/d/nccl.h2.20.log <==\n{two}"
    assert files_of(listing) == {"nccl.h1.10.log": one, "nccl.h2.20.log": two}
    # two hosts on one filesystem list the same files: each is kept once
    assert joined([listing, listing]) == one + two
    assert joined(["", ""]) == ""
    assert read_argv("/tmp/d")[:2] == ["find", "/tmp/d"] and "nccl.*.log" in read_argv("/tmp/d")


def test_the_dry_run_of_a_gpu_stack_shows_the_variables_and_a_cpu_stacks_does_not(capsys):
    assert main(["bench", "--stack", "stacks/torch24-cuda124.yaml", "--hosts", "inventories/c4140",
                 "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "--env NCCL_DEBUG=INFO --env NCCL_DEBUG_FILE=/tmp/repro-nccl-dry-run/nccl.%h.%p.log" in out
    assert "--volume /tmp/repro-nccl-dry-run/c4140-1:/tmp/repro-nccl-dry-run" in out
    assert main(["bench", "--stack", "stacks/cpu-torch213.yaml", "--hosts", "inventories/c4140", "--dry-run"]) == 0
    assert "NCCL_DEBUG" not in capsys.readouterr().out
