"""No secret value on a process command line during a real run (issue 38 item 2): /proc/*/cmdline is readable by
every local user. A real local launch (host runtime, the probe workload under mpirun, 2 ranks) of a stack whose
env holds a secret by name (DB_PASSWORD) and one by shape under a plain name (a URL with a password), with
DB_PASSWORD also planted in repro's own environment; every process's command line is read while it runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STACK = ROOT / "stacks" / "cpu-tf215.yaml"
LOCAL = ROOT / "inventories" / "localhost"
PLANTED = {"manifest": "DbPw-Manifest-4c8e1a", "shape": "UrlPw-Shape-7d2b9f", "process": "DbPw-Process-2e6a0c"}


def _cmdlines() -> set[str]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                out.add(Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace"))
            except OSError:
                continue
    return out


def test_no_secret_value_is_on_any_command_line_during_a_local_run(tmp_path):
    stack = tmp_path / "secret.yaml"
    stack.write_text(f"extends: {STACK}\nenv:\n  DB_PASSWORD: {PLANTED['manifest']}\n"
                     f"  NOTIFY_URL: \"https://bot:{PLANTED['shape']}@hooks.example.org/notify\"\n")
    env = {**os.environ, "DB_PASSWORD": PLANTED["process"], "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "repro", "bench", "--stack", str(stack), "--hosts", str(LOCAL), "--runtime", "host",
            "--workload", "probe", "--workers", "2", "--warmup-steps", "1", "--steps", "120", "--step-time", "0.05",
            "--batch-size", "4", "--repeats", "1", "--store", str(tmp_path / "store")]
    seen: set[str] = set()  # every command line seen (a process's changes when it execs)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            seen.update(_cmdlines())
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    finally:
        done.set()
        sampler.join()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name, value in PLANTED.items():
        leaked = [c.replace("\0", " ") for c in seen if value in c]
        assert not leaked, (name, leaked)
    # the sampler saw the run: the launch command (under repro's supervisor, reading the secrets from stdin),
    # mpirun and the probe's ranks
    assert any("repro-env" in c and "children.py" in c for c in seen), "the launch command was not seen"
    assert any(c.startswith("mpirun") for c in seen) and any("repro.workloads.probe" in c for c in seen), \
        "no rank was seen"
