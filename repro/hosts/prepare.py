"""Preparing hosts, the pure parts: the playbook run for the options (`plan`), and what a run found.

`plan` builds the `PlaybookRun` (playbook, extra variables from the stack's pinned versions and its
image lock, tags, check mode) from the inventory, the stack and the options. repro.pipeline.prepare
runs it through ansible-runner (repro.hosts.ansible), keeps the facts (`gathered_facts`) in the store
and evaluates readiness.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro.errors import InputError
from repro.hosts.ansible import PlaybookRun, RunOutcome
from repro.hosts.facts import normalise
from repro.hosts.inventory import Inventory
from repro.manifest.resolve import LoadedStack
from repro.results.provenance import HostFacts, ImageLock

# Roles of playbooks/site.yml, in the order they run; each is also its tag.
ROLES = ("ssh_trust", "ofed", "nvidia", "gpudirect", "ipoib", "docker", "nfs_dataset")
TAGS = (*ROLES, "facts")
SITE = "site.yml"
FACTS = "facts.yml"


def stack_vars(loaded: LoadedStack, lock: ImageLock | None = None) -> dict[str, Any]:
    """Extra variables for the roles from a stack's pinned versions (and its image lock, if any)."""
    s = loaded.stack
    out: dict[str, Any] = {
        "repro_stack_name": s.name,
        "repro_stack_hash": loaded.hash,
        "repro_stack_gpu": s.gpu,
        "ssh_trust_container_port": s.container.ssh_port,
    }
    if s.ofed:
        out["ofed_version"] = s.ofed
    if s.driver:
        out["nvidia_driver_version"] = s.driver
    if s.cuda:
        out["nvidia_cuda_version"] = s.cuda
    if s.gpudirect:
        out["gpudirect_version"] = s.gpudirect
    keys = lock.sshd.host_keys if lock else None
    if keys:
        # the host keys of the image's sshd, recorded when the image was built
        out["ssh_trust_container_host_keys"] = [str(k) for k in keys]
    return out


def parse_tags(text: str | None) -> tuple[str, ...]:
    """'ssh_trust,docker' -> ('ssh_trust', 'docker'); unknown names are an input error."""
    if not text:
        return ()
    tags = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in tags if t not in TAGS]
    if unknown:
        raise InputError(f"unknown tag{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}",
                         hint=f"tags are the roles: {', '.join(TAGS)}")
    return tags


def parse_extra_vars(items: list[str] | None) -> dict[str, Any]:
    """KEY=VALUE pairs (VALUE read as YAML, so 'false', '2044' and '[a, b]' keep their types)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise InputError(f"bad --extra-var '{item}'", hint="use KEY=VALUE, e.g. -e nvidia_manage=true")
        try:
            out[key.strip()] = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = value
    return out


def plan(inventory: str | Path, *, stack: LoadedStack | None = None, lock: ImageLock | None = None,
         tags: tuple[str, ...] = (), check: bool = False, check_only: bool = False, limit: str | None = None,
         extra_vars: Mapping[str, Any] | None = None) -> PlaybookRun:
    """The playbook run for these options (pure)."""
    extravars = stack_vars(stack, lock) if stack else {}
    extravars.update(extra_vars or {})
    if check_only:
        return PlaybookRun(FACTS, str(Path(inventory).resolve()), extravars, (), check=True, limit=limit)
    return PlaybookRun(SITE, str(Path(inventory).resolve()), extravars, tuple(tags), check=check, limit=limit)


def gathered_facts(outcome: RunOutcome, inventory: Inventory) -> dict[str, HostFacts]:
    """The normalised facts of every host that reported them."""
    out = {}
    for h in inventory.hosts:
        got = outcome.hosts.get(h.name)
        if got is not None and got.facts:
            out[h.name] = normalise(got.facts, h.name, h.vars)
    return out


def missing_facts(outcome: RunOutcome, inventory: Inventory, facts: Mapping[str, HostFacts],
                  limit: str | None) -> dict[str, str]:
    """Why each host without facts has none: unreachable, failed before the facts play, or not gathered."""
    missing = {}
    for h in inventory.hosts:
        got = outcome.hosts.get(h.name)
        if h.name in facts or (got is None and limit is not None):
            continue
        if got is not None and got.unreachable:
            missing[h.name] = f"unreachable: {got.why_unreachable}"
        elif got is not None and got.failure is not None:
            missing[h.name] = f"no facts: failed at {got.failure.role or '-'}: {got.failure.task}"
        else:
            missing[h.name] = "no facts gathered"
    return missing


def prune_runs(runs: Path, keep: int) -> None:
    """Delete all but the newest `keep` run directories (names start with a UTC timestamp)."""
    if not runs.is_dir():
        return
    dirs = sorted(p for p in runs.iterdir() if p.is_dir())
    for path in dirs[: max(len(dirs) - keep, 0)]:
        shutil.rmtree(path, ignore_errors=True)


def run_ident(check: bool, check_only: bool) -> str:
    """A fresh, sortable name for one run's ansible-runner private data dir."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{uuid.uuid4().hex[:6]}" + (
        "-check-only" if check_only else "-check" if check else "")
