"""Runtimes execute a LaunchPlan on real hosts and always clean up after themselves.

- `host`: the hosts' own TensorFlow, Horovod and MPI (bare metal, laptops), after checking that they
  match the stack and refusing otherwise.
- `docker`: a worker container from the stack's image on every host (host networking, IPC_LOCK,
  devices, dataset, sshd on the stack's port with a per-run key), then mpirun inside the first
  host's container across all of them (seed 003's appendix, automated).

While a point runs, every remote host is probed; a host that stops answering, a dead container, the
time limit or Ctrl-C end the point promptly, and repro's containers are removed from every host it
can still reach (the rest are swept at the start of the next run).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from repro.errors import HostError, LaunchError
from repro.hosts.inventory import Host
from repro.hosts.remote import Remote, RemoteProcess, docker_argv, reachable
from repro.launch.plan import LAUNCH_KEY, LAUNCH_KNOWN_HOSTS, ContainerPlan, LaunchPlan
from repro.manifest.schema import Stack

PROBE_INTERVAL = 2.0
PROBE_FAILURES = 2  # consecutive failed probes before a host counts as gone
SSHD_WAIT = 30.0

HOST_PROBE = r"""
import json, platform, subprocess, sys
out = {"python": platform.python_version(), "executable": sys.executable}
try:
    import tensorflow as tf
    out["tensorflow"] = tf.__version__
except Exception as exc:
    out["tensorflow_error"] = str(exc)[:200]
try:
    import horovod
    out["horovod"] = horovod.__version__
    import horovod.tensorflow as hvd
    out["horovod_built"] = {"mpi": bool(hvd.mpi_built()), "gloo": bool(hvd.gloo_built()),
                            "nccl": bool(hvd.nccl_built())}
except Exception as exc:
    out["horovod_error"] = str(exc)[:200]
try:
    text = subprocess.run(["mpirun", "--version"], capture_output=True, text=True, timeout=30).stdout
    out["mpi"] = text.splitlines()[0] if text else ""
except Exception as exc:
    out["mpi_error"] = str(exc)[:200]
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Outcome:
    """How a point ended."""

    stdout: str
    stderr: str
    returncode: int | None
    duration_s: float
    failure: str | None = None
    cleanup_pending: tuple[str, ...] = ()


def _mpi_version(text: str) -> str:
    # "mpirun (Open MPI) 4.1.4" -> "4.1.4"
    return text.strip().split()[-1] if text.strip() else ""


def host_mismatches(stack: Stack, found: dict, *, backend: str) -> list[str]:
    """What differs between a host's installed software and the stack (pure)."""
    problems = []
    if "tensorflow" not in found:
        problems.append(f"TensorFlow is not importable ({found.get('tensorflow_error', 'not installed')})")
    elif found["tensorflow"] != stack.tensorflow.version:
        problems.append(f"TensorFlow {found['tensorflow']}, the stack pins {stack.tensorflow.version}")
    if "horovod" not in found:
        problems.append(f"Horovod is not importable ({found.get('horovod_error', 'not installed')})")
    elif found["horovod"] != stack.horovod.version:
        problems.append(f"Horovod {found['horovod']}, the stack pins {stack.horovod.version}")
    built = found.get("horovod_built", {})
    if backend == "gloo" and built and not built.get("gloo"):
        problems.append("Horovod was built without Gloo")
    if backend == "mpi" and built and not built.get("mpi"):
        problems.append("Horovod was built without MPI")
    if ".".join(found.get("python", "").split(".")[:2]) != ".".join(stack.python.split(".")[:2]):
        problems.append(f"Python {found.get('python')}, the stack pins {stack.python}")
    mpi = _mpi_version(found.get("mpi", ""))
    if stack.mpi.implementation == "openmpi" and mpi and mpi != stack.mpi.version:
        problems.append(f"Open MPI {mpi}, the stack pins {stack.mpi.version}")
    if not mpi:
        problems.append(f"mpirun not found ({found.get('mpi_error', 'not on PATH')})")
    return problems


