"""`repro up`: plan -> build (unless built) -> verify -> lock -> ship to every host of an inventory."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from repro.hosts.inventory import Inventory
from repro.hosts.ship import ShipResult, ship
from repro.image import verify
from repro.image.build import BuildOptions, BuildOutcome, BuildPlan, build, plan_build, require_base
from repro.image.engine import EngineSource, engine, image_id
from repro.image.lock import make_lock
from repro.manifest import LoadedStack
from repro.manifest.frameworks import FRAMEWORKS
from repro.progress import Lines, silent
from repro.results.provenance import ImageLock
from repro.results.store import Store


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
