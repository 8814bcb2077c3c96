"""`repro bench --scheduler slurm` on the Slurm test cluster (h1 submits; slurmctld, a slurmd per host): each
point one job, with srun --mpi=pmix and the host runtime, with Docker workers and with Charliecloud, and with
mpirun inside the allocation; records name both nodes and the jobs; `repro compare` lines a Slurm run up with
a direct SSH run; Ctrl-C, the time limit and a killed slurmd give the right record and leave no job, process or
container behind, and `--resume` completes. Run with: pytest -m slurm tests/integration/test_bench_slurm.py

TensorFlow and Horovod run where the framework is the subject (Charliecloud's image under srun); the
scheduler's plumbing (placement, jobs, records, faults) is tested with the probe workload.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from repro.results.store import Store
from tests.cluster.fixtures import Cluster
from tests.cluster.slurm_jobs import cancel_all, job_processes, queue, slurm, wait_nodes_idle
from tests.integration.cli import ROOT, run_repro

pytestmark = [pytest.mark.cluster, pytest.mark.slurm, pytest.mark.docker, pytest.mark.tf]

STACK = "stacks/cpu-tf215.yaml"
TORCH_STACK = "stacks/cpu-torch213.yaml"
STEPS = ("--warmup-steps", "1", "--steps", "3", "--batch-size", "8")
SMALL = (*STEPS, "--repeats", "1")
PROBE = ("--workload", "probe", *SMALL)
# something to interrupt: far longer than any test waits (an hour of 0.1 s steps)
LONG = ("--workload", "probe", "--warmup-steps", "1", "--steps", "36000", "--step-time", "0.1", "--batch-size", "8",
        "--repeats", "1")


@pytest.fixture(scope="module")
def store(slurm_cluster: Cluster, cpu_image, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CPU stack's image (built once per session by `cpu_image`, which first provisions the local engine,
    the base image and the wheelhouse), verified, locked and shipped to h1's and h2's engines."""
    root = tmp_path_factory.mktemp("slurm-store")
    run_repro("up", STACK, "--hosts", str(slurm_cluster.inventory), "--store", str(root), "--quiet", timeout=3600)
    return root


