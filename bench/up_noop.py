"""What does `repro up` cost when the image is built and locked already? Against `repro validate` as a floor.

    python bench/up_noop.py [--stack stacks/cpu-tf215.yaml] [--repeats 5]

First runs `repro up STACK` once into a scratch store (this builds the image when the engine lacks it:
minutes), then alternates, --repeats times, the same `repro up` (which must find the tag and the lock
and do nothing) with `repro validate STACK` (the CLI's start-up and loading the stack, which every
command pays). Prints the wall time of each, their medians and the ratio up / validate: what an
unchanged `repro up` adds on top of starting repro. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str]) -> float:
    """Wall time of `python -m repro ARGV` from the repository root; raises when it fails."""
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "repro", *argv], cwd=REPO, capture_output=True, text=True,
                          check=False)
    took = time.perf_counter() - began
    if proc.returncode != 0:
        raise SystemExit(f"repro {' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return took


def main() -> int:
    """The first up, then alternating no-op ups and validates; print medians and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="stacks/cpu-tf215.yaml")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repro-bench-store-") as store:
        up = ["up", args.stack, "--store", store, "--quiet"]
        first = timed(up)
        print(f"first repro up (builds only if the engine lacks the image; verifies and locks): {first:.1f} s",
              flush=True)
        ups: list[float] = []
        validates: list[float] = []
        for repeat in range(args.repeats):
            order = [("up", up, ups), ("validate", ["validate", "--quiet", args.stack], validates)]
            if repeat % 2:
                order.reverse()
            for name, argv, sink in order:
                sink.append(timed(argv))
                print(f"  repeat {repeat + 1} {name:8s} {sink[-1]:6.2f} s", flush=True)
    up_median, validate_median = statistics.median(ups), statistics.median(validates)
    print(f"unchanged repro up  median {up_median:6.2f} s")
    print(f"repro validate      median {validate_median:6.2f} s")
    print(f"ratio up/validate   {up_median / validate_median:.2f} "
          f"(per repeat: {', '.join(f'{u / v:.2f}' for u, v in zip(ups, validates, strict=True))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
