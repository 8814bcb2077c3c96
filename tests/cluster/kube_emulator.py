"""The operators' contract, executed on the test cluster: a stand-in for `kubectl` that turns the objects repro
renders into containers on the cluster hosts' Docker engines, with exactly what the operators give the pods, in
their order: a TrainJob with repro's MPI runtime (Trainer v2's MPI plugin and JobSet), a TrainJob with a torch
runtime (Trainer's torch plugin), and an MPIJob v2beta1 (the MPI Operator). It is NOT Kubernetes and checks
nothing Kubernetes checks (see docs/kubernetes.md): it shows that what repro renders would run once the operator
has done its part.

TrainJob, MPI policy (kubeflow/trainer @ 8c0f505):
- pods: `numNodes` pods of the runtime's `node` job and one of `launcher` (runLauncherAsNode: false), each with
  the runtime's container; trainer.image/command replace the `node` container's of the job labelled
  trainjob-ancestor-step=trainer, trainer.env is added to it (plugins/jobset/builder.go);
- the SSH Secret: a new ECDSA P-521 key pair in PEM (plugins/mpi/mpi.go buildSSHAuthSecret), mounted read-only at
  sshAuthMountPath in the containers named `node` of both jobs as id_rsa (0640), id_rsa.pub and
  authorized_keys (0644);
- the hostfile: `<job>-node-<i>-0.<job> slots=<numProcPerNode>` (buildHostFileConfigMap, jobset endpoints),
  mounted at /etc/mpi/hostfile (0444) in the launcher, which also gets OMPI_MCA_orte_default_hostfile,
  OMPI_MCA_orte_keep_fqdn_hostnames=true, OMPI_MCA_orte_set_default_slots and OMPI_MCA_plm_rsh_args
  (EnforceMLPolicy);
- order: the launcher starts once every node pod is Ready (dependsOn node Ready; Ready = the readiness probe's
  TCP port answers); the job completes when the launcher does (successPolicy targetReplicatedJobs: launcher),
  and then the node pods are stopped.

TrainJob, torch policy (plugins/torch/torch.go EnforceMLPolicy):
- pods: `numNodes` pods of the `node` job (the trainer ancestor), all started at once (no dependsOn); the `node`
  container gets trainer.image, trainer.command and trainer.env, then PET_NNODES (the pod count),
  PET_NPROC_PER_NODE (trainer.numProcPerNode, else the policy's, else "auto"), PET_NODE_RANK (the pod's Job
  completion index), PET_MASTER_ADDR=<job>-node-0-0.<job> and PET_MASTER_PORT=29500, which torchrun reads; no
  SSH Secret, no hostfile;
- end: Complete once every node pod has succeeded, Failed as soon as one fails (JobSet's default success and
  failure policies), then the others are stopped.

MPIJob v2beta1 (kubeflow/mpi-operator, pkg/controller/mpi_job_controller.go):
- pods: Worker.replicas pods `<job>-worker-<i>` and one launcher pod of the Job `<job>-launcher` (a pod name with a
  five-character suffix, as a Job's pods get), each from its replica template's first container;
  K_MPI_JOB_ROLE=worker/launcher;
- the SSH Secret `<job>-ssh`: an ECDSA P-521 key pair (newSSHAuthSecret), mounted read-only at sshAuthMountPath
  in the first container of launcher and workers as id_rsa, id_rsa.pub and authorized_keys, mode 0644 (0600
  only when the path is /root/.ssh; setupSSHOnPod);
- the ConfigMap `<job>-config` at /etc/mpi in the launcher: hostfile (0444) with
  `<job>-worker-<i>.<job>-worker.<namespace>.svc slots=<slotsPerWorker>` and discover_hosts.sh (0555); the
  launcher's env: OMPI_MCA_orte_keep_fqdn_hostnames=true, OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile,
  OMPI_MCA_plm_rsh_args="-o ConnectionAttempts=10", OMPI_MCA_orte_set_default_slots=<slotsPerWorker>, and
  NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES set empty (newLauncherPodTemplate);
- order: launcherCreationPolicy WaitForWorkersReady: the launcher once every worker is Ready; the MPIJob's
  condition Succeeded or Failed with the launcher's end; cleanPodPolicy Running stops the workers.

All: /dev/shm as a memory emptyDir is a tmpfs; pod DNS names resolve to the pod's host (host networking here, a
pod network on a cluster); activeDeadlineSeconds (runPolicy's for an MPIJob) is enforced.

Commands (the subset repro runs): version, apply -f -, get RESOURCE NAME -o json, get pods -l KEY=VALUE -o json,
logs POD, delete RESOURCE NAME. State lives in $REPRO_KUBE_EMULATOR (a directory); the hosts come from the test
cluster's cluster.json ($REPRO_KUBE_CLUSTER).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

HOSTFILE_DIR = "/etc/mpi"
VERSION = "v0.0.0-repro-emulator"
TORCH_PORT = 29500  # Trainer's ContainerTrainerPort
MPI_OPERATOR_LABELS = ("training.kubeflow.org/operator-name", "training.kubeflow.org/job-name",
                       "training.kubeflow.org/job-role")
OMPI_ENV = {"OMPI_MCA_orte_keep_fqdn_hostnames": "true",
            "OMPI_MCA_orte_default_hostfile": f"{HOSTFILE_DIR}/hostfile",
            "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10"}


@dataclass
class Pod:
    """One pod as the operator would create it."""

    name: str
    job: str  # node / launcher (TrainJob), worker / launcher (MPIJob)
    index: int
    endpoint: str  # the pod's DNS name: <trainjob>-<job>-<index>-0.<trainjob>, <mpijob>-worker-<i>.<mpijob>-worker...
    image: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    mounts: dict[str, str] = field(default_factory=dict)  # container path -> what: ssh | hostfile | shm
    ready_port: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    host: str = ""  # cluster host name
    address: str = ""
    docker_host: str = ""


@dataclass
class Job:
    """What the controller plays: the pods, which of them start first and must be Ready before the rest, which
    end the job, and the condition types it ends with."""

    kind: str  # trainjob / mpijob
    pods: list[Pod]
    first: tuple[str, ...]  # jobs started first (and waited Ready when the rest depends on them)
    then: tuple[str, ...]  # jobs started once every `first` pod is Ready
    ends: tuple[str, ...]  # jobs whose pods' end is the job's end
    ok: str = "Complete"
    failed: str = "Failed"


def _main_container(pod_spec: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod_spec["containers"] if c["name"] == "node")


def _plain_env(entries: Any) -> dict[str, str]:
    """The variables with a value (a valueFrom of a Secret has none here: the emulator holds no secrets)."""
    return {e["name"]: str(e["value"]) for e in entries or () if "value" in e}


def _shm_mounts(container: dict[str, Any], volumes: list[dict[str, Any]]) -> dict[str, str]:
    memory = {v["name"] for v in volumes or () if (v.get("emptyDir") or {}).get("medium") == "Memory"}
    return {m["mountPath"]: "shm" for m in container.get("volumeMounts") or () if m["name"] in memory}


def _patched_labels(trainjob: dict[str, Any]) -> dict[str, dict[str, str]]:
    labels: dict[str, dict[str, str]] = {}
    for patch in trainjob["spec"].get("runtimePatches") or ():
        for job in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
            labels.setdefault(job["name"], {}).update(job["template"]["spec"]["template"]["metadata"]["labels"])
    return labels


def pods_of(trainjob: dict[str, Any], runtime: dict[str, Any]) -> list[Pod]:
    """The pods Trainer's plugins make of a TrainJob and its runtime (pure): MPI or torch policy."""
    policy = runtime["spec"]["mlPolicy"]
    if "torch" in policy:
        return torch_pods(trainjob, runtime)
    if "mpi" in policy:
        return mpi_pods(trainjob, runtime)
    raise SystemExit(f"the emulator plays the mpi and torch policies only, not {sorted(policy)}")