@pytest.fixture(scope="module")
def inventory(slurm_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cluster's inventory with the hosts' python pointed at repro's own environment (the `host` runtime;
    the test hosts share the filesystem) and the jobs' files in a directory of this module."""
    data = yaml.safe_load(slurm_cluster.inventory.read_text())
    workers = data["all"]["children"]["workers"]
    for host in workers["hosts"].values():
        host["repro_python"] = sys.executable
    workers["vars"]["repro_slurm_workdir"] = str(tmp_path_factory.mktemp("slurm-jobs"))
    path = tmp_path_factory.mktemp("slurm-inventory") / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def bench(inventory: Path, store: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_repro("bench", "--stack", STACK, "--hosts", str(inventory), "--scheduler", "slurm",
                     "--store", str(store), *args, timeout=1800, check=check)


def new_records(store: Path, before: set[str]):
    return sorted((r for r in Store(store).records() if r.id not in before), key=lambda r: r.settings.workers)


def containers(cluster: Cluster) -> list[str]:
    found = []
    for host in cluster.hosts:
        out = subprocess.run(["docker", "-H", host.docker_host, "ps", "-a", "--format", "{{.Names}}"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        found += [f"{host.name}:{name}" for name in out.split()]
    return found


def lifelines(cluster: Cluster) -> list[str]:
    """The docker workers' FIFOs left in the nodes' TmpFS."""
    return sorted(str(p) for p in cluster.state_dir.glob("h*/tmp/repro-*.lifeline"))


def assert_nothing_left(cluster: Cluster, job_ids: list[str], *, lifeline: bool = True) -> None:
    """No job queued, no process of the jobs on any host, no container on any engine (nor a worker's FIFO)."""
    assert queue(cluster) == []
    deadline = time.monotonic() + 30
    while any(job_processes(int(j)) for j in job_ids) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [p for j in job_ids for p in job_processes(int(j))] == []
    assert containers(cluster) == []
    if lifeline:
        assert lifelines(cluster) == []


def assert_sweep_on_both_nodes(records, runtime: str, launcher: str = "srun") -> None:
    one, two = records
    assert [one.status, two.status] == ["ok", "ok"], (one.failure, two.failure)
    assert (one.runtime, two.runtime) == (runtime, runtime)
    assert one.batch.nodes == [r.host for r in one.ranks] == ["h1"]
    assert two.batch.nodes == sorted(r.host for r in two.ranks) == ["h1", "h2"]
    assert [h.name for h in two.hosts] == ["h1", "h2"] and two.settings.hosts == 2
    assert one.batch.id != two.batch.id and two.batch.state == "COMPLETED"
    slurm = two.batch.detail
    assert two.batch.scheduler == "slurm" and slurm.partition == "debug" and slurm.slurm_version == "22.05.8"
    assert "pmix" in slurm.mpi_plugins
    assert two.command[0] == launcher and "#SBATCH --nodes=2" in two.batch.script
    assert set(two.facts) == {"h1", "h2"} and two.facts["h2"].hostname == "h2"  # gathered through srun


def test_host_runtime_sweep_under_srun_pmix_runs_one_job_per_point_on_both_nodes(slurm_cluster, store, inventory):
    before = {r.id for r in Store(store).records()}
    proc = bench(inventory, store, "--runtime", "host", "--workers", "1,2", *PROBE)
    records = new_records(store, before)
    assert_sweep_on_both_nodes(records, "host")
    assert records[1].command[:2] == ["srun", "--mpi=pmix"] and records[1].batch.detail.pmi == "pmix"
    assert "Slurm job" in proc.stderr and "host facts of h1, h2 gathered through srun" in proc.stderr
    assert set(records[1].host_software) == {"h1", "h2"}  # the software probe ran on the nodes through srun
    assert_nothing_left(slurm_cluster, [r.batch.id for r in records])


def test_docker_workers_are_started_and_removed_inside_the_jobs(slurm_cluster, store, inventory):
    before = {r.id for r in Store(store).records()}
    bench(inventory, store, "--runtime", "docker", "--workers", "1,2", *PROBE)
    records = new_records(store, before)
    assert_sweep_on_both_nodes(records, "docker")
    assert records[1].image.image.id.startswith("sha256:") and "repro_docker_worker" in records[1].batch.script
    assert_nothing_left(slurm_cluster, [r.batch.id for r in records])


def test_charliecloud_ranks_run_in_the_converted_image_under_srun_pmix(slurm_cluster, store, inventory):
    before = {r.id for r in Store(store).records()}
    bench(inventory, store, "--runtime", "charliecloud", "--workers", "1,2", *SMALL, check=True)
    records = new_records(store, before)
    assert_sweep_on_both_nodes(records, "charliecloud")
    assert "ch-run" in records[1].batch.script and records[1].software["tensorflow"] == "2.15.1"
    assert_nothing_left(slurm_cluster, [r.batch.id for r in records])


@pytest.fixture(scope="module")
def torch_store(slurm_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CPU PyTorch stack's image (built unless the local engine has its tag), verified and locked. Not shipped:
    Charliecloud converts it from the local engine into a directory both nodes see."""
    root = tmp_path_factory.mktemp("slurm-torch-store")
    run_repro("up", TORCH_STACK, "--store", str(root), "--quiet", timeout=3600)
    return root


def test_charliecloud_runs_torch_cnn_ranks_of_the_torch_image_on_both_nodes_under_srun(slurm_cluster, torch_store,
                                                                                        inventory):
    proc = run_repro("bench", "--stack", TORCH_STACK, "--hosts", str(inventory), "--scheduler", "slurm", "--store",
                     str(torch_store), "--runtime", "charliecloud", "--workers", "2", "--workload", "torch_cnn",
                     "--model", "resnet20", *SMALL, timeout=1800)
    (rec,) = Store(torch_store).records()
    assert rec.status == "ok", (rec.failure, proc.stderr[-3000:])
    assert sorted(r.host for r in rec.ranks) == rec.batch.nodes == ["h1", "h2"] and "ch-run" in rec.batch.script
    assert rec.software["torch"] == "2.13.0+cpu" and rec.metrics["images_per_sec"] > 0
    assert_nothing_left(slurm_cluster, [rec.batch.id])


@pytest.mark.parametrize("launcher", ["srun", "torchrun"])
def test_lm_trains_with_fsdp_on_both_nodes_under_slurm(slurm_cluster, torch_store, inventory, launcher):
    """The transformer workload in the torch image, FSDP2 over gloo across the allocation's two nodes: srun starts
    the ranks, or srun starts one torchrun per node (repro.workloads.torchrun)."""
    before = {r.id for r in Store(torch_store).records()}
    proc = run_repro("bench", "--stack", "stacks/cpu-torch213.yaml", "--workload", "lm", "--model", "tiny",
                     "--hosts", str(inventory), "--scheduler",
                     "slurm", "--store", str(torch_store), "--runtime", "charliecloud", "--launcher", launcher,
                     "--workers", "2", "--parallelism", "fsdp", "--seq-len", "32", "--batch-size", "2",
                     "--warmup-steps", "1", "--steps", "3", "--repeats", "1", timeout=1800)
    (rec,) = [r for r in Store(torch_store).records() if r.id not in before]
    assert rec.status == "ok", (rec.failure, proc.stderr[-3000:])
    assert sorted(r.host for r in rec.ranks) == rec.batch.nodes == ["h1", "h2"]
    assert rec.settings.workload == "lm" and rec.settings.extra["parallelism"] == "fsdp"
    assert rec.metrics["tokens_per_sec"] > 0 and rec.metrics["peak_memory_bytes"] > 0
    assert rec.metrics["loss_first"] > 0 and rec.metrics["mfu"] is None
    assert_nothing_left(slurm_cluster, [rec.batch.id])


@pytest.mark.parametrize("runtime", ["host", "docker"])
def test_mpirun_inside_the_allocation_starts_its_daemons_through_slurm(slurm_cluster, store, inventory, runtime):
    before = {r.id for r in Store(store).records()}
    bench(inventory, store, "--runtime", runtime, "--launcher", "mpirun", "--workers", "2", *PROBE)
    (rec,) = new_records(store, before)
    assert rec.status == "ok", rec.failure
    assert rec.command[0] == "mpirun" and "-H" not in rec.command and "plm_rsh_args" not in rec.command
    assert sorted(r.host for r in rec.ranks) == rec.batch.nodes == ["h1", "h2"]
    assert_nothing_left(slurm_cluster, [rec.batch.id])


def test_compare_lines_the_slurm_run_up_with_a_direct_ssh_run(slurm_cluster, store, inventory, tmp_path):
    direct, batch = tmp_path / "direct", tmp_path / "slurm"
    for root in (direct, batch):
        root.mkdir()
        (root / "locks").symlink_to(store / "locks")
    run_repro("bench", "--stack", STACK, "--hosts", str(slurm_cluster.inventory), "--workers", "1,2", "--workload",
              "probe", *STEPS, "--repeats", "2", "--store", str(direct), timeout=1800)
    bench(inventory, batch, "--runtime", "docker", "--workers", "1,2", "--workload", "probe", *STEPS, "--repeats", "2")
    # the same stack, points and hosts: aligned without --allow-different-hardware (exit 0)
    aligned = json.loads(run_repro("compare", str(direct), str(batch), "--format", "json").stdout)
    rows = sorted(aligned["throughput"], key=lambda r: r["point"]["workers"])
    assert [(r["point"]["workload"], r["point"]["workers"], r["point"]["hosts"]) for r in rows] == [
        ("probe", 1, 1), ("probe", 2, 2)], rows
    for row in rows:  # each point measured on both sides, 2 runs each, and a ratio of the two
        assert (row["runs_old"], row["runs_new"], row["failed_old"], row["failed_new"]) == (2, 2, 0, 0), row
        assert row["ratio"] == pytest.approx(row["images_per_sec_new"] / row["images_per_sec_old"]), row
    assert aligned["old_only"] == aligned["new_only"] == [] and aligned["changes"]["hardware"] == []
    table = run_repro("compare", str(direct), str(batch)).stdout
    assert "NEW/OLD" in table and "runs on different hardware" not in table, table
    assert all(r.batch is None for r in Store(direct).records())
    assert all(r.batch is not None and r.batch.scheduler == "slurm" for r in Store(batch).records())


def run_until(inventory: Path, store: Path, args: list[str], started: str, log: Path, timeout: float = 600):
    """Start `repro bench` and return it once its stderr (written to `log`) shows `started`."""
    handle = log.open("w")
    # SIGINT at its default, as in a terminal: scripts/test.sh runs pytest in the background, where a
    # non-interactive shell leaves SIGINT ignored, and an ignored SIGINT is inherited
    argv = [sys.executable, "-m", "repro", "bench", "--stack", STACK, "--hosts", str(inventory), "--scheduler", "slurm",
            "--store", str(store), *args]
    proc = subprocess.Popen(["env", "--default-signal=INT", *argv], cwd=ROOT, text=True, stdout=subprocess.DEVNULL,
                            stderr=handle)
    deadline = time.monotonic() + timeout
    while started not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"never saw {started!r}:\n{log.read_text()}"
        time.sleep(0.5)
    return proc, log


def test_ctrl_c_cancels_the_job_and_records_the_point_as_interrupted(slurm_cluster, store, inventory, tmp_path):
    before = {r.id for r in Store(store).records()}
    proc, log = run_until(inventory, store, ["--runtime", "docker", "--workers", "2", *LONG], "running (h[1-2])",
                          tmp_path / "bench.log")
    try:
        time.sleep(15)  # the ranks are in their containers, stepping
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=180) == 130, log.read_text()
    finally:
        if proc.poll() is None:  # never leave the job to the next test
            proc.kill()
            cancel_all(slurm_cluster)
    (rec,) = new_records(store, before)
    assert rec.status == "failed" and rec.failure.startswith("interrupted"), rec.failure
    assert rec.batch.state == "CANCELLED" and rec.batch.nodes == ["h1", "h2"]
    assert "--resume" in log.read_text()
    assert_nothing_left(slurm_cluster, [rec.batch.id])


def test_an_scancel_from_outside_gives_a_failed_record_saying_so(slurm_cluster, store, inventory, tmp_path):
    """An administrator's (or the user's own) scancel of the running job: the point is a failed record saying
    so, and the cancelled job leaves no job, process, container or worker FIFO behind."""
    before = {r.id for r in Store(store).records()}
    proc, log = run_until(inventory, store, ["--runtime", "docker", "--workers", "2", *LONG],
                          "running (h[1-2])", tmp_path / "bench.log")
    try:
        time.sleep(15)  # the ranks are in their containers, stepping
        (job,) = queue(slurm_cluster)
        slurm(slurm_cluster, ["scancel", job.split()[0]])
        assert proc.wait(timeout=300) == 1, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            cancel_all(slurm_cluster)
    (rec,) = new_records(store, before)
    assert rec.status == "failed" and "cancelled outside repro" in rec.failure, rec.failure
    assert rec.batch.state == "CANCELLED" and rec.batch.id == job.split()[0]
    assert "cancelled outside repro" in log.read_text()
    assert_nothing_left(slurm_cluster, [rec.batch.id])


@pytest.mark.slow
def test_the_time_limit_gives_a_timed_out_record(slurm_cluster, store, inventory):
    before = {r.id for r in Store(store).records()}
    proc = bench(inventory, store, "--runtime", "docker", "--workers", "2", *LONG, "--time-limit", "1", check=False)
    assert proc.returncode == 1, proc.stderr
    (rec,) = new_records(store, before)
    assert rec.status == "failed" and rec.failure.startswith("timed out"), rec.failure
    assert (rec.batch.state, rec.batch.detail.reason, rec.batch.detail.time_limit) == ("TIMEOUT", "TimeLimit",
                                                                                      "00:01:00")
    # no job, process or container; the worker's FIFO is usually removed by its EXIT trap, but when Slurm's
    # SIGKILL (KillWait after the SIGTERM) comes first it stays until the next repro job on that node reaps it
    assert_nothing_left(slurm_cluster, [rec.batch.id], lifeline=False)


@pytest.mark.slow
def test_a_killed_slurmd_fails_the_point_naming_the_node_and_resume_completes(slurm_cluster, store, inventory,
                                                                             tmp_path):
    before = {r.id for r in Store(store).records()}
    # 300 steps of 0.1 s: the 2-worker point is still stepping when h2's slurmd is killed
    args = ["--runtime", "docker", "--workload", "probe", "--workers", "1,2", "--warmup-steps", "1", "--steps", "300",
            "--step-time", "0.1", "--batch-size", "8", "--repeats", "1"]
    proc, log = run_until(inventory, store, args, "running (h[1-2])", tmp_path / "bench.log", timeout=900)
    try:
        time.sleep(8)
        slurm_cluster.slurmd_kill("h2")
        assert proc.wait(timeout=300) == 1, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        slurm_cluster.slurmd_start("h2")
    one, two = new_records(store, before)
    assert one.status == "ok" and two.status == "failed", (one.failure, two.failure)
    assert two.failure == "node h2 failed under the job (Slurm NODE_FAIL, NodeDown)"
    assert two.batch.state == "NODE_FAIL" and two.batch.detail.failed_nodes == ["h2"]
    wait_nodes_idle(slurm_cluster)
    # the container on h2 went with its worker; its FIFO stays until the next repro job on h2
    assert_nothing_left(slurm_cluster, [two.batch.id], lifeline=False)

    resumed = bench(inventory, store, *args, "--resume")
    assert "skipped (--resume)" in resumed.stderr
    after = new_records(store, before)
    assert sorted((r.settings.workers, r.status) for r in after) == [(1, "ok"), (2, "failed"), (2, "ok")]
    assert_nothing_left(slurm_cluster, [r.batch.id for r in after])


def test_pmi2_is_refused_before_anything_is_submitted(slurm_cluster, store, inventory):
    jobs_before = slurm_cluster.slurm.jobcomp.read_text() if slurm_cluster.slurm.jobcomp.exists() else ""
    proc = bench(inventory, store, "--runtime", "host", "--workers", "2", "--slurm-mpi", "pmi2", *PROBE, check=False)
    assert proc.returncode == 1
    assert "refusing to submit: the MPI was built without PMI-2" in proc.stderr, proc.stderr
    checks = [line for line in slurm_cluster.slurm.jobcomp.read_text().removeprefix(jobs_before).splitlines()
              if "Name=repro-check " not in line]
    assert checks == []  # only the checks ran (srun on the nodes); no job of a point


def test_dry_run_prints_the_job_script_and_submits_nothing(slurm_cluster, store, inventory):
    workdir = Path(yaml.safe_load(inventory.read_text())["all"]["children"]["workers"]["vars"]["repro_slurm_workdir"])
    before = sorted(workdir.iterdir())
    jobs = slurm_cluster.slurm.jobcomp.read_text() if slurm_cluster.slurm.jobcomp.exists() else ""
    proc = bench(inventory, store, "--runtime", "charliecloud", "--workers", "2", *SMALL, "--dry-run")
    assert proc.stdout.count("#!/bin/bash") == 1 and "ch-run" in proc.stdout
    assert f"[h1] env SLURM_CONF={slurm_cluster.slurm.conf} sbatch --parsable {workdir}/repro-dry-run.sbatch" \
        in proc.stdout
    assert sorted(workdir.iterdir()) == before and queue(slurm_cluster) == []
    assert (slurm_cluster.slurm.jobcomp.read_text() if slurm_cluster.slurm.jobcomp.exists() else "") == jobs
