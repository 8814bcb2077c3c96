"""Launch plans (pure): where each worker runs and the exact argv and environment on every host.

A plan is data: `repro bench --dry-run` prints it, the runtimes execute it. Every command is an argv
list; nothing is interpolated into a shell string.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from repro.errors import InputError
from repro.hosts.inventory import Host, Inventory
from repro.results.record import Settings

CONTAINER_DATA = "/data"
CONTAINER_SSH_DIR = "/root/.ssh"
LAUNCH_KEY = f"{CONTAINER_SSH_DIR}/repro_launch"
LAUNCH_KNOWN_HOSTS = f"{CONTAINER_SSH_DIR}/repro_known_hosts"
# Forwarded to every rank: ranks started through sshd do not get the image's ENV, so they need
# its PATH (and PYTHONPATH, LD_LIBRARY_PATH) from the launcher.
FORWARDED_DOCKER = ("PATH", "PYTHONPATH")
FORWARDED_DOCKER_GPU = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH")
FORWARDED_HOST = ("PATH",)


@dataclass(frozen=True)
class Placement:
    """How many workers run on one host."""

    host: Host
    ranks: int


def place(inventory: Inventory, workers: int) -> tuple[Placement, ...]:
    """Fill hosts in inventory order, each up to its slots (seed 003: -H 192.168.11.1:4,192.168.11.2:4)."""
    if workers > inventory.slots:
        raise InputError(f"{workers} workers do not fit the inventory {inventory.path}: "
                         f"{inventory.slots} slots on {len(inventory.hosts)} hosts",
                         hint="lower --workers, or raise repro_slots in the inventory")
    out, left = [], workers
    for host in inventory.hosts:
        if left == 0:
            break
        n = min(host.slots, left)
        out.append(Placement(host, n))
        left -= n
    return tuple(out)


def host_list(placement: tuple[Placement, ...], *, local_names: bool = False) -> str:
    """mpirun's -H value: addr:slots,addr:slots (localhost for a local single host)."""
    return ",".join(f"{'localhost' if local_names and p.host.local else p.host.address}:{p.ranks}"
                    for p in placement)


def workload_argv(point: Settings, python: str, *, data: str | None = None, tf_cnn_script: str | None = None
                  ) -> list[str]:
    """The command one worker runs."""
    w = point.workload
    if w == "cnn":
        argv = [python, "-m", "repro.workloads.cnn", "--model", str(point.model),
                "--batch-size", str(point.batch_per_worker), "--precision", point.precision,
                "--xla" if point.xla else "--no-xla", "--data", data or point.data,
                "--warmup-steps", str(point.warmup_steps), "--steps", str(point.steps)]
        if point.data_format:
            argv += ["--data-format", point.data_format]
    elif w == "allreduce":
        argv = [python, "-m", "repro.workloads.allreduce"]
        for flag in ("min_exp", "max_exp", "num", "sizes", "iterations", "warmup", "dtypes"):
            if point.extra.get(flag) is not None:
                argv += ["--" + flag.replace("_", "-"), str(point.extra[flag])]
    elif w == "tta":
        argv = [python, "-m", "repro.workloads.tta", "--dataset", str(point.extra.get("dataset", "digits")),
                "--batch-size", str(point.batch_per_worker)]
        for flag in ("target_accuracy", "max_epochs", "max_seconds", "learning_rate", "model"):
            if point.extra.get(flag) is not None:
                argv += ["--" + flag.replace("_", "-"), str(point.extra[flag])]
    elif w == "tf_cnn_benchmarks":
        from repro.workloads import WorkloadError
        from repro.workloads.tf_cnn_benchmarks import tf_cnn_benchmarks_argv

        try:
            return tf_cnn_benchmarks_argv(point, python=python, data_dir=data, script=tf_cnn_script)
        except WorkloadError as exc:
            raise InputError(str(exc)) from None
    else:  # pragma: no cover - points.expand validates workloads
        raise InputError(f"unknown workload {w}")
    if point.threads:
        argv += ["--intra-threads", str(point.threads)]
    return argv


@dataclass(frozen=True)
class SshOptions:
    """How mpirun reaches the other hosts (the containers' sshd, or the hosts' own)."""

    port: int
    key: str
    known_hosts: str

    def rsh_args(self) -> str:
        # one mpirun argument holding ssh's options; host-key checking stays on
        return shlex.join(["-p", str(self.port), "-i", self.key, "-o", f"UserKnownHostsFile={self.known_hosts}",
                           "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"])


def mpirun_argv(placement: tuple[Placement, ...], command: list[str], env_names: list[str], *,
                interface: str, ssh: SshOptions | None, backend: str = "mpi",
                forwarded: tuple[str, ...] = FORWARDED_HOST) -> list[str]:
    """The mpirun (or Gloo-wrapped mpirun) command line that starts every worker."""
    workers = sum(p.ranks for p in placement)
    local = all(p.host.local for p in placement)
    argv = ["mpirun", "--allow-run-as-root", "-np", str(workers), "-H", host_list(placement, local_names=local),
            "--bind-to", "none", "--map-by", "slot",
            # TCP for MPI's own traffic (NCCL carries GPU tensors), as Horovod's docs recommend
            "--mca", "pml", "ob1", "--mca", "btl", "^openib",
            "--mca", "btl_tcp_if_include", interface, "--mca", "oob_tcp_if_include", interface]
    if ssh is not None and not local:
        argv += ["--mca", "plm_rsh_args", ssh.rsh_args()]
    for name in sorted(set(env_names) | set(forwarded)):
        argv += ["-x", name]
    argv += command
    if backend == "gloo":
        python = command[0]
        hosts = ",".join(f"{p.host.address}:{p.ranks}" for p in placement)
        return [python, "-m", "repro.workloads.gloo", "--hosts", hosts, "--iface", interface, "--", *argv]
    return argv