def mpi_pods(trainjob: dict[str, Any], runtime: dict[str, Any]) -> list[Pod]:
    """The pods of Trainer's MPI plugin: node pods running the runtime's command, one launcher with the hostfile."""
    name, spec = trainjob["metadata"]["name"], trainjob["spec"]
    trainer, mpi = spec.get("trainer") or {}, runtime["spec"]["mlPolicy"]["mpi"]
    if mpi.get("runLauncherAsNode"):
        raise SystemExit("the emulator plays runLauncherAsNode: false (repro's runtime) only")
    slots = trainer.get("numProcPerNode") or mpi.get("numProcPerNode") or 1
    mount = mpi.get("sshAuthMountPath") or "/root/.ssh"
    labels = _patched_labels(trainjob)
    pods = []
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        ancestor = (job["template"].get("metadata") or {}).get("labels", {}).get(
            "trainer.kubeflow.org/trainjob-ancestor-step") == "trainer"
        pod_spec = job["template"]["spec"]["template"]["spec"]
        container = _main_container(pod_spec)
        count = 1 if ancestor else (trainer.get("numNodes") or runtime["spec"]["mlPolicy"].get("numNodes") or 1)
        for i in range(count):
            env = _plain_env(container.get("env"))
            image, command = container["image"], list(container.get("command") or ())
            if ancestor:
                image, command = trainer.get("image", image), list(trainer.get("command") or command)
                env.update(_plain_env(trainer.get("env")))
            mounts = _shm_mounts(container, pod_spec.get("volumes"))
            mounts[mount] = "ssh"
            if job["name"] == "launcher":
                mounts[HOSTFILE_DIR] = "hostfile"
                env.update({**OMPI_ENV, "OMPI_MCA_orte_set_default_slots": str(slots)})
            probe = (container.get("readinessProbe") or {}).get("tcpSocket", {}).get("port")
            pods.append(Pod(name=f"{name}-{job['name']}-{i}-0", job=job["name"], index=i,
                            endpoint=f"{name}-{job['name']}-{i}-0.{name}", image=image, command=command, env=env,
                            mounts=mounts, ready_port=probe, labels=dict(labels.get(job["name"], {}))))
    return pods


def torch_pods(trainjob: dict[str, Any], runtime: dict[str, Any]) -> list[Pod]:
    """The pods of Trainer's torch plugin: numNodes pods of the trainer's `node` job, each running the trainer's
    command with the PET_* variables torchrun reads."""
    name, spec = trainjob["metadata"]["name"], trainjob["spec"]
    trainer, torch = spec.get("trainer") or {}, runtime["spec"]["mlPolicy"]["torch"] or {}
    labels = _patched_labels(trainjob)
    count = trainer.get("numNodes") or runtime["spec"]["mlPolicy"].get("numNodes") or 1
    procs = trainer.get("numProcPerNode") or torch.get("numProcPerNode") or "auto"
    pods = []
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        if (job["template"].get("metadata") or {}).get("labels", {}).get(
                "trainer.kubeflow.org/trainjob-ancestor-step") != "trainer":
            raise SystemExit(f"the emulator plays a torch runtime of one trainer job only, not {job['name']}")
        pod_spec = job["template"]["spec"]["template"]["spec"]
        container = _main_container(pod_spec)
        for i in range(count):
            env = {**_plain_env(container.get("env")), **_plain_env(trainer.get("env")),
                   "PET_NNODES": str(count), "PET_NPROC_PER_NODE": str(procs), "PET_NODE_RANK": str(i),
                   "PET_MASTER_ADDR": f"{name}-{job['name']}-0-0.{name}", "PET_MASTER_PORT": str(TORCH_PORT)}
            pods.append(Pod(name=f"{name}-{job['name']}-{i}-0", job=job["name"], index=i,
                            endpoint=f"{name}-{job['name']}-{i}-0.{name}", image=trainer.get("image",
                                                                                           container["image"]),
                            command=list(trainer.get("command") or container.get("command") or ()), env=env,
                            mounts=_shm_mounts(container, pod_spec.get("volumes")),
                            labels=dict(labels.get(job["name"], {}))))
    return pods