def check_hosts(stack: Stack, hosts: list[Host], *, backend: str) -> dict[str, dict]:
    """Probe each host's software; LaunchError listing every mismatch if any host differs from the stack."""
    found: dict[str, dict] = {}
    problems: list[str] = []
    for host in hosts:
        with Remote(host) as remote:
            res = remote.run([host.python, "-c", HOST_PROBE], timeout=180)
        try:
            found[host.name] = json.loads(res.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise LaunchError(f"{host.name}: cannot run {host.python} to check the installed software:\n"
                              f"{res.tail()}") from None
        problems += [f"{host.name}: {p}" for p in host_mismatches(stack, found[host.name], backend=backend)]
    if problems:
        raise LaunchError("refusing the host runtime: the hosts' software does not match the stack\n  "
                          + "\n  ".join(problems),
                          hint="install the stack's versions (scripts/setup.sh does for the CPU stacks), or use "
                          "--runtime docker with the stack's image")
    return found


class _Watch:
    """Background probes of the remote hosts of a running point."""

    def __init__(self, hosts: list[Host], extra: Callable[[], str | None] | None = None) -> None:
        self.hosts = [h for h in hosts if not h.local]
        self.extra = extra
        self.problem: str | None = None
        self._stop = threading.Event()
        self._misses = {h.name: 0 for h in self.hosts}
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Watch:
        if self.hosts or self.extra:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()

    def _run(self) -> None:
        last_extra = 0.0
        while not self._stop.wait(PROBE_INTERVAL):
            for host in self.hosts:
                if reachable(host, timeout=PROBE_INTERVAL):
                    self._misses[host.name] = 0
                else:
                    self._misses[host.name] += 1
                    if self._misses[host.name] >= PROBE_FAILURES:
                        self.problem = (f"host {host.name} ({host.address}) stopped answering "
                                        f"(no SSH connection for {PROBE_FAILURES * PROBE_INTERVAL:.0f} s)")
                        return
            if self.extra and time.monotonic() - last_extra > 3 * PROBE_INTERVAL:
                last_extra = time.monotonic()
                try:
                    problem = self.extra()
                except HostError as exc:
                    problem = exc.message
                if problem:
                    self.problem = problem
                    return


def _supervise(proc: RemoteProcess, watch: _Watch, timeout: float, started: float) -> tuple[int | None, str | None]:
    """Wait for the launcher; return (exit code, failure reason)."""
    while True:
        code = proc.poll()
        if code is not None:
            return code, None
        if watch.problem:
            return None, watch.problem
        if time.monotonic() - started > timeout:
            return None, f"the point did not finish within its time limit of {timeout:.0f} s"
        time.sleep(0.2)


class HostRuntime:
    """Run on the hosts' own installed software."""

    name = "host"

    def __init__(self, stack: Stack) -> None:
        self.stack = stack

    def prepare(self, hosts: list[Host], backend: str) -> dict:
        return {"runtime": "host", "hosts": check_hosts(self.stack, hosts, backend=backend)}

    def run(self, plan: LaunchPlan, timeout: float) -> Outcome:
        started = time.monotonic()
        env = [f"{k}={v}" for k, v in sorted(plan.env.items())]
        with Remote(plan.launcher) as remote:
            proc = remote.start(["env", *env, *plan.launch_argv])
            hosts = [p.host for p in plan.placement]
            try:
                with _Watch(hosts) as watch:
                    code, failure = _supervise(proc, watch, timeout, started)
            except BaseException:
                proc.stop()
                raise
            if failure:
                proc.stop()
                proc.wait(10)
            out, err = proc.output()
            return Outcome(out, err, code, time.monotonic() - started, failure)

    def cleanup_stale(self, hosts: list[Host]) -> list[str]:
        return []


class DockerRuntime:
    """Worker containers from the stack's image on every host; mpirun inside the first one."""

    name = "docker"

    def __init__(self, stack: Stack, image: str) -> None:
        self.stack = stack
        self.image = image

    # -- helpers
    def _on(self, host: Host, argv: list[str], *, timeout: float = 120, data: bytes | None = None, check=True):
        with Remote(host) as remote:
            return remote.run(argv, timeout=timeout, input=data, check=check)

    def prepare(self, hosts: list[Host], backend: str) -> dict:
        """Check that every host's engine holds the image; returns the image ids found."""
        from repro.image.ship import remote_image_id

        ids = {}
        missing = []
        for host in hosts:
            with Remote(host) as remote:
                found = remote_image_id(remote, self.image)  # HostError if the engine does not answer
            if found:
                ids[host.name] = found
            else:
                missing.append(host.name)
        if missing:
            raise LaunchError(f"image {self.image} is not on {', '.join(missing)}",
                              hint="ship it first: repro up STACK --hosts INVENTORY")
        return {"runtime": "docker", "image": self.image, "host_image_ids": ids}

    def cleanup_stale(self, hosts: list[Host]) -> list[str]:
        """Remove containers an earlier, interrupted run left on the hosts; returns what was removed."""
        removed = []
        for host in hosts:
            try:
                res = self._on(host, docker_argv(host, "ps", "-aq", "--filter", "label=repro.managed=1"),
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
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

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

    def run(self, plan: LaunchPlan, timeout: float) -> Outcome:
        started = time.monotonic()
        hosts = [p.host for p in plan.placement]
        failure: str | None = None
        code: int | None = None
        out = err = ""
        try:
            try:
                self._start(plan)
            except (HostError, LaunchError) as exc:
                failure = f"starting the worker containers failed: {exc.message}"
                return Outcome("", "", None, time.monotonic() - started, failure, self._remove(plan.containers))
            first = plan.containers[0]
            env = [a for k, v in sorted(plan.env.items()) for a in ("--env", f"{k}={v}")]
            with Remote(first.host) as remote:
                proc = remote.start(docker_argv(first.host, "exec", *env, first.name, *plan.launch_argv))
                try:
                    with _Watch(hosts, lambda: self._containers_alive(plan)) as watch:
                        code, failure = _supervise(proc, watch, timeout, started)
                finally:
                    if failure or code is None:
                        proc.stop()
                    proc.wait(5)
                    out, err = proc.output()
        except BaseException:
            # Ctrl-C or anything unexpected: still clean every host before letting it propagate
            self._remove(plan.containers)
            raise
        pending = self._remove(plan.containers)
        return Outcome(out, err, code, time.monotonic() - started, failure, pending)
