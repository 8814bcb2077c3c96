"""One point as one Slurm job: write the script, sbatch it, follow it with scontrol until it ends, read its
output, and say how it ended; Ctrl-C cancels it (scancel) and waits until Slurm has let it go. The reasons a
job failed are decided here from Slurm's own record (pure functions at the end)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from repro.errors import HostError, LaunchError
from repro.hosts.inventory import Host
from repro.launch import diagnose
from repro.launch.nccl_files import joined, read_argv
from repro.launch.placement import Placement
from repro.launch.runtimes import JobInterrupted, Outcome
from repro.launch.runtimes.watch import PROGRESS_PREFIX
from repro.launch.schedulers.sbatch import BatchPlan
from repro.launch.schedulers.slurm_client import END_STATES, SlurmClient
from repro.results.provenance import SlurmJob
from repro.results.record import BatchJob
from repro.secrets import redact_argv, redact_text

POLL_S = 2.0
GRACE_S = 120.0  # Slurm ends a job at its time limit itself (checked every ~30 s); repro waits this much longer
CANCEL_WAIT_S = 90.0
_NODE_FAILURE = re.compile(r"srun: error: Node failure on (\S+)")
_TASK_EXIT = re.compile(r"srun: error: (\S+): tasks? ([0-9,-]+): Exited with exit code (\d+)")
_TASK_KILLED = re.compile(r"srun: error: (\S+): tasks? ([0-9,-]+): (Killed|Terminated|Segmentation fault.*)")
_NO_PMI = re.compile(r"OMPI was not built with SLURM's PMI support")


def seconds(limit: str | None) -> float | None:
    """Slurm's time limit text (MM, MM:SS, HH:MM:SS, D-HH:MM:SS, UNLIMITED) in seconds; None: none or unknown."""
    if not limit or limit.upper() in ("UNLIMITED", "INFINITE", "NONE", "PARTITION_LIMIT"):
        return None
    days, _, rest = limit.rpartition("-")
    parts = [int(p) for p in rest.split(":") if p.isdigit()]
    if not parts:
        return None
    if not days:
        h, m, s = ([0] * (3 - len(parts)) + parts) if len(parts) > 1 else (0, parts[0], 0)
    else:
        h, m, s = [*parts, 0, 0][:3]
    return (int(days or 0) * 24 + h) * 3600 + m * 60 + s


def _clean(value: str | None) -> str | None:
    return None if value in (None, "", "(null)", "None", "Unknown", "N/A") else value


def job_record(job_id: str, fields: dict[str, str] | None, plan: BatchPlan, *, nodes: list[str],
               version: str | None, plugins: list[str], failed_nodes: list[str]) -> BatchJob:
    """The record's batch job from Slurm's fields of the job (pure): its SlurmJob as the typed part."""
    f = fields or {}
    slurm = SlurmJob(
        job_id=job_id, job_name=_clean(f.get("JobName")) or plan.job_name, partition=_clean(f.get("Partition")),
        account=_clean(f.get("Account")), nodes=nodes, node_list=_clean(f.get("NodeList")),
        state=_clean(f.get("JobState")), reason=_clean(f.get("Reason")), exit_code=_clean(f.get("ExitCode")),
        time_limit=_clean(f.get("TimeLimit")), submit_time=_clean(f.get("SubmitTime")),
        start_time=_clean(f.get("StartTime")), end_time=_clean(f.get("EndTime")),
        submit_host=plan.site.submit_name if plan.site else None, submit_command=redact_argv(plan.submit_argv),
        slurm_version=version, mpi_plugins=plugins, pmi=plan.allocation.pmi if plan.launcher_name == "srun"
        and plan.allocation else None, failed_nodes=failed_nodes)
    return BatchJob(scheduler="slurm", id=job_id, nodes=nodes, state=slurm.state, script=redact_text(plan.script),
                    detail=slurm)


