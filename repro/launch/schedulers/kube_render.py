"""The Kubernetes objects of one point (pure): a Trainer v2 TrainJob with the (Cluster)TrainingRuntime it references,
or an MPI Operator MPIJob; rendered from a KubeJob and nothing else. `repro bench --scheduler kubernetes --dry-run`
prints them, `--emit DIR` writes them, the tests compare them with golden files and validate them
(kube_check).

Where each fact comes from (read in the upstream projects, not copied):
- kubeflow/trainer @ 8c0f505 (2026-08-21): manifests/base/runtimes/deepspeed_distributed.yaml (an MPI runtime:
  a `node` job running sshd on 2222 with a readiness probe, a `launcher` job that depends on node Ready);
  pkg/runtime/framework/plugins/mpi/mpi.go (the SSH key Secret mounted at sshAuthMountPath with id_rsa,
  id_rsa.pub, authorized_keys; the hostfile ConfigMap at /etc/mpi/hostfile, `<job>-node-<i>-0.<job> slots=N`;
  OMPI_MCA_orte_default_hostfile for OpenMPI, into containers named `node` only);
  pkg/runtime/framework/plugins/jobset/builder.go (trainer.image/command go to the `node` container of the job
  labelled trainjob-ancestor-step=trainer; container resources are not propagated to the node job for MPI, so
  repro's own runtime carries the GPUs of its node pods); pkg/runtime/framework/plugins/torch/torch.go
  (PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR=<job>-node-0-0.<job>, PET_MASTER_PORT=29500).
- kubeflow/mpi-operator @ caa3c47 (2026-07-02): manifests/base/kubeflow.org_mpijobs.yaml (v2beta1: Launcher and
  Worker replica specs, slotsPerWorker, runPolicy, sshAuthMountPath, mpiImplementation, launcherCreationPolicy).

Both operators mount the job's SSH key pair read-only with modes sshd and ssh refuse for root (0640/0644 on a
mount owned by root), so the pods' commands copy what they need to /tmp first: the node runs sshd with the job's
own key as its host key, the launcher trusts exactly that key (`* <public key>` in its known_hosts), so the
host key is checked as everywhere in repro.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from repro.launch.schedulers.kube_site import KubeSite

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
MPI_OPERATOR_API = "kubeflow.org/v2beta1"
SSH_PORT = 2222  # the sshd port of Trainer's MPI runtimes
SSH_MOUNT = "/etc/repro/ssh"  # sshAuthMountPath: beside, not over, the image's /root/.ssh
HOSTFILE = "/etc/mpi/hostfile"
TORCH_PORT = 29500  # Trainer's ContainerTrainerPort (PET_MASTER_PORT)
RUN_LABEL = "repro/run"
MANAGED_BY = "app.kubernetes.io/managed-by"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
PATCH_MANAGER = "repro"

# sh -c scripts ($1: the SSH mount): the operators mount the key pair read-only with modes ssh refuses for root
NODE_SCRIPT = ('set -e; mkdir -p /tmp/repro_ssh; install -m 600 "$1/id_rsa" /tmp/repro_ssh/host_key; '
               f'exec /usr/sbin/sshd -D -e -p {SSH_PORT} -h /tmp/repro_ssh/host_key '
               '-o AuthorizedKeysFile="$1/authorized_keys" -o StrictModes=no -o PidFile=none')
LAUNCHER_SCRIPT = ('set -e; mkdir -p /tmp/repro_ssh; install -m 600 "$1/id_rsa" /tmp/repro_ssh/id; '
                   'printf "* %s\\n" "$(cat "$1/id_rsa.pub")" > /tmp/repro_ssh/known_hosts; shift; exec "$@"')
RSH_ARGS = (f"-p {SSH_PORT} -i /tmp/repro_ssh/id -o UserKnownHostsFile=/tmp/repro_ssh/known_hosts "
            "-o StrictHostKeyChecking=yes -o ConnectionAttempts=10")


@dataclass(frozen=True)
class KubeJob:
    """Everything one point's objects are rendered from (pure values)."""

    name: str  # the TrainJob/MPIJob name (DNS-1035: it names pods and services)
    run_id: str
    policy: str  # mpi (TF+Horovod: mpirun over SSH) or torch (torchrun)
    image: str
    command: tuple[str, ...]  # the launcher's argv (mpirun ... / torchrun ...), without the key set-up
    env: tuple[tuple[str, str], ...]  # plain variables, sorted
    secret_env: tuple[str, ...] = ()  # variables whose values come from the site's Secret (never rendered)
    nodes: int = 1
    procs_per_node: int = 1
    gpus_per_pod: int = 0
    deadline_s: int = 1800
    site: KubeSite = field(default_factory=KubeSite)

    @property
    def runtime_name(self) -> str:
        """The runtime the TrainJob references: the site's, else repro's own for this image (and GPU count)."""
        if self.site.runtime:
            return self.site.runtime
        tag = re.sub(r"[^a-z0-9]+", "-", self.image.rsplit(":", 1)[-1].lower()).strip("-")[:16] or "latest"
        return f"repro-{self.policy}-{tag}" + (f"-{self.gpus_per_pod}gpu" if self.gpus_per_pod else "")


