"""The operators' contract, executed on the test cluster: a stand-in for `kubectl` that turns the TrainJob (MPI
policy) repro renders into containers on the cluster hosts' Docker engines, with exactly what Trainer v2's MPI
plugin and JobSet give the pods, in their order. It is NOT Kubernetes and checks nothing Kubernetes checks (see
docs/kubernetes.md): it shows that what repro renders would run once the operator has done its part.

What it does, and where Trainer does it (kubeflow/trainer @ 8c0f505):
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
  and then the node pods are stopped;
- /dev/shm: a memory emptyDir is a tmpfs; pod DNS names resolve to the pod's host (host networking here, a
  pod network on a cluster).

Commands (the subset repro runs): version, apply -f -, get RESOURCE NAME -o json, get pods -l KEY=VALUE -o json,
logs POD, delete RESOURCE NAME. State lives in $REPRO_KUBE_EMULATOR (a directory); the hosts come from the test
cluster's cluster.json ($REPRO_KUBE_CLUSTER).
"""

from __future__ import annotations

import contextlib
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


@dataclass
class Pod:
    """One pod as the operator would create it."""

    name: str
    job: str  # node / launcher
    index: int
    endpoint: str  # <trainjob>-<job>-<index>-0.<trainjob>
    image: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    mounts: dict[str, str] = field(default_factory=dict)  # container path -> what: ssh | hostfile | shm
    ready_port: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    host: str = ""  # cluster host name
    address: str = ""
    docker_host: str = ""


def _main_container(pod_spec: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod_spec["containers"] if c["name"] == "node")


def pods_of(trainjob: dict[str, Any], runtime: dict[str, Any]) -> list[Pod]:
    """The pods Trainer's plugins make of a TrainJob and its MPI runtime (pure)."""
    name, spec = trainjob["metadata"]["name"], trainjob["spec"]
    trainer, mpi = spec.get("trainer") or {}, runtime["spec"]["mlPolicy"]["mpi"]
    if mpi.get("runLauncherAsNode"):
        raise SystemExit("the emulator plays runLauncherAsNode: false (repro's runtime) only")
    slots = trainer.get("numProcPerNode") or mpi.get("numProcPerNode") or 1
    mount = mpi.get("sshAuthMountPath") or "/root/.ssh"
    labels: dict[str, dict[str, str]] = {}
    for patch in spec.get("runtimePatches") or ():
        for job in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
            labels.setdefault(job["name"], {}).update(job["template"]["spec"]["template"]["metadata"]["labels"])
    pods = []
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        ancestor = (job["template"].get("metadata") or {}).get("labels", {}).get(
            "trainer.kubeflow.org/trainjob-ancestor-step") == "trainer"
        container = _main_container(job["template"]["spec"]["template"]["spec"])
        count = 1 if ancestor else (trainer.get("numNodes") or runtime["spec"]["mlPolicy"].get("numNodes") or 1)
        for i in range(count):
            env = {e["name"]: e["value"] for e in container.get("env") or ()}
            image, command = container["image"], list(container.get("command") or ())
            if ancestor:
                image, command = trainer.get("image", image), list(trainer.get("command") or command)
                env.update({e["name"]: e["value"] for e in trainer.get("env") or () if "value" in e})
            mounts = {m["mountPath"]: "shm" for m in container.get("volumeMounts") or () if m["name"] == "dshm"}
            mounts[mount] = "ssh"
            if job["name"] == "launcher":
                mounts[HOSTFILE_DIR] = "hostfile"
                env.update({"OMPI_MCA_orte_default_hostfile": f"{HOSTFILE_DIR}/hostfile",
                            "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
                            "OMPI_MCA_orte_set_default_slots": str(slots),
                            "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10"})
            probe = (container.get("readinessProbe") or {}).get("tcpSocket", {}).get("port")
            pods.append(Pod(name=f"{name}-{job['name']}-{i}-0", job=job["name"], index=i,
                            endpoint=f"{name}-{job['name']}-{i}-0.{name}", image=image, command=command, env=env,
                            mounts=mounts, ready_port=probe, labels=dict(labels.get(job["name"], {}))))
    return pods


def hostfile(pods: list[Pod], slots: int) -> str:
    return "".join(f"{p.endpoint} slots={slots}\n" for p in pods if p.job == "node")


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
    for other in pods:  # the pods' DNS names, as JobSet's headless service gives them
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


def _ready(pod: Pod) -> bool:
    if pod.ready_port is None:
        return _docker(pod, "inspect", "-f", "{{.State.Running}}", pod.name).stdout.strip() == "true"
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((pod.address, pod.ready_port)) == 0