def returncode(exit_code: str | None) -> int | None:
    """The batch script's exit status from Slurm's CODE:SIGNAL (a signal as 128 + its number)."""
    if not exit_code or ":" not in exit_code:
        return None
    code, _, sig = exit_code.partition(":")
    if not code.isdigit():
        return None
    return int(code) or (128 + int(sig) if sig.isdigit() and int(sig) else 0)


def _ranks(spec: str) -> str:
    return f"rank {spec}" if spec.isdigit() else f"ranks {spec}"


def srun_reason(text: str) -> str | None:
    """What srun itself said about failed tasks, in one line (pure)."""
    if _NO_PMI.search(text):
        return ("Open MPI cannot wire up under srun without a PMI it was built with ('OMPI was not built with "
                "SLURM's PMI support'): use --slurm-mpi pmix")
    m = _TASK_EXIT.search(text)
    if m:
        return f"{_ranks(m.group(2))} on {m.group(1)} exited with status {m.group(3)}"
    m = _TASK_KILLED.search(text)
    if m:
        return f"{_ranks(m.group(2))} on {m.group(1)}: {m.group(3).lower()}"
    return None


def failure(fields: dict[str, str] | None, failed_nodes: list[str], stdout: str, stderr: str,
            placement: tuple[Placement, ...], launcher: str) -> str | None:
    """Why the job did not give a result, from its end state and output (pure); None for COMPLETED."""
    if fields is None:
        return "Slurm no longer knows the job (its record expired before repro read it)"
    state, reason = fields.get("JobState", "?"), _clean(fields.get("Reason"))
    if state == "COMPLETED":
        return None
    if state == "TIMEOUT":
        return f"timed out: the job reached its time limit of {fields.get('TimeLimit', '?')} (Slurm TIMEOUT)"
    if state == "NODE_FAIL":
        nodes = ", ".join(failed_nodes) or "?"
        return f"node {nodes} failed under the job (Slurm NODE_FAIL, {reason or 'NodeDown'})"
    if state == "CANCELLED":
        return "the job was cancelled outside repro (scancel by a user or an administrator)"
    if state == "OUT_OF_MEMORY":
        return "the job ran out of memory (Slurm OUT_OF_MEMORY)"
    if state != "FAILED":
        return f"the job ended {state}" + (f" ({reason})" if reason else "")
    text = f"{stderr}\n{stdout}"
    explained = diagnose.explain(placement=placement, stdout=stdout, stderr=stderr, unreachable={},
                                 returncode=returncode(fields.get("ExitCode")), failure=None, launcher=launcher)
    generic = explained.startswith((f"{launcher} exited with", "the workload printed no result"))
    return (srun_reason(text) or explained) if generic else explained


def failed_nodes(client: SlurmClient, nodes: list[str], text: str) -> list[str]:
    """Nodes of the job that Slurm marks dead now, or that srun reported failing."""
    named = set(_NODE_FAILURE.findall(text))
    for node in nodes:
        state = client.node(node).get("State", "")
        if any(word in state for word in ("DOWN", "FAIL", "NOT_RESPONDING")):
            named.add(node)
    return sorted(named)


def placed(requested: tuple[Placement, ...], nodes: list[str], hosts: dict[str, Host]) -> tuple[Placement, ...]:
    """Where the ranks ran: the allocated nodes in Slurm's order, filled as the request was (block)."""
    if len(nodes) != len(requested):
        return requested
    return tuple(Placement(hosts.get(n) or Host(name=n, address=n), p.ranks)
                 for n, p in zip(nodes, requested, strict=True))