def render(job: KubeJob) -> list[dict[str, Any]]:
    """The objects to create for a point, in the order `kubectl apply` needs them."""
    if job.site.kind == "mpijob":
        return [mpijob(job)]
    objects = [] if job.site.runtime else [runtime(job)]
    return [*objects, trainjob(job)]


def owned(job: KubeJob) -> list[tuple[str, str]]:
    """(kind, name) of the objects that belong to this point alone: what a cancel deletes (a rendered runtime is
    shared by every point of the image and stays)."""
    return [("mpijob" if job.site.kind == "mpijob" else "trainjob", job.name)]


def _labels(job: KubeJob) -> dict[str, str]:
    return {RUN_LABEL: job.run_id, MANAGED_BY: "repro"}


def _env(job: KubeJob) -> list[dict[str, Any]]:
    plain = [{"name": k, "value": v} for k, v in job.env]
    secret = [{"name": k, "valueFrom": {"secretKeyRef": {"name": job.site.env_secret, "key": k}}}
              for k in job.secret_env]
    return sorted(plain + secret, key=lambda e: e["name"])


def _shm() -> tuple[dict[str, Any], dict[str, Any]]:
    """/dev/shm as memory (NCCL and Horovod need more than a container's 64 MiB default)."""
    return {"name": "dshm", "emptyDir": {"medium": "Memory"}}, {"name": "dshm", "mountPath": "/dev/shm"}


def _pod_settings(job: KubeJob) -> dict[str, Any]:
    """The site's pod-level settings (node selector, tolerations, pull secret, service account)."""
    site = job.site
    out: dict[str, Any] = {}
    if site.node_selector:
        out["nodeSelector"] = dict(site.node_selector)
    if site.tolerations:
        out["tolerations"] = [t.manifest() for t in site.tolerations]
    if site.image_pull_secret:
        out["imagePullSecrets"] = [{"name": site.image_pull_secret}]
    if site.service_account:
        out["serviceAccountName"] = site.service_account
    return out


def _gpus(count: int) -> dict[str, Any]:
    return {"limits": {"nvidia.com/gpu": count}} if count else {}


def _sshd_container(job: KubeJob, name: str) -> dict[str, Any]:
    mount = _shm()[1]
    container: dict[str, Any] = {
        "name": name, "image": job.image, "command": ["/bin/sh", "-c", NODE_SCRIPT, "repro-node", SSH_MOUNT],
        "ports": [{"name": "ssh", "containerPort": SSH_PORT}],
        "readinessProbe": {"tcpSocket": {"port": SSH_PORT}, "initialDelaySeconds": 1, "periodSeconds": 2},
        "volumeMounts": [mount],
    }
    if job.gpus_per_pod:
        container["resources"] = _gpus(job.gpus_per_pod)
    return container


def launcher_argv(job: KubeJob) -> list[str]:
    """What the launcher container runs: the key set-up, then mpirun (MPI); torchrun as it is (torch)."""
    if job.policy != "mpi":
        return list(job.command)
    return ["/bin/sh", "-c", LAUNCHER_SCRIPT, "repro-launcher", SSH_MOUNT, *job.command]


