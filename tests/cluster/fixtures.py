"""pytest fixtures for the multi-host test cluster that tests/cluster/cluster.sh builds on this machine.

The session-scoped `cluster` fixture brings up hosts h1 and h2 (network namespaces with their own sshd,
~/.ssh and Docker engine) once per session and always tears them down at the end, whether the tests
pass, fail or are interrupted. See docs/testing.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

SCRIPT = Path(__file__).resolve().with_name("cluster.sh")
DEFAULT_NAME = "rc"
UP_TIMEOUT_S = 1200  # a fresh machine builds the base image first (debootstrap)
DOWN_TIMEOUT_S = 300
FAULTS = ("sshd-stop", "sshd-start", "link-down", "link-up", "engine-kill", "engine-start", "slurmd-kill",
          "slurmd-start")
_RESTORE = {"sshd-stop": "sshd-start", "link-down": "link-up", "engine-kill": "engine-start",
            "slurmd-kill": "slurmd-start"}


class ClusterCommandError(RuntimeError):
    """cluster.sh exited non-zero; the message carries its output."""


@dataclass(frozen=True)
class ClusterHost:
    """One host of the test cluster."""

    name: str  # inventory name: h1, h2, ...
    namespace: str  # network namespace: <cluster>-h1, ...
    address: str
    ssh_dir: Path  # what this host sees as /root/.ssh
    docker_host: str | None  # unix:///.../hN/docker.sock, or None without engines


@dataclass(frozen=True)
class SlurmInfo:
    """How to reach the Slurm of a cluster brought up with --slurm (cluster.json's "slurm")."""

    conf: Path  # SLURM_CONF for every client command
    partition: str
    version: str  # 22.05.8
    controller: str  # host running slurmctld: h1
    submit_host: str  # host to run sbatch/srun/squeue on (inside it, SLURM_CONF is set): h1
    spool_dir: str  # SlurmdSpoolDir with %n for the node name
    jobcomp: Path  # jobcomp/filetxt: one line per finished job
    cpus_per_node: int
    slurmd_timeout_s: int  # a killed slurmd's node is DOWN (and its jobs NODE_FAIL) after about this


@dataclass(frozen=True)
class Cluster:
    """A running test cluster: its hosts, the files to reach them, and handles to break them."""

    name: str
    state_dir: Path
    subnet: str
    hosts: tuple[ClusterHost, ...]
    inventory: Path
    key: Path
    known_hosts: Path
    slurm: SlurmInfo | None = None  # with --slurm

    def host(self, name: str) -> ClusterHost:
        """The host called `name` (h1, h2, ...)."""
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(f"cluster {self.name} has no host {name!r}")

    def exec(self, host: str, argv: Sequence[str], *, timeout: float = 120,
             input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run argv inside `host` (its network namespace and its own ~/.ssh); never raises on failure."""
        return subprocess.run(
            ["bash", str(SCRIPT), "exec", host, *argv], env=cluster_env(self.name, self.state_dir),
            capture_output=True, text=True, timeout=timeout, input=input, check=False,
        )

    def ssh_argv(self, address: str, *, known_hosts: Path | None = None, connect_timeout: int = 5) -> list[str]:
        """ssh argv (up to the command) that logs in as root with the cluster key, host keys checked strictly."""
        return [
            "ssh", "-i", str(self.key), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={known_hosts or self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
            "-o", f"ConnectTimeout={connect_timeout}", f"root@{address}",
        ]

    def fault(self, kind: str, host: str) -> None:
        """Apply or lift one fault: sshd-stop|sshd-start|link-down|link-up|engine-kill|engine-start."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; one of {', '.join(FAULTS)}")
        _run_script(["fault", kind, host], self.name, self.state_dir, timeout=300)

    def sshd_stop(self, host: str) -> None:
        self.fault("sshd-stop", host)

    def sshd_start(self, host: str) -> None:
        self.fault("sshd-start", host)

    def link_down(self, host: str) -> None:
        self.fault("link-down", host)

    def link_up(self, host: str) -> None:
        self.fault("link-up", host)

    def engine_kill(self, host: str) -> None:
        self.fault("engine-kill", host)

    def engine_start(self, host: str) -> None:
        self.fault("engine-start", host)

    def slurmd_kill(self, host: str) -> None:
        """The node dies as Slurm sees it: its slurmd, its slurmstepds and their tasks get SIGKILL."""
        self.fault("slurmd-kill", host)

    def slurmd_start(self, host: str) -> None:
        """Start the host's slurmd again and wait until its node is usable (ReturnToService=2)."""
        self.fault("slurmd-start", host)

    @contextlib.contextmanager
    def faulted(self, kind: str, host: str) -> Iterator[None]:
        """Apply a breaking fault for the with-block and restore the host afterwards, even on failure."""
        if kind not in _RESTORE:
            raise ValueError(f"{kind!r} does not break anything; one of {', '.join(_RESTORE)}")
        self.fault(kind, host)
        try:
            yield
        finally:
            self.fault(_RESTORE[kind], host)

    def status(self) -> subprocess.CompletedProcess[str]:
        """`cluster.sh status` (exit status 0 when every host is healthy)."""
        return subprocess.run(["bash", str(SCRIPT), "status"], env=cluster_env(self.name, self.state_dir),
                              capture_output=True, text=True, timeout=120, check=False)


def cluster_env(name: str, state_dir: Path | None = None) -> dict[str, str]:
    """Environment for cluster.sh addressing cluster `name` (and state dir, when not the default)."""
    env = dict(os.environ, REPRO_CLUSTER_NAME=name)
    env.setdefault("REPRO_PYTHON", sys.executable)  # cluster.sh imports repro.image.base with the tests' Python
    env.pop("REPRO_CLUSTER_DIR", None)  # meant for the session's cluster, not for every name
    if state_dir is not None:
        env["REPRO_CLUSTER_DIR"] = str(state_dir)
    return env


def _run_script(args: Sequence[str], name: str, state_dir: Path | None, *, timeout: float) -> str:
    proc = subprocess.run(["bash", str(SCRIPT), *args], env=cluster_env(name, state_dir),
                          capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise ClusterCommandError(f"cluster.sh {' '.join(args)} exited {proc.returncode}:\n"
                                  f"{proc.stdout}{proc.stderr}")
    return proc.stderr


def load_cluster(state_dir: Path) -> Cluster:
    """Read the description cluster.sh writes (state_dir/cluster.json)."""
    data: dict[str, Any] = json.loads((state_dir / "cluster.json").read_text())
    return Cluster(
        name=data["name"],
        state_dir=Path(data["state_dir"]),
        subnet=data["subnet"],
        hosts=tuple(
            ClusterHost(name=h["name"], namespace=h["namespace"], address=h["address"],
                        ssh_dir=Path(h["ssh_dir"]), docker_host=h["docker_host"])
            for h in data["hosts"]
        ),
        inventory=Path(data["inventory"]),
        key=Path(data["key"]),
        known_hosts=Path(data["known_hosts"]),
        slurm=_slurm_info(data.get("slurm")),
    )


def _slurm_info(data: dict[str, Any] | None) -> SlurmInfo | None:
    if not data:
        return None
    return SlurmInfo(conf=Path(data["conf"]), partition=data["partition"], version=data["version"],
                     controller=data["controller"], submit_host=data["submit_host"], spool_dir=data["spool_dir"],
                     jobcomp=Path(data["jobcomp"]), cpus_per_node=int(data["cpus_per_node"]),
                     slurmd_timeout_s=int(data["slurmd_timeout_s"]))


def sibling_name(name: str, tag: str) -> str:
    """A name for a further cluster that belongs to the session's cluster `name` (another agent's or CI
    job's session on the same machine uses another name, so their extra clusters do not collide)."""
    sibling = f"{name[: 7 - len(tag)]}x{tag}"
    if not re.fullmatch(r"[a-z][a-z0-9]{0,7}", sibling):
        raise ValueError(f"cannot derive a cluster name from {name!r} and {tag!r}")
    return sibling


def default_state_dir(name: str) -> Path:
    return Path(os.environ.get("REPRO_CLUSTER_DIR") or f"/tmp/repro-cluster-{name}")


def cluster_up(name: str = DEFAULT_NAME, hosts: int = 2, *, docker: bool = True,
               state_dir: Path | None = None, slurm: bool = False) -> tuple[Cluster, str]:
    """Bring a cluster up (tearing down any leftovers first); return it and cluster.sh's messages."""
    args = ["up", str(hosts)] + (["--docker"] if docker else []) + (["--slurm"] if slurm else [])
    messages = _run_script(args, name, state_dir, timeout=UP_TIMEOUT_S)
    return load_cluster(state_dir or Path(f"/tmp/repro-cluster-{name}")), messages


def cluster_down(name: str = DEFAULT_NAME, *, state_dir: Path | None = None) -> None:
    """Remove every trace of cluster `name` (idempotent)."""
    _run_script(["down"], name, state_dir, timeout=DOWN_TIMEOUT_S)


@contextlib.contextmanager
def running_cluster(name: str, hosts: int = 2, *, docker: bool = True) -> Iterator[Cluster]:
    """A cluster up for the with-block and always torn down after it (for scripts; tests use `cluster`)."""
    try:
        up, _ = cluster_up(name, hosts, docker=docker)
        yield up
    finally:
        cluster_down(name)


def host_runtime_inventory(cluster: Cluster, path: Path) -> Path:
    """Write to `path` the cluster's inventory for the host runtime: the hosts run this Python (they share
    the machine's filesystem) and mpirun on h1 reaches the others with the cluster key and known_hosts."""
    import yaml

    inventory = yaml.safe_load(cluster.inventory.read_text())
    for host in inventory["all"]["children"]["workers"]["hosts"].values():
        host.update(repro_python=sys.executable, repro_launch_key=str(cluster.key),
                    repro_launch_known_hosts=str(cluster.known_hosts))
    path.write_text(yaml.safe_dump(inventory))
    return path


def mpirun_across(cluster: Cluster, program: Sequence[str]) -> list[str]:
    """argv of a plain mpirun started on h1, one rank on each host of the cluster, reaching the others with
    the cluster key and known_hosts (host keys checked); run it with env=cluster_env(...). The peer of
    repro's own launch in the bench/ scripts."""
    hosts = ",".join(f"{h.address}:1" for h in cluster.hosts)
    rsh = f"-i {cluster.key} -o UserKnownHostsFile={cluster.known_hosts} -o StrictHostKeyChecking=yes"
    return ["bash", str(SCRIPT), "exec", cluster.hosts[0].name, "mpirun", "--allow-run-as-root",
            "-np", str(len(cluster.hosts)), "-H", hosts, "--bind-to", "none", "--mca", "plm_rsh_args", rsh,
            "--mca", "btl_tcp_if_include", "eth0", "--mca", "oob_tcp_if_include", "eth0", "--mca", "pml", "ob1",
            "--mca", "btl", "^openib", "-x", "PATH", *program]


def unavailable_reason(*, docker: bool = True) -> str | None:
    """Why the cluster cannot run on this machine, or None when it can."""
    if os.geteuid() != 0:
        return "the test cluster needs root (network namespaces, sshd, dockerd)"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    try:
        probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"ip netns is unavailable: {exc}"
    if probe.returncode != 0:
        return f"ip netns is unavailable: {probe.stderr.strip()}"
    missing = [tool for tool in ("unshare", "nsenter", "ssh", "ssh-keygen") if shutil.which(tool) is None]
    if not Path("/usr/sbin/sshd").exists():
        missing.append("sshd (openssh-server)")
    if docker:
        missing += [tool for tool in ("dockerd", "docker") if shutil.which(tool) is None]
    if missing:
        return f"missing for the test cluster: {', '.join(missing)}"
    return None


def skip_or_fail(reason: str) -> NoReturn:
    """Skip the test, or fail it under REPRO_TESTS_STRICT=1 (scripts/test.sh): a missing prerequisite."""
    # scripts/test.sh sets REPRO_TESTS_STRICT: there a missing prerequisite is a failure, not a skip.
    if os.environ.get("REPRO_TESTS_STRICT", "") not in ("", "0"):
        pytest.fail(f"a prerequisite is missing (REPRO_TESTS_STRICT): {reason}", pytrace=False)
    pytest.skip(reason)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    # A CI job killed with SIGTERM would otherwise skip every finalizer and leave the cluster running.
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        if previous is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """Hosts h1 and h2 with sshd and Docker engines, up for the session, always torn down after it."""
    reason = unavailable_reason(docker=True)
    if reason:
        skip_or_fail(reason)
    name = os.environ.get("REPRO_CLUSTER_NAME") or DEFAULT_NAME
    state_dir = default_state_dir(name)
    with _sigterm_as_interrupt():
        try:
            # Inside the try: an interrupted or failed `up` is torn down too.
            try:
                up, _ = cluster_up(name, 2, docker=True, state_dir=state_dir)
            except ClusterCommandError as exc:
                pytest.fail(str(exc), pytrace=False)
            yield up
        finally:
            cluster_down(name, state_dir=state_dir)


# -- the Slurm cluster ------------------------------------------------------------------------------

SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "scontrol", "scancel", "sinfo")


def slurm_unavailable_reason() -> str | None:
    """Why the Slurm test cluster cannot run here (scripts/setup.sh test installs what it needs), or None."""
    reason = unavailable_reason(docker=True)
    if reason:
        return reason
    missing = [tool for tool in SLURM_TOOLS if shutil.which(tool) is None]
    if not Path("/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so").exists():
        missing.append("libpmix.so (libpmix-dev)")
    if missing:
        return f"missing for the Slurm test cluster (scripts/setup.sh test): {', '.join(missing)}"
    return None


def slurm_cluster_name() -> tuple[str, Path]:
    """Name and state dir of the session's Slurm cluster: beside, never the same as, the `cluster` one."""
    base = os.environ.get("REPRO_CLUSTER_NAME") or DEFAULT_NAME
    name = os.environ.get("REPRO_SLURM_CLUSTER_NAME") or base[:7] + "s"
    state = os.environ.get("REPRO_SLURM_CLUSTER_DIR")
    if not state and os.environ.get("REPRO_CLUSTER_DIR"):
        state = os.environ["REPRO_CLUSTER_DIR"] + "-s"
    return name, Path(state or f"/tmp/repro-cluster-{name}")


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Cluster]:
    """Hosts h1 and h2 with sshd, Docker engines and Slurm (slurmctld on h1, a slurmd on each, munged),
    up for the session under its own name, always torn down after it."""
    reason = slurm_unavailable_reason()
    if reason:
        skip_or_fail(reason)
    name, state_dir = slurm_cluster_name()
    with _sigterm_as_interrupt():
        try:
            try:
                up, _ = cluster_up(name, 2, docker=True, slurm=True, state_dir=state_dir)
            except ClusterCommandError as exc:
                pytest.fail(str(exc), pytrace=False)
            yield up
        finally:
            cluster_down(name, state_dir=state_dir)
