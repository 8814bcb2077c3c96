"""The ansible-runner adapter: run one of repro's playbooks and turn its events into per-host outcomes.

A `PlaybookRun` is the plan (pure): playbook, inventory, extra variables, tags, check mode; its `argv()`
is the equivalent `ansible-playbook` command line, which `--dry-run` prints. `run_playbook` executes a
plan with `ansible_runner.run` and reports every task result to a progress callback as it happens.
ansible-runner is imported only here, inside the function that needs it.
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
from repro.hosts.ssh_trust import check_environment
from repro.resources import data_dir as repro_data_dir
from repro.secrets import is_secret_name, marker, redact_text, redact_tree

SKIP_PREFIX = "skipped:"
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
# What repro keeps of ansible-runner's artifacts (redacted): the rest holds the caller's environment and the
# extra variables, and is never written outside a private scratch directory removed after the run.
KEPT = ("stdout", "status", "rc", "job_events")
MIN_SCRUB = 4  # shorter secret values are not searched for literally (they would blank ordinary words)


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


@dataclass(frozen=True)
class TaskResult:
    """One task's result on one host, as it streams in."""

    host: str
    role: str
    task: str
    status: str  # ok | changed | skipped | failed | unreachable
    message: str = ""
    ignored: bool = False

    @property
    def skip_reason(self) -> str | None:
        """The reason a role gave for skipping (a debug message starting with 'skipped:')."""
        if self.status == "ok" and self.message.startswith(SKIP_PREFIX):
            return self.message[len(SKIP_PREFIX):].strip()
        return None


@dataclass
class HostOutcome:
    """What happened on one host during a run."""

    host: str
    ok: int = 0
    changed: int = 0
    skipped: int = 0
    failed: int = 0
    unreachable: bool = False
    skips: list[tuple[str, str]] = field(default_factory=list)  # (role, reason)
    failure: TaskResult | None = None
    last_task: TaskResult | None = None
    facts: dict[str, Any] | None = None  # raw repro_facts output (full gather only)
    probe: str | None = None  # why the SSH port did not answer repro's own check, after Ansible found it unreachable

    @property
    def why_unreachable(self) -> str:
        """repro's own finding first: Ansible's message can hide the cause (a refused connection comes back as
        "Data could not be sent ... Broken pipe" when ssh exits before Ansible has written the module to it)."""
        said = self.failure.message if self.failure else ""
        if self.probe:
            return self.probe + (f" (Ansible: {said})" if said else "")
        return said or "no reason given"

    @property
    def status(self) -> str:
        if self.unreachable:
            return "unreachable"
        if self.failure is not None or self.failed:
            return "failed"
        return "changed" if self.changed else "ok"


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


def _message(res: dict[str, Any]) -> str:
    """The most useful one-line explanation in a module result."""
    parts = []
    msg = res.get("msg")
    if isinstance(msg, str) and msg.strip():
        parts.append(msg.strip())
    elif msg:
        parts.append(json.dumps(msg))
    if res.get("results") and not parts:  # a loop: the first failed item's message
        for item in res["results"]:
            if isinstance(item, dict) and item.get("failed"):
                parts.append(_message(item))
                break
    for key in ("stderr", "stdout"):
        text = res.get(key)
        if isinstance(text, str) and text.strip() and res.get("failed"):
            lines = [ln for ln in text.strip().splitlines() if ln.strip()]
            parts.append(" | ".join(lines[-3:]))
            break
    if res.get("rc") not in (None, 0) and res.get("failed"):
        parts.append(f"(exit {res['rc']})")
    return " ".join(parts)


