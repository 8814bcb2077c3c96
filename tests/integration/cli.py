"""Running the `repro` command line from integration tests, as a user would (a separate process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_repro(*args: str, timeout: float = 900, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`python -m repro ARGS` from the repository root; with check, an AssertionError carrying its output."""
    proc = subprocess.run([sys.executable, "-m", "repro", *args], cwd=ROOT, text=True, capture_output=True,
                          timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"repro {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc
