"""What does starting repro cost? `repro --help`, a command's `--help`, `repro validate` of the shipped stacks and
the store commands (`results`, `compare OLD NEW`) against a bare `python -c pass`, CPU time (user + system of the
child) and wall time, measured in the same run.

    python bench/startup.py [--repeats 10] [--records 10000[,100000]] [--dir /tmp/repro-store-scale]

Issue 30's targets, on an idle machine: `repro --help` within 0.3 s, `repro validate stacks/*.yaml` within
0.5 s, `results` and `compare` within 1 s at 10,000 records and `results` within 3 s at 100,000. The stores
are bench/store_scale.py's (built once into --dir and reused; --records 0 leaves them out). The commands
alternate with the floor, so a busy machine slows all of them alike: CPU time and the ratios are the figures
to compare between versions (wall times grow with the load). Every command runs once untimed first, so
Python's bytecode is cached (in a private PYTHONPYCACHEPREFIX, as an installed repro has it) and the store's
index is built. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLOOR = "python -c pass"
TARGETS = {"repro --help": 0.3, "repro validate stacks/*.yaml": 0.5, "results @10000": 1.0,
           "compare OLD NEW @10000": 1.0, "results @100000": 3.0}


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one run of `argv` from the repository root; raises when it fails."""
    before = os.times()
    began = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    after = os.times()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu


def commands(records: list[int], store_dir: Path) -> dict[str, list[str]]:
    """Label -> argv of every command measured (the floor first)."""
    repro = [sys.executable, "-m", "repro"]
    stacks = sorted(str(p.relative_to(REPO)) for p in (REPO / "stacks").glob("*.yaml"))
    out = {
        FLOOR: [sys.executable, "-c", "pass"],
        "repro --help": [*repro, "--help"],
        "repro bench --help": [*repro, "bench", "--help"],
        "repro validate stacks/*.yaml": [*repro, "validate", "--quiet", *stacks],
    }
    if records:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from store_scale import PER_STACK, ensure

        for size in records:
            root = store_dir / str(size)
            ensure(root, size, rebuild=False)
            nights = -(-size // PER_STACK)
            old, new = f"cpu-tf215-nightly-{nights - 2:05d}", f"cpu-tf215-nightly-{nights - 1:05d}"
            store = ["--store", str(root)]
            out[f"results @{size}"] = [*repro, "results", *store]
            if size <= 10_000:
                out[f"compare OLD NEW @{size}"] = [*repro, "compare", old, new, *store]
    return out


def main() -> int:
    """Alternate the floor and each command; print medians, ratios against the floor and the targets."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--records", default="10000", metavar="N,...",
                        help="store sizes for results/compare (default 10000; 0: none; 100000 builds ~1 GB once)")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "repro-store-scale",
                        help="where bench/store_scale.py's stores are built and kept")
    args = parser.parse_args()
    records = [int(n) for n in args.records.split(",") if int(n) > 0]
    measured = commands(records, args.dir)
    with tempfile.TemporaryDirectory(prefix="repro-pycache-") as pycache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(PYTHONPATH=str(REPO), PYTHONPYCACHEPREFIX=pycache)
        for argv in measured.values():  # bytecode written, store indexes built: not what is measured
            timed(argv, env)
        seen: dict[str, list[tuple[float, float]]] = {name: [] for name in measured}
        for repeat in range(args.repeats):
            order = list(measured.items())
            if repeat % 2:
                order.reverse()
            for name, argv in order:
                seen[name].append(timed(argv, env))
    floor_wall = statistics.median(w for w, _ in seen[FLOOR])
    floor_cpu = statistics.median(c for _, c in seen[FLOOR])
    print(f"{'command':32s} {'wall':>8s} {'cpu':>8s} {'wall/floor':>11s} {'cpu/floor':>10s}  target")
    for name, runs in seen.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        target = TARGETS.get(name)
        verdict = f"<= {target:g} s: {'met' if cpu <= target else 'MISSED'} (CPU)" if target else ""
        print(f"{name:32s} {wall:7.3f}s {cpu:7.3f}s {wall / floor_wall:10.1f}x {cpu / max(floor_cpu, 1e-3):9.1f}x"
              f"  {verdict}")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (median of {args.repeats} runs each; "
          "the targets are for an idle machine, where wall is about CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
