"""Comparison of two selections of results: alignment, statistics, diffs, renderers.

Its names are imported on first use, so that listing the comparison kinds (repro.compare.kind) for the CLI's
choices imports none of the statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from repro.compare.core import Comparison, compare
    from repro.compare.options import Options

__all__ = ["Comparison", "Options", "compare"]


def __getattr__(name: str) -> Any:
    if name in ("Comparison", "compare"):
        from repro.compare import core

        return getattr(core, name)
    if name == "Options":
        from repro.compare.options import Options

        return Options
    raise AttributeError(f"module 'repro.compare' has no attribute {name!r}")
