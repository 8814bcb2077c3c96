"""Cutting a log into runs (pure): one list of lines per run, whatever the format.

A format's reader gives each line the index of the run it belongs to (None: a line the format does not
know, such as TensorFlow's own logging, a command line, prose around a paste). Such lines go with the
run whose lines follow them, so the command that started a run is read with it; lines after the last
run go with that run (its failure message, its tail).
"""

from __future__ import annotations

from collections.abc import Sequence

from repro.results.importers.lines import Line


def groups(lines: Sequence[Line], indexes: Sequence[int | None]) -> list[list[Line]]:
    """The lines of each run, in order of the runs' first format line."""
    if not any(i is not None for i in indexes):
        return []
    resolved: list[int] = []
    following: int | None = None
    for i in reversed(indexes):  # a line the format does not know belongs to the next run's lines
        following = i if i is not None else following
        resolved.append(following if following is not None else -1)
    resolved.reverse()
    last = max(i for i in indexes if i is not None)
    order: list[int] = []
    out: dict[int, list[Line]] = {}
    for line, index in zip(lines, resolved, strict=True):
        index = last if index == -1 else index
        if index not in out:
            order.append(index)
            out[index] = []
        out[index].append(line)
    return [out[i] for i in order]
