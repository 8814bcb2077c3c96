"""The lock: what `repro up` verified inside a stack's image, kept in the store as every result's provenance.

    locks/<stack-hash>.json = ImageLock {format, stack, image, versions, horovod_build, pip_freeze, sshd, build,
                                         recipe, ...}

`image.base` says whether the base was an end-of-life nvidia/cuda image repro rebuilt, and from which
recipe (name, key, the tag it replaces, pinned key fingerprints); `recipe` keeps the rendered
Dockerfile (and the base's) the image was built from, for `repro archive`.

The model is repro.results.provenance.ImageLock (records carry it); this module makes one from a verified
build and reads a stack's lock back (`read_lock`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from repro import __version__
from repro.errors import ImageError
from repro.results.provenance import (
    LOCK_FORMAT,
    BaseRecipe,
    ImageLock,
    LockBuild,
    LockImage,
    LockRecipe,
    LockSshd,
    LockStack,
)
from repro.secrets import redact_tree

if TYPE_CHECKING:
    import docker

    from repro.image.build import BuildOutcome, BuildPlan
    from repro.image.verify import ImageProbe
    from repro.manifest import LoadedStack
    from repro.results.store import Store



def make_lock(loaded: LoadedStack, plan: BuildPlan, outcome: BuildOutcome, found: ImageProbe, *,
              client: docker.DockerClient, build_log: str | None) -> ImageLock:
    """The lock of a verified image."""
    image = client.images.get(outcome.image_id)
    try:
        base_id = str(client.images.get(plan.base_image).id)
    except Exception:  # the base may be gone (pruned) after the build; the lock says so
        base_id = None
    stack = loaded.stack
    lock = ImageLock(
        format=LOCK_FORMAT,
        repro_version=__version__,
        stack=LockStack(name=stack.name, hash=loaded.hash, image_hash=loaded.image_hash, file=loaded.file),
        image=LockImage(
            tag=plan.tag, key=plan.key, id=outcome.image_id, repo_digests=list(image.attrs.get("RepoDigests") or []),
            size=image.attrs.get("Size"), created=image.attrs.get("Created"), base_image=plan.base_image,
            base_image_id=base_id, context_files={f.name: f.sha256 for f in plan.files},
            build_args=dict(plan.build_args), base=BaseRecipe.model_validate(base_entry(plan, base_id))),
        recipe=LockRecipe(dockerfile=plan.dockerfile,
                          base_dockerfile=plan.base_recipe.render() if plan.base_recipe else None),
        versions=dict(found.versions),
        horovod_build=dict(found.horovod_build),
        pip_freeze=list(found.pip_freeze),
        libraries=list(found.libraries),
        sshd=LockSshd(port=stack.container.ssh_port, host_keys=list(found.ssh_host_keys)),
        environment=dict(found.environment),
        build=LockBuild(log=build_log, built=outcome.built, seconds=round(outcome.seconds, 1),
                        started=outcome.started, finished=outcome.finished),
        verified_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    # the image's environment, pip freeze (`pkg @ https://user:token@...`) and build args can hold secrets
    return ImageLock.model_validate(redact_tree(lock.model_dump(mode="json")))


def base_entry(plan: BuildPlan, base_id: str | None) -> dict[str, Any]:
    """How the image's base came to be: {rebuilt: false, image} or the rebuilt end-of-life base's recipe."""
    entry = plan.base_recipe.lock_entry() if plan.base_recipe else {"rebuilt": False}
    return {**entry, "image": plan.base_image, "id": base_id}


def read_lock(store: Store, loaded: LoadedStack) -> ImageLock:
    """The stack's lock; ImageError when `repro up` has not locked this stack (in this store) yet."""
    lock = store.lock(loaded.hash)
    if lock is None:
        raise ImageError(f"stack {loaded.stack.name} ({loaded.hash}) has no lock in {store.root}",
                         hint=f"run `repro up {loaded.file}` first")
    return lock
