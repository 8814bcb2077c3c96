"""The ansible-runner adapter: run one of repro's playbooks and turn its events into per-host outcomes.

A `PlaybookRun` is the plan (pure): playbook, inventory, extra variables, tags, check mode; its `argv()`
is the equivalent `ansible-playbook` command line, which `--dry-run` prints. `run_playbook` executes a
plan with `ansible_runner.run` and reports every task result to a progress callback as it happens.
ansible-runner is imported only here, inside the function that needs it. Its events become outcomes in
repro.hosts.ansible_events; secrets are scrubbed from what it leaves by repro.hosts.ansible_scrub.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro import children
from repro.errors import BackendUnavailable
from repro.extras import need
from repro.hosts import ssh_trust
from repro.hosts.ansible_events import Collector, HostOutcome, TaskResult
from repro.hosts.ansible_scrub import keep_artifacts, secret_values
from repro.hosts.ssh_trust import check_environment
from repro.resources import data_dir as repro_data_dir
from repro.secrets import redact_tree

# Connection settings that make failures quick and explicit; the rest is in playbooks/ansible.cfg.
# Host-key checking is set here, not only in ansible.cfg: ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False
# in the environment it builds unless the caller sets it, and the environment beats ansible.cfg.
ENV = {"ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_RETRY_FILES_ENABLED": "0",
       "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_SSH_HOST_KEY_CHECKING": "True",
       "ANSIBLE_PARAMIKO_HOST_KEY_CHECKING": "True", "ANSIBLE_PARAMIKO_HOST_KEY_AUTO_ADD": "False",
       # ssh is the connection of every host that names none (an inventory naming another is refused)
       "ANSIBLE_TRANSPORT": "ssh",
       # paramiko (refused in inventories, still checked) then raises on an unknown key instead of asking on a
       # terminal no one reads; the ssh connection plugin does not use persistence, so nothing else changes
       "ANSIBLE_USE_PERSISTENT_CONNECTIONS": "True"}


@dataclass(frozen=True)
class PlaybookRun:
    """What to run: a playbook of playbooks/ against an inventory, with variables, tags and check mode."""

    playbook: str
    inventory: str
    extravars: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    check: bool = False
    limit: str | None = None
    # (host name, its own known-hosts file: repro_known_hosts, else ssh's own) for each host ssh reaches: each
    # host's ssh options name its own file only (repro.hosts.ssh_trust)
    known_hosts: tuple[tuple[str, str], ...] = ()

    @property
    def playbook_path(self) -> Path:
        return repro_data_dir("playbooks") / self.playbook

    def env(self) -> dict[str, str]:
        return {**ENV, "ANSIBLE_CONFIG": str(repro_data_dir("playbooks") / "ansible.cfg")}

    def variables(self, control_dir: str | None = None) -> dict[str, Any]:
        """Every extra variable of the run: the caller's, then repro's ssh options, per host (extra variables beat
        every other source of a variable, so these are the ones ssh gets: repro.hosts.ssh_trust); `control_dir`:
        where the hosts' ssh control sockets go."""
        return {**self.extravars, **ssh_trust.extra_vars(dict(self.known_hosts), control_dir)}

    def argv(self) -> list[str]:
        """The ansible-playbook command line equivalent to this run (run from playbooks/, with env()), secrets
        in the extra variables shown as <redacted:..>."""
        argv = ["ansible-playbook", "-i", self.inventory]
        if self.check:
            argv.append("--check")
        if self.limit:
            argv += ["--limit", self.limit]
        argv += ["-e", json.dumps(redact_tree(self.variables()), sort_keys=True)]
        if self.tags:
            argv += ["--tags", ",".join(self.tags)]
        argv.append(str(self.playbook_path))
        return argv


@dataclass
class RunOutcome:
    """The whole run: ansible-runner's status and return code, and each host's outcome."""

    run: PlaybookRun
    status: str
    rc: int
    hosts: dict[str, HostOutcome]
    artifact_dir: str | None = None

    @property
    def failed_hosts(self) -> list[HostOutcome]:
        return [h for h in self.hosts.values() if h.status in ("failed", "unreachable")]

    def output_tail(self, lines: int = 8) -> str:
        """The last lines ansible-playbook printed (errors that belong to no host, e.g. a bad --limit)."""
        if not self.artifact_dir:
            return ""
        try:
            text = (Path(self.artifact_dir) / "stdout").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join([ln for ln in text.splitlines() if ln.strip()][-lines:])


