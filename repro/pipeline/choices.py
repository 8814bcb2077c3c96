"""The CLI's vocabulary: the names its arguments may take (registries, manifest fields, workload options), so that
`repro.cli` reads argument choices from one pipeline module instead of importing the stages' registries.

Each CLI module's choices live in a section of their own below (one engineer per section; add, do not reorder).
"""

from __future__ import annotations

# -- repro/cli/results_cmds.py, import_cmds.py, capture_cmds.py (results *, import, capture) ------------------

def result_kinds() -> list[str]:
    """The comparison kinds a stored run may be of (`repro results table --kind`)."""
    from repro.compare.kind import KINDS

    return list(KINDS.names())


def capture_frameworks() -> list[str]:
    """The frameworks `repro capture --framework` may name: those a stack manifest accepts."""
    from repro.manifest.frameworks import FRAMEWORKS

    return list(FRAMEWORKS.names())