def runtime(job: KubeJob) -> dict[str, Any]:
    """repro's own ClusterTrainingRuntime for the image: Trainer's MPI runtime shape (node: sshd, launcher:
    mpirun after every node is Ready) or its torch runtime shape (one node job, torchrun in each pod)."""
    volume, mount = _shm()
    if job.policy == "mpi":
        policy = {"numNodes": 1, "mpi": {"numProcPerNode": 1, "mpiImplementation": "OpenMPI",
                                          "sshAuthMountPath": SSH_MOUNT, "runLauncherAsNode": False}}
        node = {"name": "node", "template": {"spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "containers": [_sshd_container(job, "node")], "volumes": [volume]}}}}}
        launcher = {"name": "launcher", "dependsOn": [{"name": "node", "status": "Ready"}], "template": {
            "metadata": {"labels": {ANCESTOR: "trainer"}},
            "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "node", "image": job.image, "volumeMounts": [mount]}], "volumes": [volume]}}}}}
        spec = {"mlPolicy": policy, "template": {"spec": {
            "network": {"publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]},
            "replicatedJobs": [node, launcher]}}}
    else:
        node = {"name": "node", "template": {"metadata": {"labels": {ANCESTOR: "trainer"}}, "spec": {
            "backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "node", "image": job.image, "volumeMounts": [mount]}], "volumes": [volume]}}}}}
        spec = {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [node]}}}
    return {"apiVersion": TRAINER_API, "kind": job.site.runtime_kind,
            "metadata": {"name": job.runtime_name, "labels": {MANAGED_BY: "repro",
                                                              "trainer.kubeflow.org/framework": job.policy}},
            "spec": spec}


def trainjob(job: KubeJob) -> dict[str, Any]:
    """The point as a TrainJob: the launcher's command, node count, processes per node, the environment, and a
    runtime patch that labels every pod with the run and applies the site's pod settings."""
    trainer: dict[str, Any] = {"image": job.image, "command": launcher_argv(job), "numNodes": job.nodes,
                               "numProcPerNode": job.procs_per_node}
    if job.policy == "torch" and job.gpus_per_pod:
        trainer["resourcesPerNode"] = _gpus(job.gpus_per_pod)
    env = _env(job)
    if env:
        trainer["env"] = env
    pods = {"metadata": {"labels": _labels(job)}}
    settings = _pod_settings(job)
    if settings:
        pods["spec"] = settings
    jobs = ["node", "launcher"] if job.policy == "mpi" else ["node"]
    patch = {"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": name, "template": {"spec": {"template": pods}}} for name in jobs]}}}}
    return {"apiVersion": TRAINER_API, "kind": "TrainJob",
            "metadata": {"name": job.name, "namespace": job.site.namespace, "labels": _labels(job)},
            "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": job.site.runtime_kind,
                                    "name": job.runtime_name},
                     "activeDeadlineSeconds": job.deadline_s,
                     "trainer": trainer,
                     "runtimePatches": [patch]}}


def mpijob(job: KubeJob) -> dict[str, Any]:
    """The point as an MPI Operator v2beta1 MPIJob: a Launcher (mpirun, created once every worker is ready) and
    Workers running sshd; the operator makes the hostfile and the SSH key Secret."""
    volume, mount = _shm()
    settings = _pod_settings(job)
    launcher = {"name": "launcher", "image": job.image, "command": launcher_argv(job), "volumeMounts": [mount]}
    env = _env(job)
    if env:
        launcher["env"] = env

    def replica(count: int, container: dict[str, Any]) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "Never", "template": {
            "metadata": {"labels": _labels(job)},
            "spec": {**settings, "containers": [container], "volumes": [volume]}}}

    return {"apiVersion": MPI_OPERATOR_API, "kind": "MPIJob",
            "metadata": {"name": job.name, "namespace": job.site.namespace, "labels": _labels(job)},
            "spec": {"slotsPerWorker": job.procs_per_node,
                     "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0,
                                   "activeDeadlineSeconds": job.deadline_s},
                     "sshAuthMountPath": SSH_MOUNT, "mpiImplementation": "OpenMPI",
                     "launcherCreationPolicy": "WaitForWorkersReady",
                     "mpiReplicaSpecs": {"Launcher": replica(1, launcher),
                                         "Worker": replica(job.nodes, _sshd_container(job, "worker"))}}}


class _Plain(yaml.SafeDumper):
    """YAML without anchors and aliases: each manifest reads on its own."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """The objects as one multi-document YAML stream (`kubectl apply -f` reads it)."""
    return "".join("---\n" + yaml.dump(o, Dumper=_Plain, sort_keys=False, default_flow_style=False, width=100)
                   for o in objects)