def _scratch_root() -> str | None:
    """Where ansible-runner's private data dir goes during a run: memory (/dev/shm) where there is one, since
    it holds the caller's environment and the extra variables until repro removes it."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def run_playbook(run: PlaybookRun, data_dir: str | Path, *, progress: Callable[[TaskResult], None] | None = None,
                 ident: str | None = None, timeout: int | None = None,
                 secrets: frozenset[str] = frozenset()) -> RunOutcome:
    """Run `run` through ansible-runner; report each task result to `progress`; keep a redacted copy of its
    artifacts (output and events, never its record of the environment) in `data_dir`.

    `secrets`: values known to be secret (become passwords from the inventory, ...), scrubbed from all that
    is kept or shown, with those of the caller's environment and the extra variables.
    """
    ansible_runner = need("ansible_runner", "hosts", "running Ansible playbooks")
    if not run.playbook_path.is_file():
        raise BackendUnavailable(f"playbook {run.playbook_path} not found",
                                 hint="set REPRO_PLAYBOOKS to repro's playbooks directory")
    check_environment(os.environ)
    ssh_trust.check_config_dir(run.playbook_path.parent, "playbooks directory")
    secrets = secrets | secret_values(run.extravars, dict(os.environ))
    collector = Collector(progress, secrets)
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    ident = ident or data_dir.name
    # what a killed run left: its ssh connection masters and its private data dir (environment, extra variables)
    children.remove_stale("cp", before=lambda p: children.close_ssh_masters(str(p)))
    children.remove_stale("ansible", _scratch_root())
    children.remove_stale("ansible-bin")
    # SSH control sockets of this run only (short path: unix sockets are limited to ~100 characters).
    control_dir = str(children.scratch_dir("cp"))
    private = children.scratch_dir("ansible", _scratch_root())
    try:
        # a file only this user reads, not a command-line argument every user sees in `ps`
        (private / "env").mkdir(mode=0o700)
        fd = os.open(private / "env" / "extravars", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(run.variables(control_dir), fh)
        try:
            runner = _run(ansible_runner, run, private, collector, ident, timeout, control_dir)
        finally:
            children.close_ssh_masters(control_dir)
            keep_artifacts(private / "artifacts" / ident, data_dir, secrets)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    collector.finish()
    return RunOutcome(run=run, status=str(runner.status), rc=int(runner.rc if runner.rc is not None else 1),
                      hosts=collector.hosts, artifact_dir=str(data_dir))


def _runnable(path: Path) -> bool:
    """Whether a program at `path` can be started (not on a filesystem mounted noexec)."""
    return os.access(path, os.X_OK)


def _supervised_bin(data_dir: Path, path: str, control_dir: str) -> Path:
    """A directory holding `ansible-playbook` that runs the real one under repro.children's supervisor, so that
    it and every worker and ssh it starts end when repro ends (killed included): the ssh connection masters in
    `control_dir` too, which ControlPersist detaches from its process group.

    The private data dir first; where that is mounted noexec (/dev/shm in a Docker container), a scratch dir in
    the temp directory (removed by the caller, or by the next start if repro is killed). A wrapper that cannot
    run would be skipped on PATH and the real ansible-playbook run unsupervised: refused instead."""
    real = shutil.which("ansible-playbook", path=path)
    if real is None:
        raise BackendUnavailable("ansible-playbook not found", hint="install repro[hosts] (ansible-core)")
    command = shlex.join(children.supervised([real], ssh_control_dir=control_dir))
    tried = []
    for make in (lambda: data_dir / "bin", lambda: children.scratch_dir("ansible-bin")):
        bin_dir = make()
        bin_dir.mkdir(mode=0o700, exist_ok=True)
        script = bin_dir / "ansible-playbook"
        script.write_text("#!/bin/sh\nexec " + command + ' "$@"\n', encoding="utf-8")
        script.chmod(0o700)
        if _runnable(script):
            return bin_dir
        tried.append(str(bin_dir.parent))
        if bin_dir.parent != data_dir:
            shutil.rmtree(bin_dir, ignore_errors=True)
    raise BackendUnavailable(f"no directory lets repro run ansible-playbook under its supervisor ({', '.join(tried)}: "
                             "mounted noexec)", hint="set TMPDIR to a directory on a filesystem that allows programs")


def _run(ansible_runner, run: PlaybookRun, data_dir: Path, collector: Collector, ident: str | None,
         timeout: int | None, control_dir: str):
    # this Python's bin first on PATH: ansible-runner starts ansible-playbook by name (pexpect looks it up on the
    # PATH of the environment it is given), and a virtual environment run by its full path is not on the caller's
    path = os.pathsep.join(p for p in (str(Path(sys.executable).parent), os.environ.get("PATH", "")) if p)
    bin_dir = _supervised_bin(data_dir, path, control_dir)
    try:
        return _start(ansible_runner, run, data_dir, collector, ident, timeout, control_dir,
                      os.pathsep.join((str(bin_dir), path)))
    finally:
        if bin_dir.parent != data_dir:  # the temp-directory fallback
            shutil.rmtree(bin_dir, ignore_errors=True)


def _start(ansible_runner, run: PlaybookRun, data_dir: Path, collector: Collector, ident: str | None,
           timeout: int | None, control_dir: str, path: str):
    return ansible_runner.run(
        private_data_dir=str(data_dir),
        project_dir=str(repro_data_dir("playbooks")),
        playbook=run.playbook,
        inventory=run.inventory,
        tags=",".join(run.tags) or None,
        limit=run.limit,
        cmdline="--check" if run.check else None,
        envvars={**run.env(), "ANSIBLE_SSH_CONTROL_PATH_DIR": control_dir, "PATH": path},
        quiet=True,
        event_handler=collector,
        ident=ident,
        suppress_env_files=True,  # ansible-runner writes no env/ files of its own
        timeout=timeout,
        settings={"suppress_ansible_output": True},
    )