def run_env(stack_env: dict[str, str], *, interface: str, gpu: bool) -> dict[str, str]:
    """The environment of mpirun and every rank: the stack's settings plus what repro needs."""
    env = {"PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    if gpu:
        env.setdefault("NCCL_SOCKET_IFNAME", interface)
    env.update(stack_env)
    return env


@dataclass(frozen=True)
class ContainerPlan:
    """The worker container repro starts on one host for the docker runtime."""

    host: Host
    name: str
    run_argv: list[str]
    remove_argv: list[str]


def container_plan(host: Host, run_id: str, image: str, ssh_port: int, *, gpus: bool,
                   infiniband: bool = False) -> ContainerPlan:
    """docker run on one host: host networking, IPC_LOCK, devices, the dataset, sshd on the stack's port."""
    name = f"repro-{run_id}-{host.name}"
    docker = ["docker", "-H", host.docker_host]
    run = [*docker, "run", "--detach", "--name", name, "--label", "repro.managed=1", "--label", f"repro.run={run_id}",
           "--network", "host", "--cap-add", "IPC_LOCK", "--shm-size", "1g"]
    if gpus:
        run += ["--gpus", "all"]
    if infiniband:
        # RDMA registers (locks) GPU and host buffers with the HCA
        run += ["--device", "/dev/infiniband", "--ulimit", "memlock=-1"]
    if host.dataset_dir:
        run += ["--volume", f"{host.dataset_dir}:{CONTAINER_DATA}:ro"]
    run += [image, "/usr/sbin/sshd", "-D", "-e", "-p", str(ssh_port)]
    return ContainerPlan(host, name, run, [*docker, "rm", "--force", name])


@dataclass(frozen=True)
class LaunchPlan:
    """Everything one point runs, on every host."""

    point: Settings
    placement: tuple[Placement, ...]
    runtime: str
    env: dict[str, str]
    launch_argv: list[str]  # run on the first host (inside its container for the docker runtime)
    containers: tuple[ContainerPlan, ...] = field(default_factory=tuple)

    @property
    def launcher(self) -> Host:
        return self.placement[0].host

    def describe(self) -> list[str]:
        """Human-readable commands, host by host, for --dry-run."""
        lines = [f"# point: {self.point.workload} {self.point.model or ''} workers={self.point.workers} "
                 f"batch/worker={self.point.batch_per_worker} backend={self.point.backend}".rstrip()]
        for c in self.containers:
            lines.append(f"[{c.host.name}] {shlex.join(c.run_argv)}")
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        prefix = ""
        if self.containers:
            prefix = f"docker -H {self.launcher.docker_host} exec {self.containers[0].name} "
        lines.append(f"[{self.launcher.name}] {env} {prefix}{shlex.join(self.launch_argv)}")
        for c in self.containers:
            lines.append(f"[{c.host.name}] {shlex.join(c.remove_argv)}")
        return lines


def plan_point(point: Settings, inventory: Inventory, *, runtime: str, stack_env: dict[str, str], gpu: bool,
               run_id: str, image: str | None = None, ssh_port: int = 50000, python: str | None = None,
               infiniband: bool = False) -> LaunchPlan:
    """The launch plan of one point on an inventory, for the docker or host runtime."""
    placement = place(inventory, point.workers)
    first = placement[0].host
    interface = first.interface
    env = run_env(stack_env, interface=interface, gpu=gpu)
    if runtime == "docker":
        if image is None:
            raise InputError("the docker runtime needs the stack's image (run `repro up STACK` first)")
        from repro.image.render import TfCnnBenchmarks

        data = CONTAINER_DATA if point.data == "real" else point.data
        command = workload_argv(point, python or "python3", data=data, tf_cnn_script=TfCnnBenchmarks().script)
        ssh = SshOptions(ssh_port, LAUNCH_KEY, LAUNCH_KNOWN_HOSTS)
        containers = tuple(container_plan(p.host, run_id, image, ssh_port, gpus=gpu and p.host.gpus > 0,
                                          infiniband=infiniband) for p in placement)
        forwarded = FORWARDED_DOCKER_GPU if gpu else FORWARDED_DOCKER
        argv = mpirun_argv(placement, command, list(env), interface=interface, ssh=ssh, backend=point.backend,
                           forwarded=forwarded)
        return LaunchPlan(point, placement, runtime, env, argv, containers)
    if runtime == "host":
        data = (first.dataset_dir or "") if point.data == "real" else point.data
        command = workload_argv(point, python or first.python, data=data)
        ssh = None
        if not all(p.host.local for p in placement):
            key = first.vars.get("repro_launch_key", "~/.ssh/id_ed25519")
            known = first.vars.get("repro_launch_known_hosts", "~/.ssh/known_hosts")
            ssh = SshOptions(placement[1].host.port if len(placement) > 1 else first.port, key, known)
        argv = mpirun_argv(placement, command, list(env), interface=interface, ssh=ssh, backend=point.backend)
        return LaunchPlan(point, placement, runtime, env, argv)
    raise InputError(f"unknown runtime '{runtime}': expected docker or host")