def _secret(job_dir: Path) -> None:
    """The SSH Secret as the MPI plugin makes and mounts it."""
    ssh = job_dir / "ssh"
    ssh.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "521", "-m", "PEM", "-N", "", "-C", "",
                    "-f", str(ssh / "id_rsa")], check=True)
    shutil.copy(ssh / "id_rsa.pub", ssh / "authorized_keys")
    for name, mode in (("id_rsa", 0o640), ("id_rsa.pub", 0o644), ("authorized_keys", 0o644)):
        (ssh / name).chmod(mode)


def controller(name: str) -> None:
    """Start the job's pods in the operator's order and follow it to its end (a background process)."""
    job_dir = _state() / name
    job = json.loads((job_dir / "job.json").read_text())
    pods = [Pod(**p) for p in job["pods"]]
    status = {"conditions": []}

    def end(kind: str, reason: str, message: str = "") -> None:
        status["conditions"] = [{"type": kind, "status": "True", "reason": reason, "message": message}]
        (job_dir / "status.json").write_text(json.dumps(status))

    deadline = time.monotonic() + job["deadline"]
    try:
        for pod in pods:
            if pod.job == "node":
                _start(pod, pods, job_dir)
        while not all(_ready(p) for p in pods if p.job == "node"):
            if time.monotonic() > deadline:
                return end("Failed", "DeadlineExceeded", "node pods never became ready")
            time.sleep(0.5)
        launcher = next(p for p in pods if p.job == "launcher")
        _start(launcher, pods, job_dir)
        while _docker(launcher, "inspect", "-f", "{{.State.Running}}", launcher.name).stdout.strip() == "true":
            if time.monotonic() > deadline:
                return end("Failed", "DeadlineExceeded", "activeDeadlineSeconds passed")
            time.sleep(0.5)
        code = _docker(launcher, "inspect", "-f", "{{.State.ExitCode}}", launcher.name).stdout.strip()
        if code == "0":
            end("Complete", "JobSetCompleted", "jobset completed")
        else:
            end("Failed", "JobSetFailed", f"launcher exited {code}")
    except subprocess.CalledProcessError as exc:
        end("Failed", "PodFailed", (exc.stderr or str(exc)).strip().splitlines()[-1])
    finally:
        for pod in pods:  # JobSet's end stops the node pods (repro's delete removes them)
            if pod.job == "node":
                _docker(pod, "stop", "-t", "1", pod.name)


# ---------------------------------------------------------------- kubectl's commands

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
        pods = pods_of(trainjob, json.loads(runtime_file.read_text()))
        hosts = _hosts()
        for pod in pods:  # node i on host i (round robin); the launcher on the first host
            host = hosts[pod.index % len(hosts)] if pod.job == "node" else hosts[0]
            pod.host, pod.address, pod.docker_host = host["name"], host["address"], host["docker_host"]
        job_dir = _state() / name
        job_dir.mkdir()
        _secret(job_dir)
        (job_dir / "hostfile").mkdir()
        slots = trainjob["spec"]["trainer"].get("numProcPerNode") or 1
        (job_dir / "hostfile" / "hostfile").write_text(hostfile(pods, slots))
        (job_dir / "hostfile" / "hostfile").chmod(0o444)
        (job_dir / "job.json").write_text(json.dumps({"trainjob": trainjob, "pods": [asdict(p) for p in pods],
                                                      "deadline": trainjob["spec"].get("activeDeadlineSeconds",
                                                                                       3600)}))
        log = open(job_dir / "controller.log", "w")  # noqa: SIM115 - the controller's own output
        proc = subprocess.Popen([sys.executable, __file__, "controller", name], stdout=log, stderr=log,
                                start_new_session=True, env=os.environ)
        (job_dir / "controller.pid").write_text(str(proc.pid))
        print(f"trainjob.trainer.kubeflow.org/{name} created")


def _job_pods() -> list[tuple[Path, Pod]]:
    out = []
    for job_file in sorted(_state().glob("*/job.json")):
        out += [(job_file.parent, Pod(**p)) for p in json.loads(job_file.read_text())["pods"]]
    return out


def _pod_json(pod: Pod) -> dict[str, Any]:
    found = _docker(pod, "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", pod.name)
    state, _, code = found.stdout.strip().partition(" ")
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
        sys.exit(f'Error from server (NotFound): trainjobs.trainer.kubeflow.org "{args[1]}" not found')
    status = json.loads((job_dir / "status.json").read_text()) if (job_dir / "status.json").exists() else {}
    print(json.dumps({"metadata": {"name": args[1]}, "status": status}))


def logs(name: str) -> None:
    for _, pod in _job_pods():
        if pod.name == name:
            out = _docker(pod, "logs", pod.name)
            sys.stdout.write(out.stdout + out.stderr)
            return
    sys.exit(f'Error from server (NotFound): pods "{name}" not found')


def delete(name: str) -> None:
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
    print(f'trainjob.trainer.kubeflow.org "{name}" deleted')


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
        delete(args[1])
    else:
        sys.exit(f"the emulator does not answer kubectl {verb}")


if __name__ == "__main__":
    main(sys.argv[1:])
