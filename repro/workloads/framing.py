"""Long result lines, printed in parts that survive the launchers that forward output in pieces.

srun forwards a task's output in messages of about 1 KiB: a longer line from one rank reaches the job's
output interleaved with another rank's at that size (seen: 6 runs in 15 of `srun -N2 -n2` printing a 6 KB
line per rank). A line longer than WIDTH is therefore printed as parts, each a line of its own:

    REPRO_PART <key> <k>/<n> <text>|

`key` names the line (random, per line), `text` is its k-th slice, the `|` ends it (whatever strips trailing
blanks on the way cannot shorten the slice). `joined` puts every line whose parts all arrived back in the
output, where its last part was; anything before the marker on a part's line (a launcher's rank tag) is
ignored. Standard library only: the workloads print with it in every image.
"""

from __future__ import annotations

import os
import re

PART_PREFIX = "REPRO_PART "
WIDTH = 800  # characters of one part's slice: with the prefix and key, well under srun's 1 KiB messages
_PART = re.compile(r"REPRO_PART ([0-9a-f]{8,32}) ([0-9]{1,6})/([0-9]{1,6}) (.*)\|$")


def framed(line: str, width: int = WIDTH) -> list[str]:
    """`line` as printed: itself when short enough, else its parts (ASCII slices of `width` characters;
    a line with other characters is sliced so that a part stays under `width` bytes as UTF-8)."""
    step = width if line.isascii() else max(1, width // 4)
    if len(line.encode()) <= width:
        return [line]
    key = os.urandom(6).hex()
    slices = [line[at:at + step] for at in range(0, len(line), step)]
    return [f"{PART_PREFIX}{key} {k}/{len(slices)} {text}|" for k, text in enumerate(slices, 1)]


def printed(line: str) -> str:
    """The text to write for `line`, newline-terminated (one write: parts of one line stay in order)."""
    return "\n".join(framed(line)) + "\n"


def joined(output: str) -> str:
    """`output` with every framed line whole again, where its last part was; parts of a line that did not all
    arrive are dropped (a rank lost mid-print printed no line)."""
    parts: dict[str, dict[int, str]] = {}
    counts: dict[str, int] = {}
    out: list[str] = []
    for raw in output.splitlines():
        at = raw.find(PART_PREFIX)
        m = _PART.match(raw[at:].rstrip("\r")) if at >= 0 else None
        if m is None:
            out.append(raw)
            continue
        key, k, n, text = m[1], int(m[2]), int(m[3]), m[4]
        if not 1 <= k <= n or counts.setdefault(key, n) != n:
            continue
        got = parts.setdefault(key, {})
        got.setdefault(k, text)
        if len(got) == n:
            out.append("".join(got[i] for i in range(1, n + 1)))
            del parts[key]
    return "\n".join(out) + ("\n" if output.endswith("\n") else "")