def mpijob_pods(mpijob: dict[str, Any]) -> list[Pod]:
    """The pods the MPI Operator makes of an MPIJob (pure): the workers, then the launcher."""
    name, spec = mpijob["metadata"]["name"], mpijob["spec"]
    namespace = mpijob["metadata"].get("namespace") or "default"
    if spec.get("mpiImplementation", "OpenMPI") != "OpenMPI":
        raise SystemExit("the emulator plays mpiImplementation OpenMPI only")
    slots = spec.get("slotsPerWorker") or 1
    mount = spec.get("sshAuthMountPath") or "/root/.ssh"
    replicas = spec["mpiReplicaSpecs"]
    launcher_pod = f"{name}-launcher-" + hashlib.sha256(name.encode()).hexdigest()[:5]  # a Job's pod: a suffix
    pods = []
    for role, count in (("worker", replicas["Worker"].get("replicas", 0)), ("launcher", 1)):
        template = replicas[role.capitalize()]["template"]
        container = template["spec"]["containers"][0]
        for i in range(count):
            env = {**_plain_env(container.get("env")), "K_MPI_JOB_ROLE": role}
            command = list(container.get("command") or ()) + list(container.get("args") or ())
            mounts = _shm_mounts(container, template["spec"].get("volumes"))
            mounts[mount] = "ssh"
            if role == "worker":
                pod, endpoint = f"{name}-worker-{i}", f"{name}-worker-{i}.{name}-worker.{namespace}.svc"
                command = command or ["/usr/sbin/sshd", "-De"]
            else:
                pod, endpoint = launcher_pod, f"{name}-launcher.{name}-worker.{namespace}.svc"
                env.update({**OMPI_ENV, "OMPI_MCA_orte_set_default_slots": str(slots),
                            "NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""})
                mounts[HOSTFILE_DIR] = "hostfile"
            labels = {**(template.get("metadata") or {}).get("labels", {}),
                      **dict(zip(MPI_OPERATOR_LABELS, ("mpi-operator", name, role), strict=True))}
            probe = (container.get("readinessProbe") or {}).get("tcpSocket", {}).get("port")
            pods.append(Pod(name=pod, job=role, index=i, endpoint=endpoint, image=container["image"],
                            command=command, env=env, mounts=mounts, ready_port=probe, labels=labels))
    return pods


def hostfile(pods: list[Pod], slots: int) -> str:
    """The operator's hostfile: one line per rank pod (TrainJob node pods, MPIJob workers)."""
    return "".join(f"{p.endpoint} slots={slots}\n" for p in pods if p.job in ("node", "worker"))


def discover_hosts(pods: list[Pod]) -> str:
    """The MPI Operator's discover_hosts.sh (the workers running; all of them once the launcher starts)."""
    return "#!/bin/sh\n" + "".join(f"echo {p.endpoint}\n" for p in pods if p.job == "worker")


# ---------------------------------------------------------------- state and docker

def _state() -> Path:
    root = Path(os.environ["REPRO_KUBE_EMULATOR"])
    root.mkdir(parents=True, exist_ok=True)
    return root


def _hosts() -> list[dict[str, Any]]:
    return json.loads(Path(os.environ["REPRO_KUBE_CLUSTER"]).read_text())["hosts"]


def _docker(pod: Pod, *args: str, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "-H", pod.docker_host, *args], capture_output=True, text=True, check=check,
                          timeout=300)


def _start(pod: Pod, pods: list[Pod], job_dir: Path) -> None:
    argv = ["run", "-d", "--name", pod.name, "--network", "host", "--label", f"repro.kube.pod={pod.name}"]
    for other in pods:  # the pods' DNS names, as the headless service gives them
        argv += ["--add-host", f"{other.endpoint}:{other.address}"]
    for path, what in pod.mounts.items():
        if what == "shm":
            argv += ["--mount", f"type=tmpfs,destination={path}"]
        else:
            argv += ["-v", f"{job_dir / what}:{path}:ro"]
    for key, value in sorted(pod.env.items()):
        argv += ["--env", f"{key}={value}"]
    argv += ["--entrypoint", pod.command[0], pod.image, *pod.command[1:]]
    _docker(pod, *argv, check=True)


def _state_of(pod: Pod) -> tuple[str, str]:
    """(docker's state: running/exited/..., exit code)."""
    found = _docker(pod, "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", pod.name).stdout.strip()
    state, _, code = found.partition(" ")
    return state, code


def _ready(pod: Pod) -> bool:
    if pod.ready_port is None:
        return _state_of(pod)[0] == "running"
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((pod.address, pod.ready_port)) == 0


def _secret(job_dir: Path, modes: dict[str, int]) -> None:
    """The SSH Secret as the operators make it (an ECDSA P-521 key pair in PEM), with the mount's file modes."""
    ssh = job_dir / "ssh"
    ssh.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "521", "-m", "PEM", "-N", "", "-C", "",
                    "-f", str(ssh / "id_rsa")], check=True)
    shutil.copy(ssh / "id_rsa.pub", ssh / "authorized_keys")
    for name, mode in modes.items():
        (ssh / name).chmod(mode)


def _files(job_dir: Path, files: dict[str, tuple[str, int]]) -> None:
    (job_dir / "hostfile").mkdir()
    for name, (text, mode) in files.items():
        (job_dir / "hostfile" / name).write_text(text)
        (job_dir / "hostfile" / name).chmod(mode)