class _Collector:
    """Turns ansible-runner events into TaskResults and HostOutcomes."""

    RESULT_EVENTS = frozenset({"runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable"})

    def __init__(self, progress: Callable[[TaskResult], None] | None, secrets: frozenset[str] = frozenset()) -> None:
        self.progress = progress
        self.secrets = secrets
        self.hosts: dict[str, HostOutcome] = {}
        self.stats: dict[str, dict[str, int]] = {}

    def outcome(self, host: str) -> HostOutcome:
        return self.hosts.setdefault(host, HostOutcome(host))

    def __call__(self, event: dict[str, Any]) -> bool:
        kind = event.get("event")
        data = event.get("event_data") or {}
        if kind == "playbook_on_stats":
            for key in ("ok", "changed", "skipped", "failures", "dark", "ignored", "rescued"):
                self.stats[key] = dict(data.get(key) or {})
            return True
        if kind not in self.RESULT_EVENTS or not data.get("host"):
            return True
        res = data.get("res") or {}
        host = data["host"]
        out = self.outcome(host)
        role = data.get("role") or ""
        task = data.get("task") or ""
        ignored = bool(data.get("ignore_errors"))
        if kind == "runner_on_unreachable":
            status = "unreachable"
        elif kind == "runner_on_failed":
            status = "failed"
        elif kind == "runner_on_skipped":
            status = "skipped"
        else:
            status = "changed" if res.get("changed") else "ok"
        message = "" if status == "skipped" else scrub(_message(res), self.secrets)
        result = TaskResult(host, role, task, status, message, ignored)
        if status == "unreachable":
            out.unreachable = True
            out.failure = result
        elif status == "failed" and not ignored:
            out.failure = result
        if result.skip_reason is not None:
            out.skips.append((role, result.skip_reason))
        facts = res.get("facts")
        if isinstance(facts, dict) and "system" in (facts.get("sections") or []):
            out.facts = facts
        if status != "skipped":
            out.last_task = result
        if self.progress is not None:
            self.progress(result)
        return True

    def finish(self) -> None:
        """Counts from the play recap (authoritative), where ansible-runner gave one."""
        for key, attr in (("ok", "ok"), ("changed", "changed"), ("skipped", "skipped"), ("failures", "failed")):
            for host, n in self.stats.get(key, {}).items():
                setattr(self.outcome(host), attr, int(n))
        for host in self.stats.get("dark", {}):
            self.outcome(host).unreachable = True


def secret_values(*trees: Any) -> frozenset[str]:
    """Every value whose key says secret in these trees (extra variables, host variables, an environment), as
    text: looked for literally in what Ansible printed, which redaction by name and shape cannot see."""
    found: set[str] = set()

    def walk(tree: Any, secret: bool) -> None:
        if isinstance(tree, dict):
            for k, v in tree.items():
                walk(v, secret or is_secret_name(str(k)))
        elif isinstance(tree, (list, tuple)):
            for v in tree:
                walk(v, secret)
        elif secret and isinstance(tree, (str, int, float)) and not isinstance(tree, bool) \
                and len(str(tree)) >= MIN_SCRUB:
            found.add(str(tree))

    for tree in trees:
        walk(tree, False)
    return frozenset(found)


def scrub(text: str, secrets: frozenset[str]) -> str:
    """Text with secrets of a known shape and every one of `secrets` replaced by its marker."""
    for value in sorted(secrets, key=len, reverse=True):
        if value in text:
            text = text.replace(value, marker(value))
    return redact_text(text)


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
    collector = _Collector(progress, secrets)
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


def keep_artifacts(source: Path, dest: Path, secrets: frozenset[str]) -> None:
    """Copy what is worth keeping of ansible-runner's artifacts (KEPT), every secret in them redacted."""
    if not source.is_dir():
        return
    for name in KEPT:
        path = source / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            (dest / name).write_text(scrub(text, secrets), encoding="utf-8")
        elif path.is_dir():
            (dest / name).mkdir(exist_ok=True)
            for event in sorted(path.glob("*.json")):
                try:
                    data = redact_tree(json.loads(event.read_text(encoding="utf-8")))
                except (OSError, ValueError):
                    continue
                (dest / name / event.name).write_text(scrub(json.dumps(data), secrets), encoding="utf-8")


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


def _run(ansible_runner, run: PlaybookRun, data_dir: Path, collector: _Collector, ident: str | None,
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


def _start(ansible_runner, run: PlaybookRun, data_dir: Path, collector: _Collector, ident: str | None,
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
