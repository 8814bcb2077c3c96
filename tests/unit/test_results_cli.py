"""`repro import`, `repro results` (list, show, scaling) and `repro compare` on imported baselines."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from repro.cli import main
from repro.compare.kinds.throughput.sweep import scaling_table
from repro.results import metrics
from repro.results.store import Store

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "data" / "logs"
BASELINES = ROOT / "docs" / "baselines"


@pytest.fixture()
def store(tmp_path: Path) -> str:
    return str(tmp_path / "results")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_import_logs_then_list_and_show(capsys, store):
    code, out, _ = run(capsys, "import", str(LOGS / "tf_cnn_benchmarks_1gpu.log"),
                       str(LOGS / "tf_cnn_benchmarks_horovod_2gpu.log"), "--stack", "tf114", "--store", store)
    assert code == 0 and "imported 2 runs" in out
    code, out, _ = run(capsys, "results", "--store", store)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["id", "created", "stack", "workload"]
    assert sum("tf_cnn_benchmarks" in line and "tf114" in line for line in lines) == 2
    code, out, _ = run(capsys, "results", "--store", store, "--json")
    rows = json.loads(out)
    assert sorted(r["workers"] for r in rows) == [1, 2]
    assert all(r["origin"] == "import" and r["images_per_sec"] > 300 for r in rows)
    code, out, _ = run(capsys, "results", "--store", store, "--csv", "--workers", "2")
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert row["workers"] == "2" and row["model"] == "resnet50"
    code, out, _ = run(capsys, "results", "--store", store, "show", row["id"][:20])
    assert code == 0 and row["id"] in out and "GPU:0 Tesla V100-SXM2-16GB" in out
    assert "total_images_per_sec: 701.28" in out
    code, out, _ = run(capsys, "results", "show", row["id"], "--store", store, "--json")
    assert json.loads(out)["id"] == row["id"]


def test_a_bad_log_is_exit_2_named_and_the_good_ones_are_imported(capsys, store, tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text("Model:       resnet50\n")
    code, _, err = run(capsys, "import", str(LOGS / "tf_cnn_benchmarks_1gpu.log"), str(bad), "--stack", "x",
                       "--store", store)
    assert code == 2 and f"{bad}:1: error:" in err
    assert [r.metrics["source"]["file"] for r in Store(store).records()] == ["tf_cnn_benchmarks_1gpu.log"]


def test_import_needs_files_or_a_table(capsys, store):
    assert run(capsys, "import", "--stack", "x", "--store", store)[0] == 2


def test_results_scaling_prints_speedup_and_efficiency(capsys, store):
    assert run(capsys, "import", "--table", str(BASELINES / "seed000-synthetic-host.csv"), "--stack", "host",
               "--store", store)[0] == 0
    code, out, _ = run(capsys, "results", "--store", store, "scaling", "host")
    assert code == 0
    header = next(line for line in out.splitlines() if line.lstrip().startswith("workers"))
    for column in ("workers", "images/sec", "per worker", "speedup", "efficiency", "across-node eff"):
        assert column in header
    assert "stack host" in out and "model resnet50" in out  # the same on every row: said once, in the caption
    eight = next(line for line in out.splitlines() if " 1,408.0 " in line)
    assert "6.40x" in eight and "80.0%" in eight
    code, out, _ = run(capsys, "results", "scaling", "host", "--store", store, "--format", "json")
    data = json.loads(out)
    assert [d["workers"] for d in data] == [1, 2, 4, 8]
    assert data[2]["across_node_efficiency"] == pytest.approx(764 / (2 * 436))


def test_scaling_table_renders_for_bench_in_every_format():
    from repro.results.importers import import_stack
    from repro.results.published import import_table

    rows = metrics.scaling(metrics.points(import_table(BASELINES / "seed001-avolkov1.csv", import_stack("a"))))
    md = scaling_table(rows, "markdown").splitlines()
    head = next(i for i, line in enumerate(md) if line.startswith("|"))
    assert "workers" in md[head] and md[head + 1].startswith("|--") and "stack a" in md[0]
    parsed = list(csv.DictReader(io.StringIO(scaling_table(rows, "csv"))))
    assert len(parsed) == len(rows)
    assert json.loads(scaling_table(rows, "json"))[0]["stack"] == "a"


def test_compare_two_imported_baselines_prints_ratios_and_efficiencies(capsys, store):
    for net in ("calico", "host"):
        assert run(capsys, "import", "--table", str(BASELINES / f"seed000-synthetic-{net}.csv"), "--stack",
                   f"seed000-{net}", "--store", store)[0] == 0
    code, out, _ = run(capsys, "compare", "seed000-calico", "seed000-host", "--store", store)
    assert code == 0
    assert "What changed: network Calico → Host" in out
    assert "model resnet50" in out  # the same on every row: in the caption
    rows = {line.split()[0]: line for line in out.splitlines() if re.match(r"\s*\d+\s+\d", line)}
    assert set(rows) == {"1", "2", "4", "8"}
    assert "1.17x" in rows["4"] and "not enough runs" in rows["4"]  # 764 / 652
    assert "74.1%" in rows["4"] and "86.8%" in rows["4"] and "+12.7 pt" in rows["4"]
    assert "1.14x" in rows["8"] and "70.5%" in rows["8"] and "80.0%" in rows["8"]
    assert "resnet50: 1.08x (geometric mean of 4 points" in out
    code, out, _ = run(capsys, "compare", "seed000-calico", "seed000-host", "--store", store, "--format", "json")
    data = json.loads(out)
    assert [round(r["ratio"], 4) for r in data["throughput"]] == [1.0, round(436 / 424, 4), round(764 / 652, 4),
                                                                 round(1408 / 1240, 4)]


def test_compare_of_seed001_methods_aligns_on_machine_and_parameter_server(capsys, store):
    for method in ("kuza55", "avolkov1"):
        run(capsys, "import", "--table", str(BASELINES / f"seed001-{method}.csv"), "--stack", method,
            "--store", store)
    code, out, _ = run(capsys, "compare", "kuza55", "avolkov1", "--store", store, "--format", "json",
                       "--model", "resnet50")
    assert code == 0
    data = json.loads(out)
    point = next(r for r in data["throughput"] if r["point"]["extra.system"] == "7gforce"
                 and r["point"]["extra.ps"] == "CPU" and r["point"]["workers"] == 4)
    assert point["ratio"] == pytest.approx(67.33 / 66.55)
    assert point["efficiency_old"] == pytest.approx(0.3052, abs=5e-5)
    assert point["efficiency_new"] == pytest.approx(0.2893, abs=5e-5)
    six = [r for r in data["throughput"] if r["point"]["workers"] == 6]
    assert all(r["failed_old"] == 1 and r["ratio"] is None for r in six)  # kuza55's "error" rows
