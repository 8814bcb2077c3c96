"""The Slurm test cluster is a real Slurm: Debian's slurmctld and one slurmd per namespace host, munge
authentication, PMIx wire-up of MPI ranks across hosts, batch jobs followed to their end states, scancel,
a node dying or losing its link under a job, and Charliecloud containers started by srun (time limits: through
repro, in test_bench_slurm.py). Every test leaves no job queued or running.
Run with: pytest -m slurm tests/integration/test_slurm_cluster.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.cluster.fixtures import SCRIPT, Cluster, cluster_down, cluster_env
from tests.cluster.slurm_jobs import (
    cancel_all,
    job_processes,
    queue,
    show_job,
    slurm,
    submit,
    wait_job,
    wait_nodes_idle,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slurm]

REPO = Path(__file__).resolve().parents[2]

MPI_PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    char host[256] = "?";
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    int sum = 0, one = rank + 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("RANK %d SIZE %d HOST %s SUM %d\n", rank, size, host, sum);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(autouse=True)
def empty_queue(slurm_cluster: Cluster) -> Iterator[None]:
    """Every test starts with idle nodes and an empty queue, and leaves them so even when it fails."""
    wait_nodes_idle(slurm_cluster)
    assert queue(slurm_cluster) == []
    yield
    cancel_all(slurm_cluster)
    wait_nodes_idle(slurm_cluster)


def lines(text: str) -> list[str]:
    return sorted(line.strip() for line in text.splitlines() if line.strip())


def wait_for(predicate, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        time.sleep(0.3)


def running_on_both_hosts(cluster: Cluster, job_id: int, program: str) -> bool:
    """The job runs `program` (argv[0]) on h1 and on h2, each in its host's network namespace."""
    hosts = set()
    for line in job_processes(job_id):
        pid, _, cmdline = line.partition(" ")
        if cmdline.split()[:1] == [program]:
            hosts.update(h.name for h in cluster.hosts if pid in _netns_pids(h.namespace))
    return hosts == {"h1", "h2"}


def compile_mpi_program(directory: Path) -> Path:
    source = directory / "ranks.c"
    source.write_text(MPI_PROGRAM)
    subprocess.run(["mpicc", "-O1", "-o", str(directory / "ranks"), str(source)], check=True, timeout=120)
    return directory / "ranks"


def _netns_pids(namespace: str) -> set[str]:
    out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True, timeout=30).stdout
    return set(out.split())


# -- the cluster ----------------------------------------------------------------------------------


def test_inventory_and_description_tell_how_to_reach_slurm(slurm_cluster: Cluster) -> None:
    info = slurm_cluster.slurm
    assert info is not None and info.conf.is_file()
    assert info.version.startswith("22.05.") and info.partition == "debug" and info.submit_host == "h1"
    inventory = yaml.safe_load(slurm_cluster.inventory.read_text())
    group = inventory["all"]["children"]["workers"]
    assert group["vars"] == {
        "repro_scheduler": "slurm", "repro_slurm_conf": str(info.conf), "repro_slurm_partition": "debug",
        "repro_slurm_submit_host": "h1", "repro_slurm_version": info.version,
    }
    assert sorted(group["hosts"]) == ["h1", "h2"]
    status = slurm_cluster.status()
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.count("slurmd:ok(idle)") == 2


def test_ssh_sessions_on_a_host_find_slurm_like_on_a_login_node(slurm_cluster: Cluster) -> None:
    argv = slurm_cluster.ssh_argv(slurm_cluster.host("h2").address)
    proc = slurm_cluster.exec("h1", [*argv, "sinfo -h -N -o '%N %P %T'"])  # ssh runs a shell command line
    assert proc.returncode == 0, proc.stderr
    assert lines(proc.stdout) == ["h1 debug* idle", "h2 debug* idle"]


