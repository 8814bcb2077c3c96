"""Comparison of two selections of results: alignment, statistics, diffs, renderers."""
