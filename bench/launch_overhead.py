"""What does `repro bench` add per point, over the launcher line it runs? (target: <= 0.35 s after the first point)

    python bench/launch_overhead.py [--points 5] [--repeats 3] [--probe]

The point is tiny (ResNet-20, batch 4, 1 warm-up and 3 measured steps, 1 worker, host runtime on this machine),
but its launcher line still starts Python and imports TensorFlow, which takes 10-50 s on a loaded 2-core machine
and varies by more than the overhead being measured. So the overhead is measured inside each run, not by
subtracting two noisy totals:
  repro     `repro bench ... --repeats N` and a 1-point sweep; every stored record carries `duration_s`, the
            launcher line's own wall time (process start to exit), so
            outside(N) = wall time of `repro bench` - sum of its records' duration_s
            per point after the first = (outside(N) - outside(1)) / (N - 1); and, within one sweep (free of the
            start-up's noise), from each run's condition windows: the previous run's after-window + its own
            before-window + its during-windows beyond its launcher line
            start-up (inventory, the one host software probe, imports) = outside(1)
  raw       the exact line `repro bench --dry-run` prints for that point, run the same number of times, to show
            that repro's `duration_s` is the line's own cost (median raw line / median duration_s, noisy).
Repeats alternate which side runs first. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POINT = ["--stack", str(REPO / "stacks" / "cpu-tf215.yaml"), "--hosts", str(REPO / "inventories" / "localhost"),
         "--runtime", "host", "--workers", "1", "--batch-size", "4", "--warmup-steps", "1", "--steps", "3"]


def repro_run(points: int, store: str) -> tuple[float, list[float]]:
    """Wall time of one `repro bench` sweep of `points` points, and the launcher durations it stored."""
    argv = [sys.executable, "-m", "repro", "-q", "bench", *POINT, "--repeats", str(points), "--store", store]
    t = time.monotonic()
    subprocess.run(argv, cwd=REPO, check=True, capture_output=True)
    wall = time.monotonic() - t
    durations = [json.loads(p.read_text())["duration_s"] for p in Path(store).glob("runs/*/*.json")]
    if len(durations) != points:
        sys.exit(f"expected {points} records in {store}, found {len(durations)}")
    return wall, durations


def gaps(store: str) -> list[float]:
    """Seconds outside the launcher between consecutive points of one sweep, from its records' own condition
    windows (robust to the start-up's noise, which the difference of two sweeps is not): the previous run's
    after-window, this run's before-window, and what its during-windows hold beyond its launcher line."""
    records = sorted((json.loads(p.read_text()) for p in Path(store).glob("runs/*/*.json")), key=lambda r: r["id"])
    out, after = [], None
    for r in records:
        hosts = list(((r.get("conditions") or {}).get("hosts") or {}).values())
        if not hosts:
            return []
        windows = {ph: sum(s["seconds"] for s in hosts[0]["samples"] if s["phase"] == ph)
                   for ph in ("before", "during", "after")}
        if after is not None:
            out.append(after + windows["before"] + max(0.0, windows["during"] - r["duration_s"]))
        after = windows["after"]
    return out


def raw_line() -> list[str]:
    """The launcher line of the point, from the dry run (`[host] env K=V ... mpirun ...`)."""
    out = subprocess.run([sys.executable, "-m", "repro", "bench", *POINT, "--repeats", "1", "--dry-run"],
                         cwd=REPO, check=True, capture_output=True, text=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("[localhost] "))
    return shlex.split(line.split("] ", 1)[1])


def raw_times(argv: list[str], points: int) -> list[float]:
    times = []
    for _ in range(points):
        t = time.monotonic()
        subprocess.run(argv, cwd=REPO, check=True, capture_output=True)
        times.append(time.monotonic() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--probe", action="store_true", help="the probe workload (10 steps of 10 ms sleep, no framework "
                    "import) instead of ResNet-20: repro's own cost stands out of the launcher's noise")
    args = ap.parse_args()
    if args.probe:
        POINT[POINT.index("--batch-size"):] = ["--workload", "probe", "--step-kind", "sleep", "--step-time", "0.01",
                                               "--warmup-steps", "1", "--steps", "10"]
    if args.points < 2:
        ap.error("--points must be at least 2")
    line = raw_line()
    per_point, startup, inside, raw, windows = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for side in (("repro", "raw") if repeat % 2 == 0 else ("raw", "repro")):
                if side == "raw":
                    raw += raw_times(line, args.points)
                    continue
                wall1, d1 = repro_run(1, f"{tmp}/s{repeat}a")
                walln, dn = repro_run(args.points, f"{tmp}/s{repeat}b")
                windows += gaps(f"{tmp}/s{repeat}b")
                out1, outn = wall1 - sum(d1), walln - sum(dn)
                startup.append(out1)
                per_point.append((outn - out1) / (args.points - 1))
                inside += d1 + dn
                print(f"repeat {repeat + 1}: {args.points} points in {walln:.1f} s, {outn:.2f} s of it outside the"
                      f" launcher; 1 point in {wall1:.1f} s, {out1:.2f} s outside", file=sys.stderr)
    print(f"repro per point after the first: {statistics.median(per_point):.2f} s (target <= 0.35 s); "
          f"per repeat: {', '.join(f'{x:.2f}' for x in per_point)}")
    if windows:
        print(f"repro per point after the first, from the runs' condition windows: {statistics.median(windows):.2f} s"
              f" (median of {len(windows)}; {min(windows):.2f}-{max(windows):.2f} s)")
    print(f"repro start-up (1-point sweep, outside the launcher): {statistics.median(startup):.2f} s "
          f"(per repeat: {', '.join(f'{x:.2f}' for x in startup)})")
    print(f"launcher line: raw {statistics.median(raw):.1f} s, inside repro {statistics.median(inside):.1f} s "
          f"(ratio {statistics.median(raw) / statistics.median(inside):.2f}, medians of {len(raw)} and {len(inside)};"
          f" the workload's own start-up dominates and is noisy)")
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (1-minute, /proc/loadavg)")


if __name__ == "__main__":
    main()
