"""Version arithmetic for the compatibility rules and the image blocks (pure).

Versions reach here already checked at the input boundary (repro.inputs: ASCII digits and dots, bounded),
so parsing never meets a non-ASCII digit or a number too long to convert. Release lines are prefixes:
"7.4" is the line of 7.4, 7.4.1 and 7.4.2.24; "11.x" is every 11 release; "3.3-3.6" a range of lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_NUMBER = re.compile("[0-9]{1,9}", re.ASCII)

Version = tuple[int, ...]


def parse_version(text: str) -> Version:
    """'7.6.5' -> (7, 6, 5); '4.7-3.2.9.0' -> (4, 7, 3, 2, 9, 0); '2.5.6-1' -> (2, 5, 6, 1)."""
    return tuple(int(part) for part in _NUMBER.findall(text))


def major_minor(text: str) -> str:
    """'10.0.130' -> '10.0'; '3.11' -> '3.11'."""
    return ".".join(str(p) for p in parse_version(text)[:2])


def in_release_line(version: str, line: str) -> bool:
    """Whether `version` lies in release line `line` ('7.4' holds 7.4.2, not 7.40; '11.x' holds any 11)."""
    if line.endswith(".x"):
        return parse_version(version)[:1] == parse_version(line[:-2])
    want = parse_version(line)
    return parse_version(version)[: len(want)] == want


def in_any_line(version: str, lines: Iterable[str]) -> bool:
    """Whether `version` lies in one of `lines`, which may hold ranges ('3.3-3.6' covers 3.3 to 3.6)."""
    for line in lines:
        if "-" in line and line.count(".") == 2:
            low, high = line.split("-")
            if parse_version(low) <= parse_version(version)[:2] <= parse_version(high):
                return True
        elif in_release_line(version, line):
            return True
    return False


def lines_overlap(version: str, line: str) -> bool:
    """Whether a version written with fewer parts than a table row ('7.1') may be that row ('7.1.3').

    True when either lies in the other's release line: '7.1' overlaps '7.1.3' and '7.1.3' overlaps '7.1'.
    """
    return in_release_line(version, line) or in_release_line(line, version)


def at_least(version: str, minimum: str) -> bool:
    """Whether `version` >= `minimum`, comparing the parts both have ('2.12' >= '2.12.0' is true)."""
    have, need = parse_version(version), parse_version(minimum)
    width = min(len(have), len(need))
    return have[:width] >= need[:width]