def test_srun_lands_on_both_hosts(slurm_cluster: Cluster) -> None:
    proc = slurm(slurm_cluster, ["srun", "-N2", "-l", "sh", "-c", 'echo "$(hostname) $SLURMD_NODENAME $(hostname -I)"'])
    h1, h2 = slurm_cluster.host("h1").address, slurm_cluster.host("h2").address
    assert lines(proc.stdout) == [f"0: h1 h1 {h1}", f"1: h2 h2 {h2}"]


def test_srun_lists_pmix(slurm_cluster: Cluster) -> None:
    proc = slurm(slurm_cluster, ["srun", "--mpi=list"])
    out = proc.stdout + proc.stderr
    assert "pmix" in out.split() and "pmix_v4" in out


def test_mpi_program_under_srun_pmix_gets_one_rank_per_host(slurm_cluster: Cluster, tmp_path: Path) -> None:
    proc = slurm(slurm_cluster, ["srun", "-N2", "--mpi=pmix", str(compile_mpi_program(tmp_path))])
    assert lines(proc.stdout) == ["RANK 0 SIZE 2 HOST h1 SUM 3", "RANK 1 SIZE 2 HOST h2 SUM 3"]


@pytest.mark.parametrize("mpi", [[], ["--mpi=pmi2"]], ids=["MpiDefault=none", "pmi2"])
def test_debian_open_mpi_aborts_under_srun_without_pmix(slurm_cluster: Cluster, tmp_path: Path,
                                                        mpi: list[str]) -> None:
    # Debian's Open MPI 4.1.4 has PMIx only (no PMI-1/PMI-2): every rank aborts in MPI_Init.
    proc = slurm(slurm_cluster, ["srun", "-N2", *mpi, str(compile_mpi_program(tmp_path))], check=False)
    assert proc.returncode != 0 and "RANK" not in proc.stdout, proc.stdout
    assert "OMPI was not built with SLURM's PMI support" in proc.stdout + proc.stderr


def test_mpirun_inside_an_allocation_places_one_rank_per_node(slurm_cluster: Cluster, tmp_path: Path) -> None:
    # Open MPI's mpirun starts its daemons through srun (plm/slurm) on the allocation's nodes, no SSH.
    proc = slurm(slurm_cluster, ["salloc", "-N2", "mpirun", "--allow-run-as-root", str(compile_mpi_program(tmp_path))])
    assert lines(proc.stdout) == ["RANK 0 SIZE 2 HOST h1 SUM 3", "RANK 1 SIZE 2 HOST h2 SUM 3"]


@pytest.mark.tf
def test_horovod_under_srun_pmix_with_debian_open_mpi(slurm_cluster: Cluster) -> None:
    program = ("import socket, horovod.tensorflow as hvd, tensorflow as tf; hvd.init(); "
               "s = int(hvd.allreduce(tf.constant([hvd.rank() + 1.0]), op=hvd.Sum).numpy()[0]); "
               "print('HVD', hvd.rank(), hvd.size(), socket.gethostname(), hvd.mpi_enabled(), s)")
    proc = slurm(slurm_cluster, ["srun", "-N2", "--mpi=pmix", sys.executable, "-c", program], timeout=300)
    got = sorted(line for line in proc.stdout.splitlines() if line.startswith("HVD "))
    assert got == ["HVD 0 2 h1 True 3", "HVD 1 2 h2 True 3"], proc.stdout + proc.stderr


# -- batch jobs and their end states --------------------------------------------------------------


