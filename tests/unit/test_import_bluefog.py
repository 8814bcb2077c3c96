"""Issue 40, the remainder: Bluefog's benchmark output is its own family, not a Horovod run: its all-reduce method
(--dist-optimizer) and batch size are read (real log: tests/data/logs/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from repro.results.importers import import_file, import_stack, read_log
from repro.results.importers.lines import split_lines
from repro.results.importers.records import FORMATS
from tests.unit.test_results_cli import run  # the same CLI runner

REAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "logs" / "real"
DOCS = REAL / "docs-bluefog-performance-neighbor-allreduce-16gpu.log"
STACK = import_stack("bluefog")


def test_bluefogs_benchmark_is_its_own_family_with_its_all_reduce_method_and_batch():
    (record,) = import_file(str(DOCS), STACK, (), {}).records
    s = record.settings
    assert s.workload == "bluefog_synthetic" and record.metrics["format"] == "bluefog_synthetic"
    assert s.extra["dist_optimizer"] == "neighbor_allreduce" and s.extra["program"] == "bluefog"
    assert (s.batch_per_worker, s.workers, s.hosts, s.global_batch) == (64, 16, 4, 1024)
    assert s.comm is None or s.comm.backend is None  # no Horovod controller is claimed
    assert "fp16_allreduce" not in s.extra and record.reported_images_per_sec == 4310.6
    assert "bluefog_synthetic" in FORMATS


def test_the_optimizer_a_command_leaves_out_is_the_programs_default_and_said_so():
    text = DOCS.read_text().replace(" \\\n        --dist-optimizer=neighbor_allreduce", "")
    assert "--dist-optimizer" not in text  # the same real run's command without the flag
    (run_,) = read_log(text, "cut.log")
    assert run_.settings["extra.dist_optimizer"] == "neighbor_allreduce"
    assert "program's default" in run_.metrics["dist_optimizer_from"]


def test_a_hierarchical_run_is_another_point_and_horovod_logs_stay_horovods():
    text = DOCS.read_text().replace("=neighbor_allreduce", "=hierarchical_neighbor_allreduce")
    (run_,) = read_log(text, "hier.log")
    assert run_.settings["extra.dist_optimizer"] == "hierarchical_neighbor_allreduce"
    horovod = REAL / "github-horovod-issue712-pytorch-synthetic-4gpu.log"
    records = import_file(str(horovod), STACK, (), {}).records
    assert records and all(r.settings.workload == "horovod_synthetic" for r in records)
    assert not any("bfrun" in line.text for line in split_lines(horovod.read_text()))


def test_import_and_listing_name_bluefog(capsys, tmp_path):
    store = str(tmp_path / "r")
    code, out, err = run(capsys, "import", str(DOCS), "--stack", "bf", "--store", store)
    assert code == 0 and "bluefog_synthetic" in out, out + err
    code, out, _ = run(capsys, "results", "--store", store)
    assert code == 0 and "bluefog_synthetic" in out and "4,310.60" in out and "horovod" not in out
