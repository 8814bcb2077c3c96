"""What an Ansible run did, host by host: ansible-runner's events turned into task results and host outcomes, their
messages scrubbed of secrets (repro.hosts.ansible_scrub) as they stream in."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from repro.hosts.ansible_scrub import scrub

SKIP_PREFIX = "skipped:"


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


class Collector:
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
