"""`repro prepare`: make an inventory's hosts ready for a stack, or only check how ready they are.

    request (paths, raw tags and variables) -> plan (hosts.prepare.plan, pure) -> run the playbook
    (hosts.ansible) -> facts into the store -> readiness (hosts.readiness, pure)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.errors import HostError, InputError
from repro.hosts import prepare as hosts_prepare
from repro.hosts.ansible import HostOutcome, PlaybookRun, RunOutcome, TaskResult, run_playbook, secret_values
from repro.hosts.inventory import Host, Inventory, load_inventory
from repro.hosts.readiness import Readiness, evaluate
from repro.hosts.remote import port_failures
from repro.manifest import LoadedStack, load_stack
from repro.manifest.software import Software
from repro.progress import Lines, silent
from repro.results.provenance import HostFacts
from repro.results.store import Store, inventory_key

__all__ = ["HostOutcome", "PrepareRequest", "PrepareResult", "Readiness", "TaskResult", "host_software", "prepare",
           "prepare_hosts"]

KEEP_RUNS = 20  # ansible-runner private data dirs kept per inventory under <store>/logs/prepare


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
    runtime: str | None = None  # the runtime readiness was checked for
    check_only: bool = False

    @property
    def failed_hosts(self) -> list[HostOutcome]:
        return self.outcome.failed_hosts if self.outcome else []

    @property
    def mode(self) -> str:
        """apply, check mode (Ansible's --check) or check-only (facts and readiness only)."""
        return run_mode(self.run.check, self.check_only)

    def failure(self) -> HostError | None:
        """The error the command ends with: a host failed or unreachable, the playbook failed, or (check-only) a
        host not ready; None when all went well."""
        outcome, bad = self.outcome, self.failed_hosts
        if outcome is None:
            return None
        if bad:
            what = "; ".join(failure_text(h) for h in bad)
            return HostError(f"prepare {self.mode} failed on {len(bad)} of {len(self.inventory.hosts)} hosts: {what}",
                             host=bad[0].host)
        if outcome.rc != 0:
            return HostError(f"ansible-playbook exited with status {outcome.rc} ({outcome.status}):\n"
                             f"{outcome.output_tail() or '(no output)'}\nsee {outcome.artifact_dir or self.data_dir}")
        if self.check_only and self.readiness is not None and not self.readiness.ok:
            hosts = sorted({c.host for c in self.readiness.failed})
            return HostError(f"not ready: {', '.join(hosts)} ({len(self.readiness.failed)} failed checks)",
                             host=hosts[0])
        return None


def run_mode(check: bool, check_only: bool) -> str:
    """How prepare runs: apply, check mode (Ansible's --check) or check-only (facts and readiness only)."""
    return "check-only" if check_only else ("check mode" if check else "apply")


def failure_text(h: HostOutcome) -> str:
    """'h2: unreachable: <why>' or 'h1: failed at <role> / <task>: <why>'."""
    if h.unreachable:
        return f"{h.host}: unreachable: {h.why_unreachable}"
    if h.failure is not None:
        return f"{h.host}: failed at {h.failure.role or '-'} / {h.failure.task}: {h.failure.message}"
    return f"{h.host}: {h.status}"


@dataclass(frozen=True)
class PrepareRequest:
    """What `repro prepare` was asked, as given: paths, the --tags list and the -e KEY=VALUE pairs unparsed."""

    hosts: str | Path
    stack: str | Path | None = None
    tags: str | None = None
    check: bool = False
    check_only: bool = False
    limit: str | None = None
    extra_vars: tuple[str, ...] = ()
    store_root: str | Path | None = None
    runtime: str | None = None
    dry_run: bool = False


def prepare_hosts(request: PrepareRequest, *, progress: Callable[[TaskResult], None] | None = None,
                  show: Lines = silent) -> PrepareResult:
    """Check the request, load the stack, say what starts (`show`), then `prepare`."""
    if request.check_only and (request.tags or request.check):
        raise InputError("--check-only runs only the facts playbook; it takes no --tags or --check")
    tags = hosts_prepare.parse_tags(request.tags)
    extra = hosts_prepare.parse_extra_vars(list(request.extra_vars))
    stack = load_stack(request.stack) if request.stack else None
    if not request.dry_run:
        mode = run_mode(request.check, request.check_only)
        show(f"repro prepare ({mode}): {request.hosts}" + (f", stack {stack.stack.name}" if stack else ""))
    return prepare(request.hosts, stack=stack, tags=tags, check=request.check, check_only=request.check_only,
                   store_root=request.store_root, dry_run=request.dry_run, limit=request.limit, extra_vars=extra,
                   progress=progress, runtime=request.runtime)


def prepare(inventory_path: str | Path, *, stack: LoadedStack | None = None, tags: tuple[str, ...] = (),
            check: bool = False, check_only: bool = False, store_root: str | Path | None = None,
            dry_run: bool = False, limit: str | None = None, extra_vars: Mapping[str, Any] | None = None,
            progress: Callable[[TaskResult], None] | None = None, timeout: int | None = None,
            runtime: str | None = None) -> PrepareResult:
    """Prepare (or with check_only, only check) the inventory's hosts; store facts; evaluate readiness for the
    runtime the benchmark will use (`runtime`, else the one `repro bench` would choose for this inventory)."""
    from repro.pipeline.sweep_plan import choose_runtime, stack_backend

    inventory = load_inventory(inventory_path)
    runtime = choose_runtime(inventory, runtime)
    store = Store(store_root)
    lock = store.lock(stack.hash) if stack and not dry_run else None
    run = hosts_prepare.plan(inventory.path, stack=stack, lock=lock, tags=tags, check=check, check_only=check_only,
                             limit=limit, extra_vars=extra_vars,
                             known_hosts=hosts_prepare.known_hosts_files(inventory))
    if dry_run:
        return PrepareResult(run, inventory, None, check_only=check_only)
    # A fresh private data dir per run: ansible-runner reads env/ files it finds there, so a reused dir could
    # carry one run's --check or variables into the next.
    runs = (store.root / "logs" / "prepare" / inventory_key(inventory)).resolve()
    ident = hosts_prepare.run_ident(check, check_only)
    hosts_prepare.prune_runs(runs, KEEP_RUNS - 1)
    secrets = secret_values(*(h.vars for h in inventory.hosts))  # become passwords and the like, scrubbed
    outcome = run_playbook(run, runs / ident, progress=progress, ident=ident, timeout=timeout, secrets=secrets)
    # Ansible's "unreachable" can hide the cause: repro checks those hosts' SSH ports itself, all at once.
    gone = [h for h in inventory.hosts if (o := outcome.hosts.get(h.name)) is not None and o.unreachable]
    for name, why in port_failures(gone).items():
        outcome.hosts[name].probe = why
    facts = hosts_prepare.gathered_facts(outcome, inventory)
    paths = {host: store.put_facts(inventory, host, f) for host, f in facts.items()}
    missing = hosts_prepare.missing_facts(outcome, inventory, facts, limit)
    # the host runtime's probe imports TensorFlow on every host (up to a minute): for --check-only, which asks
    software = host_software([h for h in inventory.hosts if h.name in facts]) if runtime == "host" and check_only \
        else None
    readiness = evaluate(facts, stack.stack if stack else None, inventory, missing, runtime=runtime,
                         software=software, backend=stack_backend(stack) if stack else "mpi")
    return PrepareResult(run, inventory, outcome, facts, paths, readiness, runs / ident, runtime, check_only)


def host_software(hosts: list[Host]) -> dict[str, Software | str]:
    """What the host runtime finds on each host (its probe, in parallel), or why it could not look."""
    from concurrent.futures import ThreadPoolExecutor

    from repro.errors import ReproError
    from repro.launch.runtimes.host import probe_host

    def one(host: Host) -> Software | str:
        try:
            return probe_host(host)
        except ReproError as exc:
            return exc.message.splitlines()[0]

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:
        return dict(zip([h.name for h in hosts], pool.map(one, hosts), strict=True))
