"""The `docker` runtime: a worker container from the stack's image on every host (host networking,
IPC_LOCK, devices, dataset, sshd on the stack's port with a per-run key), then the launcher inside the
first host's container across all of them (seed 003's appendix, automated)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

from repro.errors import HostError, LaunchError
from repro.extras import need
from repro.hosts.inventory import Host
from repro.hosts.remote import Remote, docker_argv, reachable
from repro.hosts.ship import remote_image_id
from repro.launch.launchers import LAUNCHERS, SshOptions
from repro.launch.nccl_files import joined
from repro.launch.placement import Placement
from repro.launch.plan import (
    CONTAINER_DATA,
    ENV_FROM_STDIN,
    FORWARDED_DOCKER,
    FORWARDED_DOCKER_GPU,
    LAUNCH_KEY,
    LAUNCH_KNOWN_HOSTS,
    ContainerPlan,
    LaunchPlan,
    PlanContext,
    env_input,
    plain_env,
    run_env,
    secret_env,
)
from repro.launch.runtimes import RUNTIMES, JobStep, Outcome, Runtime, RuntimeReport, Via
from repro.launch.runtimes.docker_job import docker_job
from repro.launch.runtimes.nccl_read import read_nccl, remove_dir
from repro.launch.runtimes.watch import Watch, supervise
from repro.launch.workloads import program
from repro.manifest.schema import Stack
from repro.results.provenance import ImageLock
from repro.results.record import Settings

SSHD_WAIT = 30.0
LABEL = "repro.managed=1"


def container_plan(host: Host, run_id: str, image: str, ssh_port: int, *, gpus: bool,
                   infiniband: bool = False, nccl_dir: str | None = None) -> ContainerPlan:
    """docker run on one host: host networking, IPC_LOCK, devices, the dataset, sshd on the stack's port (and
    `nccl_dir` bound from the host's `nccl_dir/HOST`: hosts on one machine share its /tmp)."""
    name = f"repro-{run_id}-{host.name}"
    docker = ["docker", "-H", host.docker_host]
    run = [*docker, "run", "--detach", "--name", name, "--label", LABEL, "--label", f"repro.run={run_id}",
           "--network", "host", "--cap-add", "IPC_LOCK", "--shm-size", "1g"]
    if gpus:
        run += ["--gpus", "all"]
    if infiniband:
        # RDMA registers (locks) GPU and host buffers with the HCA
        run += ["--device", "/dev/infiniband", "--ulimit", "memlock=-1"]
    if host.dataset_dir:
        run += ["--volume", f"{host.dataset_dir}:{CONTAINER_DATA}:ro"]
    if nccl_dir:
        run += ["--volume", f"{nccl_dir}/{host.name}:{nccl_dir}"]
    run += [image, "/usr/sbin/sshd", "-D", "-e", "-p", str(ssh_port)]
    return ContainerPlan(host, name, run, [*docker, "rm", "--force", name])


