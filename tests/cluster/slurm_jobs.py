"""Submit and follow Slurm jobs on the test cluster the way a user on a login node does: every command
runs inside the submit host (h1), where SLURM_CONF points at the cluster's slurm.conf.

There is no slurmdbd (no sacct): a job is followed with `scontrol show job` (finished jobs stay there
for MinJobAge=300 s) and `squeue`.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from tests.cluster.fixtures import Cluster

# Job states after which a job never runs again (a requeued job goes back to PENDING instead).
END_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                        "BOOT_FAIL", "DEADLINE", "PREEMPTED"})
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9/:_]*)=")


class SlurmCommandError(RuntimeError):
    """A Slurm client command exited non-zero; the message carries its output."""


def slurm(cluster: Cluster, argv: Sequence[str], *, timeout: float = 120,
          input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a Slurm client command (srun, sbatch, squeue, ...) on the cluster's submit host."""
    assert cluster.slurm is not None, f"cluster {cluster.name} has no Slurm (up --slurm)"
    proc = cluster.exec(cluster.slurm.submit_host, list(argv), timeout=timeout, input=input)
    if check and proc.returncode != 0:
        raise SlurmCommandError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return proc


def parse_job(line: str) -> dict[str, str]:
    """`scontrol show job -o` (one line of KEY=VALUE pairs) as a dict; values may hold spaces."""
    marks = list(_KEY.finditer(line.strip()))
    fields: dict[str, str] = {}
    for here, after in zip(marks, [*marks[1:], None], strict=True):
        end = after.start() if after else len(line.strip())
        fields[here.group(1)] = line.strip()[here.end():end].strip()
    return fields


def submit(cluster: Cluster, script: str, args: Sequence[str] = ()) -> int:
    """sbatch a batch script (given as text, read from stdin); returns the job id."""
    out = slurm(cluster, ["sbatch", "--parsable", *args], input=script).stdout.strip()
    return int(out.split(";")[0])


def show_job(cluster: Cluster, job_id: int) -> dict[str, str]:
    return parse_job(slurm(cluster, ["scontrol", "show", "job", "-o", str(job_id)]).stdout)


def wait_job(cluster: Cluster, job_id: int, *, states: frozenset[str] = END_STATES,
             timeout: float = 180) -> dict[str, str]:
    """Follow a job with scontrol until its JobState is one of `states`; returns its last record."""
    deadline = time.monotonic() + timeout
    while True:
        job = show_job(cluster, job_id)
        if job.get("JobState") in states:
            return job
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} still {job.get('JobState')} after {timeout:.0f}s: {job}")
        time.sleep(0.5)


def queue(cluster: Cluster) -> list[str]:
    """Jobs still known to squeue as pending, running, completing, ... (`JOBID STATE` lines)."""
    return [line for line in slurm(cluster, ["squeue", "-h", "-o", "%i %T"]).stdout.splitlines() if line.strip()]


def job_processes(job_id: int) -> list[str]:
    """Processes that belong to the job on any host (the hosts share the machine's process table): its
    slurmstepds and every process whose environment carries SLURM_JOB_ID=job_id."""
    found = []
    marker = f"SLURM_JOB_ID={job_id}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            environ = (proc / "environ").read_bytes().split(b"\0")
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            continue
        if cmdline.startswith(f"slurmstepd: [{job_id}.") or marker in environ:
            found.append(f"{proc.name} {cmdline}")
    return found


def cancel_all(cluster: Cluster, *, timeout: float = 60) -> list[str]:
    """scancel every job of the cluster and wait until squeue shows none; returns what was still queued."""
    left = queue(cluster)
    if left:
        slurm(cluster, ["scancel", "--user", "root"], check=False)
    deadline = time.monotonic() + timeout
    while queue(cluster):
        if time.monotonic() > deadline:
            raise TimeoutError(f"jobs still queued {timeout:.0f}s after scancel: {queue(cluster)}")
        time.sleep(0.5)
    return left


def wait_nodes_idle(cluster: Cluster, *, timeout: float = 120) -> None:
    """Wait until every node is idle (a node just back from a fault, or still completing a job)."""
    deadline = time.monotonic() + timeout
    while True:
        states = slurm(cluster, ["sinfo", "-h", "-N", "-o", "%N %T"]).stdout.split("\n")
        if all(line.split()[1] == "idle" for line in states if line.strip()):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"nodes not idle after {timeout:.0f}s: {states}")
        time.sleep(0.5)
