"""The sbatch scripts of `repro bench --scheduler slurm` (pure): one golden file per launcher x runtime, each
shellcheck-clean (scripts/lint.sh checks the golden files); what the site settings and the point put into the
script, and nothing else.

After an intended change of a script, accept the new files with:

    REPRO_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_slurm_script.py
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import pytest

from repro.errors import InputError
from repro.hosts.inventory import Host, Inventory
from repro.launch.nccl_files import point_dir
from repro.launch.placement import place
from repro.launch.plan import PlanContext
from repro.launch.points import SweepSpec, expand
from repro.launch.schedulers.sbatch import BatchPlan
from repro.launch.schedulers.slurm import Slurm
from repro.manifest import load_stack
from tests import golden

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden" / "slurm"
TAG = "repro/stack:69584d3bcf4ba9e5"
SITE_VARS = {"repro_slurm_submit_host": "login1", "repro_slurm_partition": "debug",
             "repro_charliecloud_images": "/shared/charliecloud", "repro_enroot_images": "/shared/enroot",
             "repro_apptainer_images": "/shared/apptainer"}
# every launcher x runtime that runs inside a Slurm job (pyxis is an srun plugin: no mpirun form)
COMBINATIONS = [(r, launcher) for r in ("host", "docker", "charliecloud", "pyxis", "apptainer")
                for launcher in ("srun", "mpirun") if (r, launcher) != ("pyxis", "mpirun")]


def cluster(*, gpus: int = 0, slots: int = 1, docker_hosts: bool = True, dataset: str | None = None,
            **extra) -> Inventory:
    """A login node and two compute nodes, as an inventory of a Slurm site would name them."""
    hosts = [Host(name="login1", address="10.0.0.10", vars=dict(SITE_VARS, **extra))]
    for i in (1, 2):
        hv = dict(SITE_VARS, **extra)
        hosts.append(Host(name=f"node{i}", address=f"10.0.0.{i}", slots=slots, gpus=gpus, interface="ib0",
                          python="/opt/site/python/bin/python3",
                          docker_host=f"unix:///run/docker-{i}.sock" if docker_hosts else
                          "unix:///var/run/docker.sock", dataset_dir=dataset, vars=hv))
    # the compute nodes are the workers; the login node submits
    return Inventory("site.yml", (hosts[1], hosts[2], hosts[0]))


def batch_plan(runtime: str, launcher: str, *, workers: int = 2, inventory: Inventory | None = None,
               flags: dict | None = None, stack: str = "stacks/cpu-tf215.yaml", env: dict | None = None,
               spec: SweepSpec | None = None) -> BatchPlan:
    inventory = inventory or cluster()
    loaded = load_stack(ROOT / stack)
    point = next(p for p in expand(spec or SweepSpec(workers=(workers,), steps=10, warmup_steps=2), loaded.stack)
             if p.workers == workers)
    slurm = Slurm().configure(inventory, flags or {}, 1800.0)
    slurm.check(runtime, launcher)
    ctx = PlanContext(run_id="0123abcd", stack_env=dict(env if env is not None else loaded.stack.env),
                      gpu=loaded.stack.gpu, image=TAG, ssh_port=loaded.stack.container.ssh_port,
                      python="python3" if runtime != "host" else None, launcher=launcher,
                      infiniband=any(h.vars.get("repro_infiniband") for h in inventory.hosts),
                      nccl_dir=point_dir(point, gpu=loaded.stack.gpu, run_id="0123abcd",
                                         framework=loaded.stack.framework),
                      framework=loaded.stack.framework)  # as repro bench
    return slurm.plan(point, place(inventory, workers), runtime, ctx)


assert_golden = partial(golden.assert_golden, GOLDEN)


@pytest.mark.parametrize(("runtime", "launcher"), COMBINATIONS, ids=[f"{r}-{lc}" for r, lc in COMBINATIONS])
def test_the_job_script_of_each_runtime_and_launcher_is_golden(runtime, launcher):
    # shellcheck-clean: scripts/lint.sh checks the golden files, which this keeps equal to the rendered scripts
    plan = batch_plan(runtime, launcher)
    assert_golden(f"{runtime}-{launcher}.sbatch", plan.script)


SEED_003 = SweepSpec(workload="tf_cnn_benchmarks", workers=(8,), models=("resnet50",), batch_sizes=(256,),
                     precisions=("fp16",), xla=(True,), data_format="NCHW", data="real")


def seed_003() -> Inventory:
    """Seed 003's two C4140s: 4 V100s each, ImageNet on NFS, EDR InfiniBand (ib0)."""
    return cluster(gpus=4, slots=4, dataset="/home/dell/imagenet_tfrecords", repro_slurm_account="dell-hpc",
                   repro_slurm_extra=["--exclusive"], repro_infiniband=True)


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_seed_003_as_a_job_script_is_golden(runtime):
    """Seed 003's 8 GPUs on 2 C4140s (mpirun -np 8 -H a:4,b:4 ... over ib0) as one sbatch job: srun --mpi=pmix,
    4 GPUs per node, ImageNet, tf_cnn_benchmarks with ResNet-50 at batch 256 in fp16 with XLA; in worker
    containers (as the seed ran it) or on the nodes' own software."""
    plan = batch_plan(runtime, "srun", workers=8, inventory=seed_003(), stack="stacks/tf114-cuda10-xla.yaml",
                      spec=SEED_003)
    assert_golden(f"seed003-{runtime}-srun.sbatch", plan.script)
    assert "#SBATCH --gpus-per-node=4" in plan.script and "#SBATCH --ntasks-per-node=4" in plan.script
    if runtime == "docker":
        assert "--device /dev/infiniband" in plan.script and "/home/dell/imagenet_tfrecords:/data:ro" in plan.script


