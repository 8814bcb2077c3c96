"""What a comparison kind sees of the comparison it is part of: a frozen view, not the Comparison itself.

A kind draws its tables and figure panels from its own rows; from the comparison as a whole it needs only the
alignment keys, the keys that vary between points (what a table shows as columns) and the options. Passing
this view instead of the Comparison keeps the kinds below repro.compare.core (no import cycle) and keeps them
from depending on the other kinds' parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.compare.options import Options


@dataclass(frozen=True)
class View:
    """The comparison as its kinds see it."""

    keys: tuple[str, ...]  # the alignment keys, in order
    columns: tuple[str, ...]  # the keys that vary between the compared points
    options: Options
