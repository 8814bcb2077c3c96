"""Launch plans (pure): where each worker runs and the exact argv and environment on every host.

A plan is data: `repro bench --dry-run` prints it (`describe`), the runtime executes exactly that. Every
command is an argv list; nothing is interpolated into a shell string. The runtime named by the plan
builds it (repro.launch.runtimes), with the launcher it names (repro.launch.launchers) and the workload's
command (repro.launch.workloads).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from repro.hosts.inventory import Host
from repro.launch.placement import Placement
from repro.results.record import Settings
from repro.secrets import is_secret, redact_argv, redact_text

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
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
class PlanContext:
    """What a plan needs besides the point and its placement (pure values, no I/O)."""

    run_id: str
    stack_env: dict[str, str] = field(default_factory=dict)
    gpu: bool = False
    image: str | None = None  # the image reference, for container runtimes
    ssh_port: int = 50000  # the stack's container sshd
    python: str | None = None  # None: each host's repro_python (host runtime) or the image's python3
    infiniband: bool = False
    launcher: str = "mpirun"
    framework: str | None = None  # the stack's framework: it picks a workload family's program
    # where each rank's NCCL writes its INFO lines (repro.launch.nccl_files); None: the point does not use NCCL
    nccl_dir: str | None = None


@dataclass(frozen=True)
class ContainerPlan:
    """A worker container a runtime starts on one host (and removes afterwards)."""

    host: Host
    name: str
    run_argv: list[str]
    remove_argv: list[str]


@dataclass(frozen=True)
class LaunchPlan:
    """Everything one point runs, on every host."""

    point: Settings
    placement: tuple[Placement, ...]
    runtime: str
    launcher_name: str
    env: dict[str, str]
    launch_argv: list[str]  # the launcher's command line (mpirun ...)
    exec_argv: list[str]  # exactly what runs on the first host: the launch command in its runtime, env included
    containers: tuple[ContainerPlan, ...] = field(default_factory=tuple)
    nccl_dir: str | None = None  # where the runtime reads the ranks' NCCL files back (None: not a NCCL run)

    @property
    def launcher(self) -> Host:
        return self.placement[0].host

    def describe(self) -> list[str]:
        """What runs, host by host, each command shell-quoted (for --dry-run); secrets shown as <redacted:..>."""
        p = self.point
        label = " ".join(f"{k}={_CONTROL.sub('?', redact_text(str(v)))}" for k, v in (
            ("workload", p.workload), ("model", p.model), ("workers", p.workers), ("batch/worker", p.batch_per_worker),
            ("precision", p.precision), ("xla", p.xla), ("backend", p.backend)) if v is not None)
        lines = [f"# point: {label}"]
        lines += [f"[{c.host.name}] {shlex.join(redact_argv(c.run_argv))}" for c in self.containers]
        secret = sorted(secret_env(self.env))
        if secret:
            lines.append(f"# on the standard input of the command below: {', '.join(secret)} (secret values)")
        lines.append(f"[{self.launcher.name}] {shlex.join(redact_argv(self.exec_argv))}")
        lines += [f"[{c.host.name}] {shlex.join(c.remove_argv)}" for c in self.containers]
        return lines

    def files(self) -> dict[str, str]:
        """Files the plan is made of, by name, for `repro bench --dry-run --emit DIR` (none: commands only)."""
        return {}


NCCL_SUBSYSTEMS = "INIT,NET,GRAPH,ENV"  # the lines that name the path (docs/fabric.md); COLL would log every call


def nccl_debug_env(directory: str) -> dict[str, str]:
    """What makes NCCL write its path to one file per host and process under `directory` (GPU stacks), out of the
    workload's output: NCCL_DEBUG_FILE's %h and %p are NCCL's own host and pid placeholders."""
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": NCCL_SUBSYSTEMS,
            "NCCL_DEBUG_FILE": f"{directory.rstrip('/')}/nccl.%h.%p.log"}


def run_env(stack_env: dict[str, str], *, interface: str, gpu: bool, nccl_dir: str | None = None) -> dict[str, str]:
    """The environment of the launcher and every rank: the stack's settings plus what repro needs (with `nccl_dir`:
    NCCL's INFO lines to one file per process there)."""
    env = {"PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    if gpu:
        env.setdefault("NCCL_SOCKET_IFNAME", interface)
    env.update(stack_env)
    if nccl_dir:  # over the stack's own NCCL_DEBUG*: the record's path needs INFO, and out of the workload's output
        env.update(nccl_debug_env(nccl_dir))
    return env


# bash reads the secret variables (NUL-terminated NAME=VALUE records) from its standard input and exports them, then
# runs the command: secret values reach the launch through a pipe, never a command line, which every local user can
# read in /proc/PID/cmdline (and which an SSH server logs).
ENV_FROM_STDIN = ("bash", "-c", 'while IFS= read -r -d "" kv; do export "$kv"; done; exec "$@"', "repro-env")


def secret_env(env: dict[str, str]) -> dict[str, str]:
    """The variables of `env` that hold a secret, by name or by the shape of the value."""
    return {k: v for k, v in env.items() if is_secret(k, str(v))}


def plain_env(env: dict[str, str]) -> dict[str, str]:
    """The variables of `env` that hold no secret (they may go on a command line)."""
    return {k: v for k, v in env.items() if not is_secret(k, str(v))}


def env_command(env: dict[str, str], argv: list[str]) -> list[str]:
    """argv run with `env`: plain variables as `env NAME=VALUE`, secret ones read from stdin (ENV_FROM_STDIN)."""
    secret = ENV_FROM_STDIN if secret_env(env) else ()
    return ["env", *(f"{k}={v}" for k, v in sorted(plain_env(env).items())), *secret, *argv]


def env_input(env: dict[str, str]) -> bytes | None:
    """What the command of env_command (or of a runtime's ENV_FROM_STDIN) reads on stdin: the secret variables."""
    secret = secret_env(env)
    return b"".join(f"{k}={v}".encode() + b"\0" for k, v in sorted(secret.items())) or None
