"""The CLI's vocabulary: the names its arguments may take (registries, manifest fields, workload options), so that
`repro.cli` reads argument choices from one pipeline module instead of importing the stages' registries.

Each CLI module's choices live in a section of their own below (one engineer per section; add, do not reorder).
"""

from __future__ import annotations

# -- repro.cli.hosts_cmds, image_cmds, manifest_cmds: prepare, up, render, archive, restore, validate, show, ... --

def prepare_runtimes() -> tuple[str, ...]:
    """The runtimes `repro prepare --runtime` checks readiness for: every registered runtime."""
    from repro.launch.runtimes import RUNTIMES

    return RUNTIMES.names()