def test_sbatch_job_is_followed_until_it_completes(slurm_cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    job_id = submit(slurm_cluster, "#!/bin/sh\nsleep 2\nsrun -l hostname\n", ["-N2", "-J", "repro-ok", "-o", str(out)])
    assert any(line.split()[0] == str(job_id) for line in queue(slurm_cluster))  # squeue sees it
    job = wait_job(slurm_cluster, job_id, timeout=120)
    assert (job["JobState"], job["ExitCode"], job["NodeList"]) == ("COMPLETED", "0:0", "h[1-2]")
    assert job["Partition"] == "debug"
    assert job["JobName"] == "repro-ok" and job["BatchHost"] == "h1"
    assert lines(out.read_text()) == ["0: h1", "1: h2"]
    assert queue(slurm_cluster) == []
    record = [line for line in slurm_cluster.slurm.jobcomp.read_text().splitlines() if f"JobId={job_id} " in line]
    assert len(record) == 1 and "JobState=COMPLETED" in record[0] and "NodeList=h[1-2]" in record[0]


def test_a_failing_batch_script_gives_failed_with_its_exit_code(slurm_cluster: Cluster, tmp_path: Path) -> None:
    job_id = submit(slurm_cluster, "#!/bin/sh\nexit 3\n", ["-N1", "-o", str(tmp_path / "job.out")])
    job = wait_job(slurm_cluster, job_id, timeout=120)
    assert (job["JobState"], job["Reason"], job["ExitCode"]) == ("FAILED", "NonZeroExitCode", "3:0")


def test_scancel_of_a_running_job_leaves_no_process(slurm_cluster: Cluster, tmp_path: Path) -> None:
    job_id = submit(slurm_cluster, "#!/bin/sh\nsrun sleep 300\n", ["-N2", "-o", str(tmp_path / "job.out")])
    wait_job(slurm_cluster, job_id, states=frozenset({"RUNNING"}), timeout=60)
    wait_for(lambda: running_on_both_hosts(slurm_cluster, job_id, "/usr/bin/sleep"), "sleep on h1 and h2")
    slurm(slurm_cluster, ["scancel", str(job_id)])
    job = wait_job(slurm_cluster, job_id, timeout=60)
    assert job["JobState"] == "CANCELLED"
    wait_for(lambda: job_processes(job_id) == [], f"no process of job {job_id}", timeout=30)
    assert queue(slurm_cluster) == []


# The time limit (TIMEOUT, Reason=TimeLimit, every process gone) is tested once, through repro, by
# tests/integration/test_bench_slurm.py::test_the_time_limit_gives_a_timed_out_record: Slurm counts limits in
# whole minutes and checks them every 30 s, so each such test costs 60-100 s, and that one fails too if this
# cluster does not enforce a limit.


def _a_2_node_job_meets(slurm_cluster: Cluster, tmp_path: Path, fault: str) -> tuple[str, Path]:
    """Submit `srun sleep 300` on both nodes, inject `fault` on h2 once the sleeps run, and check that slurmctld
    marks h2 DOWN ("Not responding") and the job NODE_FAIL; the job's id and its output file."""
    out = tmp_path / "job.out"
    job_id = submit(slurm_cluster, "#!/bin/sh\nsrun sleep 300\n",
                    ["-N2", "--no-requeue", "-o", str(out)])  # Slurm's default would requeue the job
    wait_job(slurm_cluster, job_id, states=frozenset({"RUNNING"}), timeout=60)
    wait_for(lambda: running_on_both_hosts(slurm_cluster, job_id, "/usr/bin/sleep"), "sleep on h1 and h2")
    with slurm_cluster.faulted(fault, "h2"):
        job = wait_job(slurm_cluster, job_id, timeout=slurm_cluster.slurm.slurmd_timeout_s * 3 + 60)
        assert (job["JobState"], job["Reason"], job["NodeList"]) == ("NODE_FAIL", "NodeDown", "h[1-2]")
        node = slurm(slurm_cluster, ["scontrol", "show", "node", "-o", "h2"]).stdout
        assert "State=DOWN" in node and "Reason=Not responding" in node
    return job_id, out


@pytest.mark.slow
def test_a_node_dying_under_a_job_gives_node_fail_naming_it(slurm_cluster: Cluster, tmp_path: Path) -> None:
    job_id, out = _a_2_node_job_meets(slurm_cluster, tmp_path, "slurmd-kill")
    assert "Node failure on h2" in out.read_text()
    wait_for(lambda: job_processes(job_id) == [], f"no process of job {job_id}", timeout=30)
    assert show_job(slurm_cluster, job_id)["JobState"] == "NODE_FAIL"


def test_a_node_losing_its_link_under_a_job_gives_node_fail_and_returns(slurm_cluster: Cluster,
                                                                      tmp_path: Path) -> None:
    """h2's link goes down mid-job (its slurmd and the job's processes keep running, unreachable): slurmctld
    marks h2 DOWN and the job NODE_FAIL; once the link is back, h2's part of the job is killed and the node
    returns to service (ReturnToService=2) without anyone restarting anything."""
    job_id, _ = _a_2_node_job_meets(slurm_cluster, tmp_path, "link-down")
    wait_for(lambda: job_processes(job_id) == [], f"no process of job {job_id}", timeout=90)
    wait_nodes_idle(slurm_cluster)
    assert show_job(slurm_cluster, job_id)["JobState"] == "NODE_FAIL"


# -- Charliecloud ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def charliecloud_image(slurm_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """debian:12 from h1's Docker engine (put there by repro/image/base.py) as a Charliecloud directory
    image on the shared filesystem, with a file that exists only inside the image; made once."""
    if shutil.which("ch-convert") is None or shutil.which("ch-run") is None:
        reason = "Charliecloud (charliecloud-runtime, charliecloud-builders; scripts/setup.sh test) is not installed"
        if os.environ.get("REPRO_TESTS_STRICT", "") not in ("", "0"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    image = tmp_path_factory.mktemp("charliecloud") / "debian12"
    env = dict(os.environ, DOCKER_HOST=slurm_cluster.host("h1").docker_host or "", USER="root")
    proc = subprocess.run(["ch-convert", "-i", "docker", "debian:12", str(image)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (image / "repro-inside-image").write_text("inside the image\n")
    try:
        yield image
    finally:
        shutil.rmtree(image, ignore_errors=True)


def test_srun_starts_charliecloud_containers_on_both_hosts(slurm_cluster: Cluster, charliecloud_image: Path) -> None:
    proc = slurm(slurm_cluster, ["srun", "-N2", "-l", "ch-run", str(charliecloud_image), "--",
                                 "sh", "-c", 'echo "$(hostname) $(cat /repro-inside-image) $SLURM_PROCID"'])
    assert lines(proc.stdout) == ["0: h1 inside the image 0", "1: h2 inside the image 1"]


def test_charliecloud_ranks_under_pmix_read_their_rank(slurm_cluster: Cluster, charliecloud_image: Path) -> None:
    # The PMIx server's rendezvous directory (SlurmdSpoolDir/pmix.JOB.STEP) and the client directory
    # (TmpFS/spmix_appdir_UID_JOB.STEP) are bound into the container, as an MPI inside it needs them.
    script = ('exec ch-run -t -b "$PMIX_SERVER_TMPDIR" -b "$SLURM_TMPFS" "$0" -- sh -c '
              '\'echo "$PMIX_RANK $PMIX_NAMESPACE $(hostname) $(ls -d "$PMIX_SERVER_TMPDIR")"\'')
    tmpfs = f"{slurm_cluster.state_dir}/$SLURMD_NODENAME/tmp"
    proc = slurm(slurm_cluster, ["srun", "-N2", "-l", "--mpi=pmix", "sh", "-c",
                                 f'SLURM_TMPFS="{tmpfs}"; {script}', str(charliecloud_image)])
    got = lines(proc.stdout)
    assert [line.split()[:2] for line in got] == [["0:", "0"], ["1:", "1"]], proc.stdout + proc.stderr
    assert all(line.split()[2].startswith("slurm.pmix.") for line in got)
    assert [line.split()[3] for line in got] == ["h1", "h2"]
    assert [line.split()[4] for line in got] == [
        f"{slurm_cluster.state_dir}/{h}/slurmd/spool/pmix.{got[0].split()[2].rsplit('.', 2)[1]}.0/"
        for h in ("h1", "h2")]


# -- lifecycle ------------------------------------------------------------------------------------


def _leftovers(name: str, state_dir: Path) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[-1].split()[0] != "Z" and f"{state_dir}/" in cmdline:
            found.append(f"{proc.name} {cmdline}")
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    found += [line for line in netns.splitlines() if line.startswith(f"{name}-h")]
    return found


INTERRUPTED_SESSION = '''
import json, os, pathlib, signal
from tests.cluster.slurm_jobs import submit, wait_job

def test_interrupted_with_a_job_running(slurm_cluster, tmp_path):
    job = submit(slurm_cluster, "#!/bin/sh\\nsrun sleep 300\\n", ["-N2", "-o", str(tmp_path / "job.out")])
    wait_job(slurm_cluster, job, states=frozenset({"RUNNING"}))
    pathlib.Path(os.environ["REPRO_CHILD_MARKER"]).write_text(
        json.dumps({"state_dir": str(slurm_cluster.state_dir), "job": job}))
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of the session
'''


def test_an_interrupted_session_leaves_no_job_process_or_state(slurm_cluster: Cluster, tmp_path: Path) -> None:
    name = "slmint"
    (tmp_path / "test_child.py").write_text(INTERRUPTED_SESSION)
    marker = tmp_path / "marker.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPRO_CLUSTER_", "REPRO_SLURM_CLUSTER_"))}
    env.update(REPRO_SLURM_CLUSTER_NAME=name, REPRO_CHILD_MARKER=str(marker),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    try:
        child = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "tests.cluster.fixtures", "-p", "no:cacheprovider", "-q",
             str(tmp_path / "test_child.py")], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=900, check=False)
        assert child.returncode == 2, child.stdout + child.stderr  # pytest: interrupted
        seen = json.loads(marker.read_text())
        state_dir = Path(seen["state_dir"])
        assert state_dir.name.endswith(name)
        assert _leftovers(name, state_dir) == [] and not state_dir.exists()
        assert job_processes(seen["job"]) == []
    finally:
        cluster_down(name, state_dir=Path(f"/tmp/repro-cluster-{name}"))


def test_down_with_a_running_job_and_a_failed_up_leave_nothing(slurm_cluster: Cluster, tmp_path: Path) -> None:
    name, state_dir = "slmdown", Path("/tmp/repro-cluster-slmdown")
    env = cluster_env(name, state_dir)
    try:
        up = subprocess.run(["bash", str(SCRIPT), "up", "2", "--slurm"], env=env, capture_output=True, text=True,
                            timeout=300, check=False)
        assert up.returncode == 0, up.stderr
        marker = tmp_path / "started"
        job = subprocess.run(
            ["bash", str(SCRIPT), "exec", "h1", "sbatch", "--parsable", "-N2", "-o", str(tmp_path / "job.out"),
             "--wrap", f"srun sh -c 'touch {marker}.$SLURM_PROCID; exec sleep 300'"],
            env=env, capture_output=True, text=True, timeout=60, check=True)
        job_id = int(job.stdout.strip())
        wait_for(lambda: (tmp_path / "started.0").exists() and (tmp_path / "started.1").exists(), "job started")
        assert job_processes(job_id)
        subprocess.run(["bash", str(SCRIPT), "down"], env=env, capture_output=True, text=True, timeout=300, check=True)
        assert _leftovers(name, state_dir) == [] and job_processes(job_id) == [] and not state_dir.exists()
        # A failed up (slurmctld cannot answer within 0 s) tears down what it started.
        failed = subprocess.run(["bash", str(SCRIPT), "up", "2", "--slurm"],
                                env={**env, "REPRO_CLUSTER_SLURM_TIMEOUT": "0"},
                                capture_output=True, text=True, timeout=300, check=False)
        assert failed.returncode != 0 and "tearing the partial cluster down" in failed.stderr, failed.stderr
        assert _leftovers(name, state_dir) == [] and not state_dir.exists()
    finally:
        cluster_down(name, state_dir=state_dir)

