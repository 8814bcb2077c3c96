"""`repro bench` on a terminal (a pseudo-terminal): the first line within seconds, each step of a point, an ETA
computed from the measured step times. A real sweep: the host runtime, TensorFlow, Horovod and Open MPI."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
FIRST_LINE_WITHIN_S = 15  # generous on a busy 2-core machine: Python starting and importing repro and rich


def _on_terminal(argv: list[str], timeout: float) -> tuple[float | None, str, int]:
    """Run argv with stdout and stderr on a pseudo-terminal: (seconds to its first visible text, all it wrote
    without colour codes, exit status)."""
    controller, terminal = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "LINES": "50", "TERM": "xterm-256color"}
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ROOT, stdin=terminal, stdout=terminal, stderr=terminal, env=env,
                            close_fds=True)
    os.close(terminal)
    chunks: list[bytes] = []
    first: float | None = None
    try:
        while time.monotonic() - started < timeout:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if ready:
                try:
                    data = os.read(controller, 65536)
                except OSError:  # the terminal closed: the process ended
                    break
                if not data:
                    break
                chunks.append(data)
                if first is None and ANSI.sub("", data.decode(errors="replace")).strip():
                    first = time.monotonic() - started
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, timeout - (time.monotonic() - started)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)
    return first, ANSI.sub("", b"".join(chunks).decode(errors="replace")), code


def test_a_sweep_on_a_terminal_says_what_it_does_at_once_and_shows_steps_and_a_measured_eta(tmp_path):
    argv = [sys.executable, "-m", "repro", "bench", "--stack", "stacks/cpu-tf215.yaml", "--hosts",
            "inventories/localhost", "--workers", "1", "--repeats", "1", "--model", "resnet20", "--batch-size", "8",
            "--warmup-steps", "2", "--steps", "40", "--store", str(tmp_path / "results")]
    first, text, code = _on_terminal(argv, timeout=600)
    assert code == 0, text[-3000:]
    assert first is not None and first < FIRST_LINE_WITHIN_S, (first, text[:500])
    assert "reading stack" in text and "checking the hosts' Python, TensorFlow, Horovod and MPI" in text
    # the point's row: the step's own line ('step (measured) loss ... ms'), its bar and k/42
    steps = {int(k) for k in re.findall(r"step \((?:warm-up|measured)\) loss [^\n]{0,300}?\b(\d+)/42\b", text)}
    assert len(steps) >= 2, text[-3000:]  # the point's bar moved through its steps
    etas = re.findall(r"ETA (\d+):(\d\d):(\d\d)", text)
    assert etas, text[-3000:]  # a number, not -:--:--
    assert "images/sec" in text  # and the sweep's table at the end