class Follow:
    """The state of one job while repro follows it."""

    def __init__(self, client: SlurmClient, plan: BatchPlan, progress: Callable[[str], None] | None) -> None:
        self.client, self.plan, self.progress = client, plan, progress
        self.job_id = ""
        self.err_path = ""
        self.shown = 0
        self.last_state = ""

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def submit(self) -> None:
        plan = self.plan
        self.client.write(plan.script_path, plan.script)
        self.job_id = self.client.submit(plan.submit_argv, plan.submit_env)
        self.err_path = f"{plan.site.workdir}/{plan.job_name}-{self.job_id}.err"
        self.say(f"Slurm job {self.job_id} submitted on {plan.site.submit_name}")

    def pass_progress(self) -> None:
        if self.progress is None:
            return
        new = self.client.read(self.err_path, self.shown)
        complete = new[:new.rfind("\n") + 1]
        self.shown += len(complete.encode())
        for line in complete.splitlines():
            at = line.find(PROGRESS_PREFIX)
            if at >= 0:
                self.progress(line[at + len(PROGRESS_PREFIX):])

    def wait(self) -> dict[str, str] | None:
        """Poll until the job ends; its last record (None if Slurm forgot it). LaunchError past the limit."""
        running_since = None
        while True:
            fields = self.client.job(self.job_id)
            state = (fields or {}).get("JobState", "")
            if fields is None or state in END_STATES:
                return fields
            if state != self.last_state:
                where = _clean(fields.get("NodeList") if state == "RUNNING" else fields.get("Reason"))
                self.say(f"Slurm job {self.job_id} {state.lower()}" + (f" ({where})" if where else ""))
                self.last_state = state
            if state == "RUNNING":
                running_since = running_since or time.monotonic()
                self.pass_progress()
                limit = seconds(fields.get("TimeLimit"))
                if limit is not None and time.monotonic() - running_since > limit + GRACE_S:
                    raise LaunchError(f"Slurm job {self.job_id} still runs {GRACE_S:.0f} s past its time limit")
            time.sleep(POLL_S)

    def cancel(self) -> dict[str, str] | None:
        """scancel the job and wait until squeue lets it go; its last record."""
        self.client.cancel(self.job_id)
        deadline = time.monotonic() + CANCEL_WAIT_S
        while self.client.queued(self.job_id) and time.monotonic() < deadline:
            time.sleep(1.0)
        return self.client.job(self.job_id)


def run_job(plan: BatchPlan, hosts: dict[str, Host], version: str | None, plugins: list[str],
            progress: Callable[[str], None] | None = None) -> Outcome:
    """Submit the point's job, follow it to its end and return how it went (with its SlurmJob)."""
    started = time.monotonic()
    with SlurmClient(plan.site) as client:
        follow = Follow(client, plan, progress)

        def record(fields: dict[str, str] | None, text: str = "") -> tuple[BatchJob, list[str]]:
            nodes = client.hostnames((fields or {}).get("NodeList", ""))
            dead = failed_nodes(client, nodes, text) if (fields or {}).get("JobState") == "NODE_FAIL" else []
            return job_record(follow.job_id, fields, plan, nodes=nodes, version=version, plugins=plugins,
                              failed_nodes=dead), nodes

        try:
            follow.submit()
            fields = follow.wait()
        except KeyboardInterrupt:
            if follow.job_id:
                fields = follow.cancel()
                raise JobInterrupted(record(fields)[0], "interrupted; the Slurm job was cancelled") from None
            raise
        except (LaunchError, HostError) as exc:
            if not follow.job_id:
                raise
            fields = follow.cancel()
            job, nodes = record(fields)
            return Outcome("", "", None, time.monotonic() - started, f"{exc.message}; the job was cancelled",
                           job=job, placement=placed(plan.placement, nodes, hosts))
        base = f"{plan.site.workdir}/{plan.job_name}-{follow.job_id}"
        stdout, stderr = client.read(f"{base}.out"), client.read(f"{base}.err")
        nccl_log = joined([client.run(read_argv(plan.nccl_dir), timeout=120).stdout]) if plan.nccl_dir else None
        job, nodes = record(fields, f"{stderr}\n{stdout}")
        where = placed(plan.placement, nodes, hosts)
        why = failure(fields, job.detail.failed_nodes, stdout, stderr, where, plan.launcher_name)
        return Outcome(stdout, stderr, returncode(job.detail.exit_code), time.monotonic() - started, why, job=job,
                       placement=where, nccl_log=nccl_log)
