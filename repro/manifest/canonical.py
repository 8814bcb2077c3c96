"""The canonical form of a resolved stack and its content hashes (pure).

The hash is over the resolved stack (extends merged, derived fields filled) serialised as JSON with
sorted keys: the same on every machine and every run, unchanged by comments, key order or the file's
name, changed by any edit of a value. `name` and `description` are labels, not content.

Two hashes: `stack_hash` keys results (everything that can change a measurement); `image_hash` keys
images (only what goes into the image), so a stack that differs only in launch environment or
benchmark defaults (XLA on/off, NCCL_* tuning) reuses its parent's image.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from repro.manifest.schema import Stack, plugin_sections

LABELS = frozenset({"name", "description"})
# Fields added after stacks were first hashed: left out while unset, so every earlier stack keeps its hashes
# (its records and images stay its own). A stack that sets one hashes it like any other field.
LATER_OPTIONAL: tuple[tuple[str, ...], ...] = (("pytorch",), ("tensorflow",), ("horovod",), ("horovod", "commit"),
                                               ("expect",), ("benchmark", "precision"))
RUNTIME_ONLY = frozenset({"env", "benchmark", "expect"})
HASH_LENGTH = 12


def canonical(stack: Stack, *, exclude: frozenset[str] = LABELS) -> dict[str, Any]:
    """The stack as plain JSON data, labels removed, later optional fields left out while unset."""
    data = stack.model_dump(mode="json", exclude=set(exclude))
    for path in (*LATER_OPTIONAL, *((name,) for name in plugin_sections())):
        parent = data
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and path[-1] in parent and parent[path[-1]] is None:
            del parent[path[-1]]
    return data


def _digest(data: dict[str, Any]) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:HASH_LENGTH]


def stack_hash(stack: Stack) -> str:
    """Content hash of everything in the stack that can change a result."""
    return _digest(canonical(stack))


def image_hash(stack: Stack) -> str:
    """Content hash of what goes into the stack's image."""
    return _digest(canonical(stack, exclude=LABELS | RUNTIME_ONLY))