def controller(name: str) -> None:
    """Start the job's pods in the operator's order and follow it to its end (a background process)."""
    job_dir = _state() / name
    saved = json.loads((job_dir / "job.json").read_text())
    job = Job(**{**saved["job"], "pods": [Pod(**p) for p in saved["job"]["pods"]]})
    pods = job.pods
    status = {"conditions": []}

    def end(kind: str, reason: str, message: str = "") -> None:
        status["conditions"] = [{"type": kind, "status": "True", "reason": reason, "message": message}]
        (job_dir / "status.json").write_text(json.dumps(status))

    reasons = {"trainjob": ("JobSetCompleted", "JobSetFailed"), "mpijob": ("MPIJobSucceeded", "MPIJobFailed")}
    ok_reason, failed_reason = reasons[job.kind]
    deadline = time.monotonic() + saved["deadline"]
    try:
        for pod in pods:
            if pod.job in job.first:
                _start(pod, pods, job_dir)
        if job.then:
            while not all(_ready(p) for p in pods if p.job in job.first):
                if time.monotonic() > deadline:
                    return end(job.failed, "DeadlineExceeded", "the pods the launcher waits for never became ready")
                time.sleep(0.5)
            for pod in pods:
                if pod.job in job.then:
                    _start(pod, pods, job_dir)
        enders = [p for p in pods if p.job in job.ends]
        while True:
            states = {p.name: _state_of(p) for p in enders}
            failed = [pod for pod, (state, code) in states.items() if state == "exited" and code != "0"]
            if failed:
                return end(job.failed, failed_reason, f"pod {failed[0]} failed")
            if all(state == "exited" for state, _ in states.values()):
                return end(job.ok, ok_reason, f"{job.kind} completed")
            if time.monotonic() > deadline:
                return end(job.failed, "DeadlineExceeded", "activeDeadlineSeconds passed")
            time.sleep(0.5)
    except subprocess.CalledProcessError as exc:
        end(job.failed, "PodFailed", (exc.stderr or str(exc)).strip().splitlines()[-1])
    finally:
        for pod in pods:  # the end stops the pods still running (repro's delete removes them)
            _docker(pod, "stop", "-t", "1", pod.name)


# ---------------------------------------------------------------- kubectl's commands

def _place(pods: list[Pod], rank_job: str) -> None:
    """Rank pod i on host i (round robin); the launcher on the first host."""
    hosts = _hosts()
    for pod in pods:
        host = hosts[pod.index % len(hosts)] if pod.job == rank_job else hosts[0]
        pod.host, pod.address, pod.docker_host = host["name"], host["address"], host["docker_host"]


def _launch(name: str, job: Job, deadline: int) -> None:
    job_dir = _state() / name
    (job_dir / "job.json").write_text(json.dumps({"job": asdict(job), "deadline": deadline}))
    log = open(job_dir / "controller.log", "w")  # noqa: SIM115 - the controller's own output
    proc = subprocess.Popen([sys.executable, __file__, "controller", name], stdout=log, stderr=log,
                            start_new_session=True, env=os.environ)
    (job_dir / "controller.pid").write_text(str(proc.pid))


def _new_job_dir(name: str, resource: str) -> Path:
    job_dir = _state() / name
    if job_dir.exists():
        sys.exit(f'Error from server (AlreadyExists): {resource} "{name}" already exists')
    job_dir.mkdir()
    return job_dir


