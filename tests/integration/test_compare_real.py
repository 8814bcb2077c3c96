"""`repro compare` on two real configurations measured here: cpu-tf215 with XLA off and on."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.cli import run_repro

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def repro(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run_repro(*args, check=check)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("compare-store")
    for stack in ("cpu-tf215.yaml", "cpu-tf215-xla.yaml"):
        repro("bench", "--stack", f"stacks/{stack}", "--hosts", "inventories/localhost", "--workers", "1,2",
              "--warmup-steps", "2", "--steps", "6", "--batch-size", "16", "--repeats", "2", "--store", str(root))
    return root


def test_compare_table_shows_ratio_verdict_and_what_changed(store):
    proc = repro("compare", "stacks/cpu-tf215.yaml", "stacks/cpu-tf215-xla.yaml", "--store", str(store))
    out = proc.stdout
    assert "benchmark.xla" in out and "false" in out and "true" in out, out  # the manifest diff
    for word in ("ratio", "images/sec"):
        assert word in out.lower(), out
    verdicts = ("faster", "slower", "no significant difference", "not enough runs")
    assert any(v in out for v in verdicts)


def test_compare_json_has_one_aligned_point_per_worker_count(store):
    data = json.loads(repro("compare", "stacks/cpu-tf215.yaml", "stacks/cpu-tf215-xla.yaml", "--store", str(store),
                            "--format", "json").stdout)
    text = json.dumps(data)
    assert "xla" in text
    rows = data.get("throughput") or data.get("points") or []
    assert len(rows) == 2, data.keys()
    for row in rows:
        assert row["ratio"] > 0


def test_compare_plot_is_a_real_png(store, tmp_path):
    out = tmp_path / "xla.png"
    repro("compare", "stacks/cpu-tf215.yaml", "stacks/cpu-tf215-xla.yaml", "--store", str(store),
          "--plot", str(out))
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    import matplotlib.image as mpimg

    image = mpimg.imread(out)
    assert image.shape[0] > 100 and image.shape[1] > 100


def test_fail_on_regression_gates_on_measured_runs(store):
    # XLA against itself: never a regression, so the gate passes.
    same = repro("compare", "stacks/cpu-tf215-xla.yaml", "stacks/cpu-tf215-xla.yaml", "--store", str(store),
                 "--fail-on-regression")
    assert same.returncode == 0
