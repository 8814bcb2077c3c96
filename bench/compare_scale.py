"""CPU of `repro compare`, `results scaling` and `results table` at N runs a side (issue 42: <= 1 s at 5,000).

    python bench/compare_scale.py [--runs 5000] [--dir /tmp/repro-compare-scale] [--repeats 3]

Builds (once; reused) a store of two stacks with --runs records each, in the shape bench/store_scale.py makes
(nightly CPU runs: 1-8 workers, two models, 100 step times per rank), then runs each command as a subprocess of
the real CLI (after one untimed run that builds the index) and prints the median CPU (user + system) and wall
time. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))


def build(root: Path, runs: int) -> list[str]:
    """Two stacks of `runs` records each under root (kept when already there); their names."""
    from store_scale import _record, _template

    names = [f"cpu-tf215-nightly-{night:05d}" for night in (1, 2)]
    marker = root / "compare-scale.json"
    if marker.exists() and json.loads(marker.read_text()) == {"runs": runs}:
        return names
    base, rng = _template(), np.random.default_rng(runs)
    plan = [(model, workers) for model in ("resnet20", "resnet50") for workers in (1, 2, 4, 8)]
    for night in (1, 2):
        for index in range(runs):
            model, workers = plan[index % len(plan)]
            data = _record(base, rng, night, index, model, workers, index // len(plan), failed=False)
            data["id"] = f"{data['id'][:-8]}{night:02x}{index:06x}"
            path = root / "runs" / data["stack"]["hash"] / f"{data['id']}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, sort_keys=True) + "\n")
    marker.write_text(json.dumps({"runs": runs}))
    return names


def timed(argv: list[str]) -> tuple[float, float]:
    before, began = os.times(), time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    wall, after = time.perf_counter() - began, os.times()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5000)
    ap.add_argument("--dir", default="/tmp/repro-compare-scale")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    root = Path(args.dir)
    old, new = build(root, args.runs)
    repro = [sys.executable, "-m", "repro"]
    commands = {"python -c pass": [sys.executable, "-c", "pass"],
                "compare OLD NEW": [*repro, "compare", old, new, "--store", str(root)],
                "results scaling OLD": [*repro, "results", "scaling", old, "--store", str(root)],
                "results table OLD NEW": [*repro, "results", "table", old, new, "--store", str(root)]}
    for argv in commands.values():
        timed(argv)  # the index is built, bytecode cached
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    for _ in range(args.repeats):
        for label, argv in commands.items():
            times[label].append(timed(argv))
    print(f"{args.runs:,} runs a side; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; medians of "
          f"{args.repeats}")
    for label, got in times.items():
        print(f"  {label:24} CPU {statistics.median(c for _, c in got):6.2f} s   wall "
              f"{statistics.median(w for w, _ in got):6.2f} s")


if __name__ == "__main__":
    main()
