"""What does starting repro cost? `repro --help` and `repro validate` of the shipped stacks against a bare
`python -c pass`, CPU time (user + system of the child) and wall time, measured in the same run.

    python bench/startup.py [--repeats 10]

Issue 30's targets, on an idle machine: `repro --help` within 0.3 s and `repro validate stacks/*.yaml`
within 0.5 s. The commands alternate with the floor, so a busy machine slows all of them alike; the ratios
are the figures to compare between versions. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one run of `argv` from the repository root; raises when it fails."""
    before = os.times()
    began = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    after = os.times()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu


def main() -> int:
    """Alternate the floor and each command; print medians and ratios against the floor."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    stacks = sorted(str(p.relative_to(REPO)) for p in (REPO / "stacks").glob("*.yaml"))
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "repro --help": [sys.executable, "-m", "repro", "--help"],
        "repro validate stacks/*.yaml": [sys.executable, "-m", "repro", "validate", "--quiet", *stacks],
    }
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for repeat in range(args.repeats):
        order = list(commands.items())
        if repeat % 2:
            order.reverse()
        for name, argv in order:
            seen[name].append(timed(argv))
    floor_wall = statistics.median(w for w, _ in seen["python -c pass"])
    floor_cpu = statistics.median(c for _, c in seen["python -c pass"])
    print(f"{'command':32s} {'wall':>8s} {'cpu':>8s} {'wall/floor':>11s} {'cpu/floor':>10s}")
    for name, runs in seen.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:32s} {wall:7.3f}s {cpu:7.3f}s {wall / floor_wall:10.1f}x {cpu / max(floor_cpu, 1e-3):9.1f}x")
    print(f"load average: {os.getloadavg()[0]:.2f} (median of {args.repeats} runs each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