def apply(text: str) -> None:
    objects = [o for o in yaml.safe_load_all(text) if o]
    runtimes = {o["metadata"]["name"]: o for o in objects if o["kind"] in ("ClusterTrainingRuntime",
                                                                            "TrainingRuntime")}
    for name, runtime in runtimes.items():
        (_state() / f"runtime-{name}.json").write_text(json.dumps(runtime))
        print(f"clustertrainingruntime.trainer.kubeflow.org/{name} configured")
    for trainjob in (o for o in objects if o["kind"] == "TrainJob"):
        name = trainjob["metadata"]["name"]
        ref = trainjob["spec"]["runtimeRef"]["name"]
        runtime_file = _state() / f"runtime-{ref}.json"
        if not runtime_file.exists():
            sys.exit(f'Error from server: admission webhook denied the request: runtime "{ref}" not found')
        runtime = json.loads(runtime_file.read_text())
        pods = pods_of(trainjob, runtime)
        _place(pods, "node")
        job_dir = _new_job_dir(name, "trainjobs.trainer.kubeflow.org")
        if "torch" in runtime["spec"]["mlPolicy"]:
            job = Job("trainjob", pods, first=("node",), then=(), ends=("node",))
        else:
            _secret(job_dir, {"id_rsa": 0o640, "id_rsa.pub": 0o644, "authorized_keys": 0o644})
            slots = trainjob["spec"]["trainer"].get("numProcPerNode") or 1
            _files(job_dir, {"hostfile": (hostfile(pods, slots), 0o444)})
            job = Job("trainjob", pods, first=("node",), then=("launcher",), ends=("launcher",))
        _launch(name, job, trainjob["spec"].get("activeDeadlineSeconds", 3600))
        print(f"trainjob.trainer.kubeflow.org/{name} created")
    for mpijob in (o for o in objects if o["kind"] == "MPIJob"):
        name = mpijob["metadata"]["name"]
        pods = mpijob_pods(mpijob)
        _place(pods, "worker")
        job_dir = _new_job_dir(name, "mpijobs.kubeflow.org")
        mount = mpijob["spec"].get("sshAuthMountPath") or "/root/.ssh"
        mode = 0o600 if mount == "/root/.ssh" else 0o644  # the Secret volume's defaultMode
        _secret(job_dir, {"id_rsa": mode, "id_rsa.pub": mode, "authorized_keys": mode})
        _files(job_dir, {"hostfile": (hostfile(pods, mpijob["spec"].get("slotsPerWorker") or 1), 0o444),
                         "discover_hosts.sh": (discover_hosts(pods), 0o555)})
        if mpijob["spec"].get("launcherCreationPolicy") == "WaitForWorkersReady":
            job = Job("mpijob", pods, ("worker",), ("launcher",), ("launcher",), ok="Succeeded")
        else:  # AtStartup: launcher and workers together (mpirun's ssh retries cover the workers' start)
            job = Job("mpijob", pods, ("worker", "launcher"), (), ("launcher",), ok="Succeeded")
        _launch(name, job, (mpijob["spec"].get("runPolicy") or {}).get("activeDeadlineSeconds", 3600))
        print(f"mpijob.kubeflow.org/{name} created")


def _job_pods() -> list[tuple[Path, Pod]]:
    out = []
    for job_file in sorted(_state().glob("*/job.json")):
        out += [(job_file.parent, Pod(**p)) for p in json.loads(job_file.read_text())["job"]["pods"]]
    return out


def _pod_json(pod: Pod) -> dict[str, Any]:
    state, code = _state_of(pod)
    phase = {"running": "Running", "exited": "Succeeded" if code == "0" else "Failed"}.get(state, "Pending")
    return {"metadata": {"name": pod.name, "labels": pod.labels}, "spec": {"nodeName": pod.host},
            "status": {"phase": phase, "hostIP": pod.address}}


def get(args: list[str]) -> None:
    if args[0] == "pods":
        key, _, value = args[args.index("-l") + 1].partition("=")
        items = [_pod_json(p) for _, p in _job_pods() if p.labels.get(key) == value]
        print(json.dumps({"items": items}))
        return
    job_dir = _state() / args[1]
    if not (job_dir / "job.json").exists():
        sys.exit(f'Error from server (NotFound): {args[0]} "{args[1]}" not found')
    status = json.loads((job_dir / "status.json").read_text()) if (job_dir / "status.json").exists() else {}
    print(json.dumps({"metadata": {"name": args[1]}, "status": status}))


def logs(name: str) -> None:
    for _, pod in _job_pods():
        if pod.name == name:
            out = _docker(pod, "logs", pod.name)
            sys.stdout.write(out.stdout + out.stderr)
            return
    sys.exit(f'Error from server (NotFound): pods "{name}" not found')


def delete(resource: str, name: str) -> None:
    job_dir = _state() / name
    if not job_dir.exists():
        return
    pid = job_dir / "controller.pid"
    if pid.exists():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(pid.read_text()), 15)
    for directory, pod in _job_pods():
        if directory == job_dir:
            _docker(pod, "rm", "-f", pod.name)
    shutil.rmtree(job_dir, ignore_errors=True)
    print(f'{resource} "{name}" deleted')


def main(argv: list[str]) -> None:
    if argv and argv[0] == "controller":
        return controller(argv[1])
    while argv and argv[0].startswith("--namespace"):  # one namespace here
        argv = argv[2:] if argv[0] == "--namespace" else argv[1:]
    verb, args = argv[0], argv[1:]
    if verb == "version":
        print(json.dumps({"serverVersion": {"gitVersion": VERSION}}))
    elif verb == "apply":
        apply(sys.stdin.read())
    elif verb == "get":
        get(args)
    elif verb == "logs":
        logs(args[0])
    elif verb == "delete":
        delete(args[0], args[1])
    else:
        sys.exit(f"the emulator does not answer kubectl {verb}")


if __name__ == "__main__":
    main(sys.argv[1:])
