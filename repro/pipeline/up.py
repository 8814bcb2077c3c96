"""`repro up`: plan -> build (unless built) -> verify -> lock -> ship to every host of an inventory.

`up_stack` is the command's entry: it takes paths (stack, inventory, store) and chains the gate, the plan, the
Apptainer definition and `up`; `up` takes the loaded values.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from repro.errors import HostError
from repro.hosts.inventory import Inventory, load_inventory
from repro.hosts.ship import ShipResult, describe, ship
from repro.image import verify
from repro.image.build import (
    BuildOptions,
    BuildOutcome,
    BuildPlan,
    build,
    default_ca_bundle,
    plan_build,
    require_base,
)
from repro.image.engine import EngineSource, engine, image_id
from repro.image.lock import make_lock
from repro.manifest import LoadedStack, load_stack
from repro.manifest.frameworks import FRAMEWORKS
from repro.progress import Lines, silent
from repro.results.provenance import ImageLock
from repro.results.store import Store

__all__ = ["BuildOptions", "UpDryRun", "UpRequest", "UpResult", "site_options", "up", "up_stack"]


@dataclass(frozen=True)
class UpResult:
    """What `repro up` did: the plan, the build, the lock written, and shipping per host."""

    plan: BuildPlan
    outcome: BuildOutcome
    lock: ImageLock
    lock_path: str
    verified: bool  # False when the stack's existing lock for the same tag and image id was reused
    shipping: tuple[ShipResult, ...] = ()

    @property
    def failed_hosts(self) -> tuple[str, ...]:
        return tuple(r.host for r in self.shipping if r.status == "failed")

    def failure(self) -> HostError | None:
        """The error the command ends with when the image did not reach every host, else None."""
        failed = self.failed_hosts
        if not failed:
            return None
        return HostError(f"the image did not reach {len(failed)} of {len(self.shipping)} hosts: {', '.join(failed)}",
                         host=failed[0])

    @property
    def framework_titles(self) -> dict[str, str]:
        """{name: title} of every registered framework (Horovod's build flags name them)."""
        return {name: f.title for name, f in FRAMEWORKS.items()}

    @property
    def framework_keys(self) -> tuple[str, ...]:
        """The lock's version keys the frameworks own (tensorflow; torch, torch_cuda, torch_backends)."""
        return tuple(k for _, f in FRAMEWORKS.items() for k in f.version_keys)


def up(loaded: LoadedStack, *, store: Store, options: BuildOptions | None = None,
       inventory: Inventory | None = None, progress: Lines = silent,
       plan: BuildPlan | None = None) -> UpResult:
    """Build (unless built), verify and lock the stack's image, then put it on every host of the inventory.

    `plan` is the build plan when the caller made it already (it hashes the whole context: make it once).
    """
    o = options or BuildOptions()
    plan = plan or plan_build(loaded, o)
    client = engine(o.docker_host)
    try:
        log_path = None
        if not image_id(client, plan.tag):
            require_base(client, plan.base_image, progress, plan.base_recipe)  # before anything is written
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
            log_path = store.logs_dir() / f"build-{plan.stack}-{plan.key}-{stamp}.log"
            progress(f"building {plan.tag} for stack {plan.stack} (log: {log_path})")
        outcome = build(plan, client=client, log_path=log_path, progress=progress)
        previous = store.lock(loaded.hash)
        if previous is not None and previous.image.id == outcome.image_id and previous.image.tag == plan.tag:
            lock, verified = previous, False
            progress(f"{plan.tag} ({outcome.image_id[:19]}) already built and verified")
        else:
            progress(f"verifying {plan.tag} against stack {plan.stack}")
            found = verify.probe(client, plan.tag)
            verify.check(loaded.stack, found, tag=plan.tag)
            lock = make_lock(loaded, plan, outcome, found, client=client, build_log=outcome.log)
            verified = True
        path = store.put_lock(loaded.hash, lock) if verified else store.lock_path(loaded.hash)
        shipping: tuple[ShipResult, ...] = ()
        if inventory is not None:
            shipping = ship(plan.tag, outcome.image_id, inventory.hosts, source=EngineSource(client),
                            progress=progress)
    finally:
        client.close()
    return UpResult(plan, outcome, lock, str(path), verified, shipping)


@dataclass(frozen=True)
class UpRequest:
    """What `repro up` was asked: the stack, where to ship it, the store, the site's build options."""

    stack: str | Path
    hosts: str | Path | None = None
    store_root: str | Path | None = None
    options: BuildOptions = field(default_factory=BuildOptions)
    pip_cert: bool = True  # no CA bundle given: use $PIP_CERT's
    apptainer: Path | None = None  # also write the Apptainer definition here
    dry_run: bool = False


@dataclass(frozen=True)
class UpDryRun:
    """What `repro up --dry-run` would do: the plan, the shipping, the Apptainer definition written."""

    plan: BuildPlan
    inventory: Inventory | None
    apptainer: Path | None

    def describe(self) -> str:
        """The dry-run text: the plan, then the shipping, then the definition."""
        text = self.plan.describe() + "\n"
        if self.inventory is not None:
            text += "\n" + describe(self.plan.tag, self.inventory.hosts) + "\n"
        if self.apptainer:
            text += f"\nwould write the Apptainer definition to {self.apptainer}\n"
        return text + "\n(dry run: nothing was built, verified, locked or shipped)\n"


def site_options(options: BuildOptions, pip_cert: bool = True) -> BuildOptions:
    """The options with $PIP_CERT's CA bundle when none was given (and `pip_cert`)."""
    if options.ca_bundle is not None or not pip_cert:
        return options
    return replace(options, ca_bundle=default_ca_bundle())


def write_apptainer(target: Path, loaded: LoadedStack, plan: BuildPlan) -> Path:
    """The Apptainer definition at `target`, the build context's files next to it."""
    from repro.image.render import render_apptainer

    target.parent.mkdir(parents=True, exist_ok=True)
    for f in plan.files:
        dest = target.parent / f.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(f.read())
    target.write_text(render_apptainer(loaded.stack, plan.options))
    return target


def up_stack(request: UpRequest, *, progress: Lines = silent, show: Lines = silent) -> UpResult | UpDryRun:
    """Gate the stack (its warnings to `show`), plan its image, then build, verify, lock and ship it (or, for a dry
    run, say what would be done); `progress`: the build's output."""
    from repro.pipeline.gate import admit

    loaded = load_stack(request.stack)
    admit(loaded, action="built", show=show)  # compatibility errors stop here: the one gate policy
    options = site_options(request.options, request.pip_cert)
    inventory = load_inventory(request.hosts) if request.hosts else None
    plan = plan_build(loaded, options)  # hashes the whole build context: once per command
    if request.dry_run:
        return UpDryRun(plan, inventory, request.apptainer)
    if request.apptainer:
        target = write_apptainer(Path(request.apptainer), loaded, plan)
        show(f"wrote {target} (build it in {target.parent}: apptainer build IMAGE.sif {target.name})")
    return up(loaded, store=Store(request.store_root), options=options, inventory=inventory, progress=progress,
              plan=plan)
