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

import yaml

from repro.errors import InputError
from repro.hosts.ansible import PlaybookRun, RunOutcome
from repro.hosts.facts import normalise
from repro.hosts.inventory import Inventory
from repro.hosts.inventory_vars import VARIABLES
from repro.hosts.ssh_trust import DEFAULT_KNOWN_HOSTS
from repro.inputs import InputValueError
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
    """KEY=VALUE pairs (VALUE read as YAML, so 'false', '2044' and '[a, b]' keep their types), each checked as
    the same variable in an inventory would be; bounded: no aliases, at most MAX_EXTRA_DEPTH levels."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier() or not key.isascii():
            raise InputError(f"bad --extra-var '{_shown(item)}'", hint="use KEY=VALUE, e.g. -e nvidia_manage=true")
        if len(value) > MAX_EXTRA_CHARS:
            raise InputError(f"--extra-var {key}: longer than {MAX_EXTRA_CHARS} characters")
        out[key] = _extra_value(key, value)
        check = VARIABLES.get(key)
        if check is not None:
            try:
                out[key] = check(out[key])
            except InputValueError as exc:
                raise InputError(f"--extra-var {key}: {exc}", hint="an extra variable is checked as the same "
                                 "variable in an inventory would be (docs/prepare.md)") from None
        elif key.startswith("_repro"):
            raise InputError(f"--extra-var {key}: names beginning with _repro are repro's own")
    return out


MAX_EXTRA_CHARS = 65536
MAX_EXTRA_DEPTH = 32


class _ExtraLoader(yaml.SafeLoader):
    """A YAML value of one extra variable: no aliases (a self-referring `&a [*a]` has no end), bounded depth."""

    depth = 0

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("holds an alias (*name); write the value itself")
        self.depth += 1
        if self.depth > MAX_EXTRA_DEPTH:
            raise yaml.YAMLError(f"nested more than {MAX_EXTRA_DEPTH} deep")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _extra_value(key: str, text: str) -> Any:
    if not text.strip():
        return ""
    try:
        return yaml.load(text, Loader=_ExtraLoader)  # a SafeLoader
    except yaml.YAMLError as exc:
        if "alias" in str(exc) or "nested" in str(exc):
            raise InputError(f"--extra-var {key}: {getattr(exc, 'problem', None) or exc}") from None
        return text  # not YAML: the text itself, as before
    except (RecursionError, ValueError, OverflowError) as exc:
        raise InputError(f"--extra-var {key}: cannot be read as YAML ({type(exc).__name__})") from None


def _shown(text: str) -> str:
    shown = ascii(text)[1:-1]
    return shown if len(shown) <= 80 else shown[:77] + "..."


def plan(inventory: str | Path, *, stack: LoadedStack | None = None, lock: ImageLock | None = None,
         tags: tuple[str, ...] = (), check: bool = False, check_only: bool = False, limit: str | None = None,
         extra_vars: Mapping[str, Any] | None = None, known_hosts: tuple[tuple[str, str], ...] = ()) -> PlaybookRun:
    """The playbook run for these options (pure); `known_hosts`: (host, the file that holds its key) pairs."""
    extravars = stack_vars(stack, lock) if stack else {}
    extravars.update(extra_vars or {})
    if check_only:
        return PlaybookRun(FACTS, str(Path(inventory).resolve()), extravars, (), check=True, limit=limit,
                           known_hosts=known_hosts)
    return PlaybookRun(SITE, str(Path(inventory).resolve()), extravars, tuple(tags), check=check, limit=limit,
                       known_hosts=known_hosts)


def known_hosts_files(inventory: Inventory) -> tuple[tuple[str, str], ...]:
    """(host name, its known-hosts file: repro_known_hosts, else ssh's own) of each host that ssh reaches: each
    host is checked against its own file only."""
    return tuple((h.name, h.known_hosts or DEFAULT_KNOWN_HOSTS) for h in inventory.hosts if not h.local)


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
