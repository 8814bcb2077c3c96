"""Issue 40, the remainder: MLPerf v0.5 and v0.6 line formats import as time-to-accuracy records, read as the
MLLOG events they stand for (real logs: tests/data/logs/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from repro.results.importers import import_file, import_stack, parse_overrides, read_log
from repro.results.importers.lines import split_lines
from repro.results.importers.mlperf_legacy import events
from tests.unit.test_results_cli import run  # the same CLI runner

REAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "logs" / "real"
V05 = REAL / "mlperf-v0.5-google-tpu-v3-8-gnmt-result0.log"
V06 = REAL / "mlperf-v0.6-google-tpu-v3-32-transformer-result0.log"
STACK = import_stack("mlperf-legacy")


def test_a_v06_log_is_a_time_to_accuracy_run_with_its_batch_platform_and_bleu():
    (record,) = import_file(str(V06), STACK, (), {}).records
    m = record.metrics
    assert record.settings.workload == "tta" and m["mlperf_log"] == "v0.6" and m["reached"] is True
    assert m["time_to_accuracy_s"] == 588.139  # run_stop 1558651003.100 - run_start 1558650414.961
    assert m["accuracy_metric"] == "BLEU" and m["final_accuracy"] == 25.077834725379944
    assert (record.settings.global_batch, record.settings.workers) == (512, 16)


def test_a_v05_log_reads_its_target_success_and_benchmark_and_asks_for_workers():
    refused = import_file(str(V05), STACK, (), {})
    assert refused.status == "failed" and "workers" in refused.error.render()
    (record,) = import_file(str(V05), STACK, parse_overrides(["workers=8"]), {}).records
    m = record.metrics
    assert m["mlperf_log"] == "v0.5" and m["target"] == 21.8 and m["final_accuracy"] == 22.57
    assert m["time_to_accuracy_s"] == 1586.525 and record.settings.extra["benchmark"] == "gnmt"
    assert record.settings.global_batch is None  # input_batch_size is not taken for the global batch


def test_a_v05_run_stop_without_success_is_a_failed_run():
    text = V05.read_text().replace('run_stop: {"success": true}', 'run_stop: {"success": false}')
    (run_,) = read_log(text, "aborted.log", given={"workers": 8})
    assert run_.failure and "aborted" in run_.failure and run_.metrics["reached"] is False


def test_legacy_lines_become_mllog_events_and_other_lines_none():
    lines = split_lines(V05.read_text())
    start = next(line for line in lines if line.text.endswith(" run_start"))
    assert [e["key"] for e in events(start)] == ["submission_benchmark", "run_start"]
    acc = next(e for line in lines for e in events(line) if e["key"] == "eval_accuracy")
    assert acc["value"] == 18.7 and acc["metadata"] == {"epoch_num": 0}
    assert events(split_lines(':::MLLOG {"key": "run_start", "time_ms": 1}')[0]) == []


def test_compare_of_two_v06_imports_is_the_time_to_accuracy_table(capsys, tmp_path):
    store = str(tmp_path / "r")
    for stack in ("old", "new"):
        code, out, err = run(capsys, "import", str(V06), "--stack", stack, "--store", store)
        assert code == 0, out + err
    code, out, err = run(capsys, "compare", "old", "new", "--store", store)
    assert code == 0, out + err
    assert "BLEU" in out and "588" in out and "top-1" not in out