@RUNTIMES.register("docker")
class DockerRuntime(Runtime):
    """Worker containers from the stack's image on every host; the launcher inside the first one."""

    name: ClassVar[str] = "docker"
    needs_image: ClassVar[bool] = True
    image_based: ClassVar[bool] = True

    def __init__(self, stack: Stack, image: ImageLock | None) -> None:
        if image is None:
            raise LaunchError("the docker runtime needs the stack's image", hint="run `repro up STACK` first")
        self.stack = stack
        self.image = image

    @classmethod
    def plan(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext) -> LaunchPlan:
        if ctx.image is None:
            raise LaunchError("the docker runtime needs the stack's image (run `repro up STACK` first)")
        first = placement[0].host
        env = run_env(ctx.stack_env, interface=first.interface, gpu=ctx.gpu, nccl_dir=ctx.nccl_dir)
        data = CONTAINER_DATA if point.data == "real" else point.data
        command = program(point.workload, ctx.framework).command(point, ctx.python or "python3", data=data)
        ssh = SshOptions(ctx.ssh_port, LAUNCH_KEY, LAUNCH_KNOWN_HOSTS)
        containers = tuple(container_plan(p.host, ctx.run_id, ctx.image, ctx.ssh_port,
                                          gpus=ctx.gpu and p.host.gpus > 0, infiniband=ctx.infiniband,
                                          nccl_dir=ctx.nccl_dir)
                           for p in placement)
        argv = LAUNCHERS.get(ctx.launcher).argv(placement, command, list(env), interface=first.interface, ssh=ssh,
                                               forwarded=FORWARDED_DOCKER_GPU if ctx.gpu else FORWARDED_DOCKER)
        env_args = [a for k, v in sorted(plain_env(env).items()) for a in ("--env", f"{k}={v}")]
        inside = argv
        if secret_env(env):  # secret values on docker exec's stdin, read inside the container (never an argument)
            env_args, inside = ["-i", *env_args], [*ENV_FROM_STDIN, *argv]
        exec_argv = docker_argv(first, "exec", *env_args, containers[0].name, *inside)
        return LaunchPlan(point, placement, cls.name, ctx.launcher, env, argv, exec_argv, containers,
                          nccl_dir=ctx.nccl_dir)

    @classmethod
    def job(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext,
            nodes: tuple[Host, ...]) -> JobStep:
        """Inside a batch job: a worker container per node, started and removed by the job (docker_job)."""
        if ctx.image is None:
            raise LaunchError("the docker runtime needs the stack's image (run `repro up STACK` first)")
        first = placement[0].host
        data = CONTAINER_DATA if point.data == "real" else point.data
        command = program(point.workload, ctx.framework).command(point, ctx.python or "python3", data=data)
        env = run_env(ctx.stack_env, interface=first.interface, gpu=ctx.gpu, nccl_dir=ctx.nccl_dir)
        return docker_job(command, env, ctx, nodes,
                          dataset=first.dataset_dir, placement_nodes=len(placement))

    def node_command(self, argv: list[str], host: Host) -> list[str]:
        """argv once in the stack's image on `host`'s engine (a check under a batch scheduler)."""
        return docker_argv(host, "run", "--rm", "--network", "none", "--entrypoint", argv[0], self.image.tag,
                           *argv[1:])

    # -- helpers
    def _on(self, host: Host, argv: list[str], *, timeout: float = 120, data: bytes | None = None, check=True):
        with Remote(host) as remote:
            return remote.run(argv, timeout=timeout, input=data, check=check)

    def prepare(self, hosts: list[Host], backend: str, via: Via | None = None,
                progress: Callable[[str], None] | None = None) -> RuntimeReport:
        """Check, on every host at once, that its engine answers and holds the locked image; the report carries
        the image ids found. LaunchError naming each host and what is wrong there."""
        def one(host: Host) -> tuple[str, str | None, str | None]:
            try:
                with (via or Remote)(host) as remote:
                    found = remote_image_id(remote, self.image.tag)
            except HostError as exc:
                return host.name, None, exc.message.removeprefix(f"{host.name}: ")
            if found is None:
                return host.name, None, f"image {self.image.tag} is not there"
            if found != self.image.image_id:
                locked = self.image.image_id[:19]
                return host.name, found, f"{self.image.tag} there is {found[:19]}, the lock says {locked}"
            return host.name, found, None

        with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:
            checked = list(pool.map(one, hosts))
        problems = [f"{name}: {why}" for name, _, why in checked if why]
        if problems:
            raise LaunchError("the stack's image cannot run on every host; nothing was started\n  "
                              + "\n  ".join(problems), hint="ship it first: repro up STACK --hosts INVENTORY")
        return RuntimeReport(image=self.image, host_image_ids={name: found for name, found, _ in checked})

    def cleanup_stale(self, hosts: list[Host]) -> list[str]:
        """Remove containers an earlier, interrupted run left on the hosts; returns what was removed."""
        removed = []
        for host in hosts:
            try:
                res = self._on(host, docker_argv(host, "ps", "-aq", "--filter", f"label={LABEL}"),
                               timeout=60, check=False)
            except HostError:
                continue
            ids = res.stdout.split()
            if ids:
                self._on(host, docker_argv(host, "rm", "--force", *ids), timeout=120, check=False)
                removed += [f"{host.name}:{i}" for i in ids]
        return removed

    def _remove(self, containers: tuple[ContainerPlan, ...]) -> tuple[str, ...]:
        """Remove the point's containers on every host in parallel; names the hosts that could not be cleaned."""
        def one(c: ContainerPlan) -> str | None:
            if not reachable(c.host, timeout=3):
                return c.host.name
            try:
                self._on(c.host, c.remove_argv, timeout=60, check=False)
                return None
            except HostError:
                return c.host.name

        with ThreadPoolExecutor(max_workers=max(1, len(containers))) as pool:
            return tuple(h for h in pool.map(one, containers) if h)

    def _start(self, plan: LaunchPlan) -> None:
        serialization = need("cryptography.hazmat.primitives.serialization", "hosts", "the docker runtime's launch key")
        ed25519 = need("cryptography.hazmat.primitives.asymmetric.ed25519", "hosts", "the docker runtime's launch key")
        Ed25519PrivateKey = ed25519.Ed25519PrivateKey

        key = Ed25519PrivateKey.generate()
        private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                    serialization.NoEncryption())
        public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        port = self.stack.container.ssh_port
        write = ["sh", "-c", 'umask 077 && mkdir -p /root/.ssh && cat > "$0"']
        known: list[str] = []
        for c in plan.containers:
            self._on(c.host, c.run_argv, timeout=120)
            self._on(c.host, docker_argv(c.host, "exec", "-i", c.name, *write, "/root/.ssh/authorized_keys"),
                     data=public + b" repro-launch\n")
            keys = self._on(c.host, docker_argv(c.host, "exec", c.name, "sh", "-c",
                                                 "cat /etc/ssh/ssh_host_*_key.pub"), timeout=60)
            for line in keys.stdout.splitlines():
                parts = line.split()
                if len(parts) >= 2:
                    known.append(f"[{c.host.address}]:{port} {parts[0]} {parts[1]}")
        first = plan.containers[0]
        self._on(first.host, docker_argv(first.host, "exec", "-i", first.name, *write, LAUNCH_KEY), data=private)
        self._on(first.host, docker_argv(first.host, "exec", "-i", first.name, *write, LAUNCH_KNOWN_HOSTS),
                 data=("\n".join(known) + "\n").encode())
        # every other container's sshd must accept the launch key before mpirun tries it
        for c in plan.containers[1:]:
            deadline = time.monotonic() + SSHD_WAIT
            probe = docker_argv(first.host, "exec", first.name, "ssh", "-p", str(port), "-i", LAUNCH_KEY,
                                 "-o", f"UserKnownHostsFile={LAUNCH_KNOWN_HOSTS}", "-o", "StrictHostKeyChecking=yes",
                                 "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", c.host.address, "true")
            while True:
                res = self._on(first.host, probe, timeout=30, check=False)
                if res.ok:
                    break
                if time.monotonic() > deadline:
                    raise LaunchError(f"{c.host.name}: the container's sshd on port {port} does not accept the "
                                      f"launch key:\n{res.tail()}")
                time.sleep(1)

    def _containers_alive(self, plan: LaunchPlan) -> str | None:
        for c in plan.containers:
            res = self._on(c.host, docker_argv(c.host, "inspect", "--format", "{{.State.Running}}", c.name),
                           timeout=20, check=False)
            if res.ok and res.stdout.strip() != "true":
                return f"the worker container on {c.host.name} is no longer running"
            if not res.ok and "No such" in res.stderr:
                return f"the worker container on {c.host.name} is gone"
            if not res.ok and "Cannot connect" in res.stderr:
                return f"the Docker engine on {c.host.name} stopped answering"
        return None

    def run(self, plan: LaunchPlan, timeout: float, progress: Callable[[str], None] | None = None) -> Outcome:
        started = time.monotonic()
        failure: str | None = None
        code: int | None = None
        out = err = ""
        try:
            try:
                self._start(plan)
            except (HostError, LaunchError) as exc:
                failure = f"starting the worker containers failed: {exc.message}"
                return Outcome("", "", None, time.monotonic() - started, failure, self._remove(plan.containers))
            with Remote(plan.launcher) as remote:
                proc = remote.start(plan.exec_argv, input=env_input(plan.env))
                try:
                    with Watch([p.host for p in plan.placement], lambda: self._containers_alive(plan)) as watch:
                        code, failure = supervise(proc, watch, timeout, started, progress)
                finally:
                    if failure or code is None:
                        proc.stop()
                    proc.wait(5)
                    out, err = proc.output()
        except BaseException:
            # Ctrl-C or anything unexpected: still clean every host before letting it propagate
            self._remove(plan.containers)
            raise
        nccl_log = self._nccl_files(plan) if plan.nccl_dir else None
        pending = self._remove(plan.containers)
        if plan.nccl_dir:
            for c in plan.containers:
                remove_dir(c.host, plan.nccl_dir)
        return Outcome(out, err, code, time.monotonic() - started, failure, pending, nccl_log=nccl_log)

    def _nccl_files(self, plan: LaunchPlan) -> str:
        """The ranks' NCCL files, read on each host from the directory bound into its container; the container
        (root, the files' owner) empties it, so that the host's user can remove it once the container is gone."""
        assert plan.nccl_dir is not None
        text = joined(read_nccl(c.host, f"{plan.nccl_dir}/{c.host.name}") for c in plan.containers)
        for c in plan.containers:
            with contextlib.suppress(HostError):
                self._on(c.host, docker_argv(c.host, "exec", c.name, "find", plan.nccl_dir, "-mindepth", "1",
                                             "-delete"), timeout=60, check=False)
        return text
