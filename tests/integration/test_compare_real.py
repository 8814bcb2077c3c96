"""`repro compare` on configurations measured here: cpu-tf215 with XLA off and on (real TensorFlow, whose
verdict no one can know in advance), and the probe workload at two step times (a known verdict, and the
--fail-on-regression gate on a real regression)."""

from __future__ import annotations

import json
import shutil
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
def store(readme_job, tmp_path_factory) -> Path:
    """cpu-tf215 (the session's README job: 1 and 2 workers, 3 runs each, copied) and cpu-tf215-xla at the same
    points and settings (2 runs each) in one store."""
    root = tmp_path_factory.mktemp("compare") / "store"
    shutil.copytree(readme_job.store, root, symlinks=True)
    repro("bench", "--stack", "stacks/cpu-tf215-xla.yaml", "--hosts", "inventories/localhost", "--workers", "1,2",
          *readme_job.settings, "--repeats", "2", "--store", str(root))
    return root


def test_compare_table_shows_ratio_verdict_and_what_changed(store):
    proc = repro("compare", "stacks/cpu-tf215.yaml", "stacks/cpu-tf215-xla.yaml", "--store", str(store))
    out = proc.stdout
    assert "benchmark.xla" in out and "false" in out and "true" in out, out  # the manifest diff
    for word in ("ratio", "images/sec"):
        assert word in out.lower(), out
    data = json.loads(repro("compare", "stacks/cpu-tf215.yaml", "stacks/cpu-tf215-xla.yaml", "--store", str(store),
                            "--format", "json").stdout)
    rows = data["throughput"]
    assert len(rows) == 2 and all(row["verdict"] for row in rows), rows
    for row in rows:  # whatever XLA did here, the verdict agrees with the ratio's interval, and the table shows it
        assert row["verdict"] in out, out
        if row["verdict"] == "faster":
            assert row["low"] > 1, row
        if row["verdict"] == "slower":
            assert row["high"] < 1, row


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
    # XLA against itself is no comparison: refused as bad input (issue 41), whatever the gate.
    same = repro("compare", "stacks/cpu-tf215-xla.yaml", "stacks/cpu-tf215-xla.yaml", "--store", str(store),
                 "--fail-on-regression")
    assert same.returncode == 2 and "OLD and NEW are the same runs" in same.stderr


@pytest.fixture(scope="module")
def probe_stores(tmp_path_factory) -> dict[str, Path]:
    """The probe at 20 ms and at 40 ms a step (3 runs each, 1 worker): a step twice as slow."""
    stores = {}
    for name, step in (("fast", "0.02"), ("slow", "0.04")):
        stores[name] = tmp_path_factory.mktemp(f"probe-{name}")
        repro("bench", "--stack", "stacks/cpu-tf215.yaml", "--hosts", "inventories/localhost", "--workload", "probe",
              "--workers", "1", "--warmup-steps", "2", "--steps", "10", "--step-time", step, "--repeats", "3",
              "--store", str(stores[name]))
    return stores


def test_a_known_slowdown_gets_its_verdict_and_fails_the_gate(probe_stores):
    fast, slow = str(probe_stores["fast"]), str(probe_stores["slow"])
    data = json.loads(repro("compare", fast, slow, "--format", "json").stdout)
    rows = data["throughput"]
    assert [r["point"]["workers"] for r in rows] == [1]
    for row in rows:  # half the items per second, within the sleep's overhead
        assert row["verdict"] == "slower" and 0.4 < row["ratio"] < 0.7 and row["high"] < 1, row
    assert "step_time" in json.dumps(data["changes"])  # what changed between the sides
    gate = repro("compare", fast, slow, "--fail-on-regression", check=False)
    assert gate.returncode == 4 and "1 point(s) significantly slower: exit status 4" in gate.stderr, gate.stderr
    assert "slower" in gate.stdout


def test_a_known_speedup_gets_its_verdict_and_passes_the_gate(probe_stores):
    fast, slow = str(probe_stores["fast"]), str(probe_stores["slow"])
    data = json.loads(repro("compare", slow, fast, "--format", "json").stdout)
    assert [r["verdict"] for r in data["throughput"]] == ["faster"], data["throughput"]
    assert all(1.4 < r["ratio"] < 2.5 and r["low"] > 1 for r in data["throughput"]), data["throughput"]
    assert repro("compare", slow, fast, "--fail-on-regression").returncode == 0
