"""Comparison of two selections of results: alignment, statistics, diffs, renderers."""

from repro.compare.core import Comparison, compare
from repro.compare.throughput import Options

__all__ = ["Comparison", "Options", "compare"]
