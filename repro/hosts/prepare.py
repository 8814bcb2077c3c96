"""`repro prepare`: make an inventory's hosts ready for a stack, or only check how ready they are.

`plan` is pure: from the inventory path, the stack and the options it builds the `PlaybookRun`
(playbook, extra variables from the stack's pinned versions, tags, check mode). `prepare` executes it
through ansible-runner, stores the facts it gathered (`Store.put_facts`, where `repro bench` picks them
up) and evaluates readiness. It returns a `PrepareResult`; the CLI renders it.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.errors import InputError
from repro.hosts.ansible import HostOutcome, PlaybookRun, RunOutcome, TaskResult, run_playbook
from repro.hosts.facts import HostFacts, normalise
from repro.hosts.inventory import Inventory, load_inventory
from repro.hosts.readiness import Readiness, evaluate
from repro.image import lock as image_lock
from repro.manifest.resolve import LoadedStack

# Roles of playbooks/site.yml, in the order they run; each is also its tag.
ROLES = ("ssh_trust", "ofed", "nvidia", "gpudirect", "ipoib", "docker", "nfs_dataset")
TAGS = (*ROLES, "facts")
KEEP_RUNS = 20  # ansible-runner private data dirs kept per inventory under <store>/logs/prepare
SITE = "site.yml"
FACTS = "facts.yml"


@dataclass(frozen=True)
class PrepareResult:
    """What a prepare (or --check-only) run did and found."""

    run: PlaybookRun
    inventory: Inventory
    outcome: RunOutcome | None  # None for a dry run
    facts: dict[str, HostFacts] = field(default_factory=dict)
    facts_paths: dict[str, Path] = field(default_factory=dict)
    readiness: Readiness | None = None
    data_dir: Path | None = None

    @property
    def failed_hosts(self) -> list[HostOutcome]:
        return self.outcome.failed_hosts if self.outcome else []


def stack_vars(loaded: LoadedStack, lock: Mapping[str, Any] | None = None) -> dict[str, Any]:
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
    keys = image_lock.host_keys(lock) if lock and lock.get("sshd") else None
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


def plan(inventory: str | Path, *, stack: LoadedStack | None = None, lock: Mapping[str, Any] | None = None,
         tags: tuple[str, ...] = (), check: bool = False, check_only: bool = False, limit: str | None = None,
         extra_vars: Mapping[str, Any] | None = None) -> PlaybookRun:
    """The playbook run for these options (pure)."""
    extravars = stack_vars(stack, lock) if stack else {}
    extravars.update(extra_vars or {})
    if check_only:
        return PlaybookRun(FACTS, str(Path(inventory).resolve()), extravars, (), check=True, limit=limit)
    return PlaybookRun(SITE, str(Path(inventory).resolve()), extravars, tuple(tags), check=check, limit=limit)


def _facts(outcome: RunOutcome, inventory: Inventory) -> dict[str, HostFacts]:
    out = {}
    for h in inventory.hosts:
        got = outcome.hosts.get(h.name)
        if got is not None and got.facts:
            out[h.name] = normalise(got.facts, h.name, h.vars)
    return out


def _prune(runs: Path, keep: int) -> None:
    """Delete all but the newest `keep` run directories (names start with a UTC timestamp)."""
    if not runs.is_dir():
        return
    dirs = sorted(p for p in runs.iterdir() if p.is_dir())
    for path in dirs[: max(len(dirs) - keep, 0)]:
        shutil.rmtree(path, ignore_errors=True)


def prepare(inventory_path: str | Path, *, stack: LoadedStack | None = None, tags: tuple[str, ...] = (),
            check: bool = False, check_only: bool = False, store_root: str | Path | None = None,
            dry_run: bool = False, limit: str | None = None, extra_vars: Mapping[str, Any] | None = None,
            progress: Callable[[TaskResult], None] | None = None, timeout: int | None = None) -> PrepareResult:
    """Prepare (or with check_only, only check) the inventory's hosts; store facts; evaluate readiness."""
    from repro.results.store import Store, inventory_key

    inventory = load_inventory(inventory_path)
    store = Store(store_root)
    lock = store.lock(stack.hash) if stack and not dry_run else None
    run = plan(inventory_path, stack=stack, lock=lock, tags=tags, check=check, check_only=check_only, limit=limit,
               extra_vars=extra_vars)
    if dry_run:
        return PrepareResult(run, inventory, None)
    # A fresh private data dir per run: ansible-runner reads env/ files it finds there, so a reused dir could
    # carry one run's --check or variables into the next.
    runs = (store.root / "logs" / "prepare" / inventory_key(inventory)).resolve()
    ident = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{uuid.uuid4().hex[:6]}" + (
        "-check-only" if check_only else "-check" if check else "")
    data_dir = runs / ident
    _prune(runs, KEEP_RUNS - 1)
    outcome = run_playbook(run, data_dir, progress=progress, ident=ident, timeout=timeout)
    facts = _facts(outcome, inventory)
    paths = {host: store.put_facts(inventory, host, f.as_json()) for host, f in facts.items()}
    missing = {}
    for h in inventory.hosts:  # unreachable hosts, and hosts that failed before the facts play
        got = outcome.hosts.get(h.name)
        if h.name in facts or (got is None and limit is not None):
            continue
        if got is not None and got.unreachable:
            missing[h.name] = f"unreachable: {got.failure.message if got.failure else 'no reason given'}"
        elif got is not None and got.failure is not None:
            missing[h.name] = f"no facts: failed at {got.failure.role or '-'}: {got.failure.task}"
        else:
            missing[h.name] = "no facts gathered"
    readiness = evaluate(facts, stack.stack if stack else None, inventory, missing)
    return PrepareResult(run, inventory, outcome, facts, paths, readiness, data_dir)