def test_the_example_of_docs_slurm_md_is_the_rendered_script():
    doc = (ROOT / "docs" / "slurm.md").read_text()
    script = (GOLDEN / "seed003-host-srun.sbatch").read_text()
    assert f"```bash\n{script}```" in doc, "docs/slurm.md's example differs from seed003-host-srun.sbatch"


def test_the_script_takes_the_shape_from_the_point_and_the_rest_from_the_site():
    plan = batch_plan("host", "srun", workers=1,
                      flags={"repro_slurm_partition": "gpu", "repro_slurm_account": "proj-42",
                             "repro_slurm_time": "1:30:00", "repro_slurm_extra": ("--qos=high", "--exclusive")})
    lines = plan.script.splitlines()
    assert [ln for ln in lines if ln.startswith("#SBATCH")] == [
        "#SBATCH --job-name=repro-0123abcd", "#SBATCH --partition=gpu", "#SBATCH --account=proj-42",
        "#SBATCH --nodes=1", "#SBATCH --ntasks=1", "#SBATCH --ntasks-per-node=1", "#SBATCH --time=1:30:00",
        "#SBATCH --no-requeue", "#SBATCH --output=repro-slurm/%x-%j.out", "#SBATCH --error=repro-slurm/%x-%j.err",
        "#SBATCH --qos=high", "#SBATCH --exclusive"]
    assert plan.submit_argv == ["sbatch", "--parsable", "repro-slurm/repro-0123abcd.sbatch"]
    assert plan.site.submit_host.name == "login1"
    assert "/opt/site/python/bin/python3 -m repro.workloads.cnn" in plan.script  # the host's repro_python


def test_uneven_ranks_leave_the_distribution_to_slurm():
    plan = batch_plan("host", "srun", workers=3, inventory=cluster(slots=2))
    assert "#SBATCH --nodes=2" in plan.script and "#SBATCH --ntasks=3" in plan.script
    assert "--ntasks-per-node" not in plan.script


def test_a_secret_in_the_environment_never_reaches_the_script_only_sbatch_s_environment(tmp_path):
    env = {"WANDB_API_KEY": "s3cr3t-value-0123456789", "NCCL_DEBUG": "INFO"}
    plan = batch_plan("host", "srun", env=env)
    assert "s3cr3t" not in plan.script and "export WANDB_API_KEY  #" in plan.script
    assert "export NCCL_DEBUG=INFO" in plan.script
    assert plan.submit_env == {"WANDB_API_KEY": "s3cr3t-value-0123456789"}
    described = "\n".join(plan.describe())
    assert "s3cr3t" not in described and "standard input of sbatch's command: WANDB_API_KEY" in described
    assert not any("s3cr3t" in a for a in plan.submit_argv)


def test_sbatch_gets_the_secret_in_its_environment_from_stdin_never_in_an_argument(tmp_path, monkeypatch):
    """The planned submit command, run for real (a stand-in sbatch on PATH records its environment and arguments)."""
    from repro.launch.schedulers.slurm_client import SlurmClient

    seen = tmp_path / "seen"
    sbatch = tmp_path / "sbatch"
    sbatch.write_text(f'#!/bin/sh\nprintf "%s|%s" "$WANDB_API_KEY" "$*" > {seen}\n'
                      f'tr "\\0" " " < /proc/$$/cmdline >> {seen}; cat /proc/$PPID/cmdline | tr "\\0" " " >> {seen}\n'
                      'echo 4242\n')
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    secret = "s3cr3t-value-0123456789 with spaces and 'quotes'"
    plan = batch_plan("host", "srun", env={"WANDB_API_KEY": secret, "NCCL_DEBUG": "INFO"})
    import dataclasses

    with SlurmClient(dataclasses.replace(plan.site, submit_host=None)) as client:  # the submit host is this one
        assert client.submit(plan.submit_argv, plan.submit_env) == "4242"
    value, _, rest = seen.read_text().partition("|")
    assert value == secret and "--parsable" in rest and "s3cr3t" not in rest


@pytest.mark.parametrize("value", ["a\nb", "x\r", "nul\x00"])
def test_an_environment_value_that_would_add_a_line_is_refused(value):
    with pytest.raises(InputError, match="control character"):
        batch_plan("host", "srun", env={"SOME_SETTING": value})


def test_an_environment_value_with_shell_characters_stays_one_quoted_word(tmp_path):
    plan = batch_plan("host", "srun", env={"TF_XLA_FLAGS": "--xla_auto_jit=2 $(touch /tmp/pwned); `id`"})
    assert "export TF_XLA_FLAGS='--xla_auto_jit=2 $(touch /tmp/pwned); `id`'" in plan.script


def test_dry_run_describes_the_script_and_the_submit_command():
    text = "\n".join(batch_plan("charliecloud", "srun").describe())
    assert "# job script, written to repro-slurm/repro-0123abcd.sbatch on login1:" in text
    assert "    #SBATCH --job-name=repro-0123abcd" in text
    assert text.splitlines()[-1] == "[login1] sbatch --parsable repro-slurm/repro-0123abcd.sbatch"


def test_docker_uses_each_node_s_engine_and_the_default_elsewhere():
    plan = batch_plan("docker", "srun", inventory=cluster(docker_hosts=True))
    assert "    node1) docker -H unix:///run/docker-1.sock \"$@\" ;;" in plan.script
    assert '    *) docker "$@" ;;' in plan.script
    plain = batch_plan("docker", "srun", inventory=cluster(docker_hosts=False))
    assert 'repro_docker() { docker "$@"; }' in plain.script
