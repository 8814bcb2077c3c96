"""`repro restore`: archive -> checked lock and stack -> image loaded into an engine -> verified -> store.

The archive's own checks, the loading and the comparison with the lock are repro.image.archive's; the
store keeps the lock and the restored manifest. This module only chains them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repro.image import archive, verify
from repro.image.engine import engine
from repro.progress import Lines, silent
from repro.results.store import Store


@dataclass(frozen=True)
class RestoreResult:
    """What `repro restore` did."""

    stack: str
    stack_hash: str
    tag: str
    image_id: str
    lock_path: Path
    stack_path: Path
    loaded: bool  # False: the engine held the same image id already


def restore(path: str | Path, store: Store | str | Path | None = None, *, docker_host: str | None = None,
            progress: Lines = silent) -> RestoreResult:
    """Check the archive, load its image, verify it against the lock, put the lock and manifest in the store (a
    Store, or its root: None for the default one)."""
    path = Path(path)
    store = store if isinstance(store, Store) else Store(store)
    progress(f"checking {path}")
    lock, stack = archive.read_archive(path)
    tag = lock.image.tag
    client = engine(docker_host)
    try:
        loaded = archive.load_image(client, path, lock, progress)
        progress(f"verifying {tag} against its lock")
        archive.compare_with_lock(stack, verify.probe(client, tag), lock, tag)
    finally:
        client.close()
    stack_path = store.put_stack(stack.name, lock.stack.hash, archive.restored_stack_text(stack, lock, path))
    lock_path = store.put_lock(lock.stack.hash, lock)
    return RestoreResult(stack.name, lock.stack.hash, tag, lock.image.id, lock_path, stack_path, loaded)
