"""CPU of `repro compare`, `results scaling` and `results table` at N runs a side (issue 42: <= 1 s at 5,000).

    python bench/compare_scale.py [--runs 5000] [--dir /tmp/repro-compare-scale] [--repeats 3] [--peer CHECKOUT]

Builds (once; reused) a store of two stacks with --runs records each, in the shape bench/store_scale.py makes
(nightly CPU runs: 1-8 workers, two models, 100 step times per rank), then runs each command as a subprocess of
the real CLI (after one untimed run that builds the index) and prints the median CPU (user + system) and wall
time. With --peer, the same commands of another checkout of repro (the old path: e.g. main before the index's
briefs) run as a peer in the same run, interleaved with this one's, each with its own index (REPRO_INDEX_DIR
under --dir: the two compute different summaries), and their outputs are compared byte for byte. The load
average is printed with the figures. Figures only; nothing is asserted.
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


def timed(argv: list[str], checkout: Path, index_dir: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds of one command run from `checkout` (its repro), and its output."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "REPRO_INDEX_DIR": str(index_dir)}
    before, began = os.times(), time.perf_counter()
    proc = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, check=False)
    wall, after = time.perf_counter() - began, os.times()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5000)
    ap.add_argument("--dir", default="/tmp/repro-compare-scale")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer", type=Path, metavar="CHECKOUT",
                    help="another checkout of repro whose commands run as a peer (the old path), e.g. /work/main")
    args = ap.parse_args()
    root = Path(args.dir)
    old, new = build(root, args.runs)
    repro = [sys.executable, "-m", "repro"]
    commands = {"python -c pass": [sys.executable, "-c", "pass"],
                "compare OLD NEW": [*repro, "compare", old, new, "--store", str(root)],
                "results scaling OLD": [*repro, "results", "scaling", old, "--store", str(root)],
                "results table OLD NEW": [*repro, "results", "table", old, new, "--store", str(root)]}
    sides = {"this": REPO, **({"peer": args.peer.resolve()} if args.peer else {})}
    outputs: dict[tuple[str, str], str] = {}
    for side, checkout in sides.items():
        for label, argv in commands.items():  # the index is built, bytecode cached
            outputs[side, label] = timed(argv, checkout, root / f"index-{side}")[2]
    times: dict[tuple[str, str], list[tuple[float, float]]] = {(s, k): [] for s in sides for k in commands}
    loads = [os.getloadavg()[0]]
    for _ in range(args.repeats):
        for label, argv in commands.items():
            for side, checkout in sides.items():  # interleaved: a change of the machine's load hits both
                times[side, label].append(timed(argv, checkout, root / f"index-{side}")[:2])
        loads.append(os.getloadavg()[0])
    print(f"{args.runs:,} runs a side; load {min(loads):.1f}-{max(loads):.1f} (1-minute average, /proc/loadavg) on "
          f"{os.cpu_count()} CPUs; medians of {args.repeats}")
    for (side, label), got in times.items():
        same = "" if side == "this" else ("  output identical" if outputs[side, label] == outputs["this", label]
                                          else "  OUTPUT DIFFERS")
        print(f"  {side:4} {label:24} CPU {statistics.median(c for _, c in got):6.2f} s   wall "
              f"{statistics.median(w for w, _ in got):6.2f} s{same}")


if __name__ == "__main__":
    main()
