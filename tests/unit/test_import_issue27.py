"""Issue 27's defects of `repro import`, each on the real logs that showed it (tests/data/logs/real, see
SOURCES.md), and the consistency of every record imported from the collection."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from repro.compare.align import hardware, hardware_changes
from repro.compare.core import compare
from repro.compare.kinds.throughput.sweep import scaling_document
from repro.compare.options import Options
from repro.errors import ResultsError
from repro.results import metrics
from repro.results.importers import import_file, import_stack, parse_overrides
from tests.unit.test_results_cli import run  # the same CLI runner

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "logs" / "real"
EXPECTED = yaml.safe_load((ROOT / "tests" / "data" / "logs" / "expected.yaml").read_text())["files"]
STACK = import_stack("issue27")
LAMBDA_1GPU = "lambda-3960X-GeForce-RTX-3080-XLA-syn-replicated-fp16-1gpus-resnet50-48.log"
NO_HEADER = "github-tensorflow-issue23032-1gpu.log"  # a run without header or command (workers not shown)


def imported(path: Path, *sets: str):
    return import_file(str(path), STACK, parse_overrides(list(sets)), {})


def pasted(tmp_path: Path, name: str, *parts: str) -> Path:
    path = tmp_path / name
    path.write_text("".join(parts))
    return path


# 1. one bad part must not lose the file ------------------------------------------------------------------

def test_prose_after_a_complete_run_is_a_warning_naming_its_line_not_a_refused_file(tmp_path):
    text = (REAL / LAMBDA_1GPU).read_text()
    path = pasted(tmp_path, "paste.log", text, "Precision: fp16\nDataset: Synthetic\n")
    prose_line = len(text.splitlines()) + 1
    result = imported(path, "precision=fp16")
    assert result.status == "imported" and len(result.records) == 1
    assert result.records[0].reported_images_per_sec == 875.2
    # 'Dataset: Synthetic' (the line after 'Precision: fp16') looks like a header line: the fragment starts there
    assert any(w.startswith(f"{path}:{prose_line + 1}: lines {prose_line + 1}-{prose_line + 1} not imported")
               for w in result.warnings), result.warnings


def test_a_run_lacking_a_setting_after_a_complete_run_does_not_lose_the_complete_one(tmp_path):
    path = pasted(tmp_path, "two.log", (REAL / LAMBDA_1GPU).read_text(), (REAL / NO_HEADER).read_text())
    result = imported(path, "two.log#1:precision=fp16")
    assert result.status == "imported" and [r.reported_images_per_sec for r in result.records] == [875.2]
    # the run that lacks a setting is named as not imported (and `repro import` exits non-zero: issue 40)
    assert any("not imported" in w and "workers" in w for w in result.unsettled)
    # --set can state what the second run lacks, for that run only (the first shows its own batch, 48)
    result = imported(path, "two.log#1:precision=fp16", "two.log#2:workers=1,batch=32")
    assert [(r.settings.batch_per_worker, r.reported_images_per_sec) for r in result.records] == \
        [(48, 875.2), (32, 197.98)]
    first_lines = len((REAL / LAMBDA_1GPU).read_text().splitlines())
    second = f"two.log#{first_lines + 2}-{first_lines + 3}:workers=1,batch=32"  # lines of the second run
    by_lines = imported(path, "two.log#1:precision=fp16", second)
    assert len(by_lines.records) == 2
    assert imported(path, "two.log#3:workers=1").status == "failed"  # no third run: refused, not ignored


# 2. other programs' output is not Horovod's; differing command lines are never pooled ------------------

def test_byteps_runs_are_byteps_and_runs_whose_command_lines_differ_are_different_points():
    one = imported(REAL / "github-byteps-tutorial-v100-4gpu-resnet50-1iter.log").records[0]
    four = imported(REAL / "github-byteps-tutorial-v100-4gpu-4runs.log").records
    barrier = imported(REAL / "github-byteps-tutorial-v100-4gpu-cross-barrier-3runs.log").records
    assert {r.settings.workload for r in (one, *four, *barrier)} == {"byteps_synthetic"}
    same_model = [one, four[0], barrier[0]]  # resnet50, batch 32, 4 GPUs: 1 iteration, 20, cross barrier
    assert len({r.settings.key() for r in same_model}) == 3
    assert barrier[1].settings.extra["fp16"] is True and barrier[1].settings.precision is None
    horovod = imported(REAL / "docs-cray-hpc-ai-horovod-pytorch-synthetic-2x4gpu.log").records[0]
    assert horovod.settings.workload == "horovod_synthetic" and horovod.settings.extra["program"] == "horovod"


# 3. the header wins over an incomplete command line, and the disagreement is said ----------------------

def test_a_distributed_worker_header_wins_over_a_command_without_num_gpus(capsys, tmp_path):
    path = REAL / "docs-paperspace-tf-cnn-distributed-replicated-worker.log"
    record = imported(path).records[0]
    s = record.settings
    assert (s.workers, s.batch_per_worker, s.global_batch) == (64, 32, 2048)
    assert any("header is used" in w for w in record.metrics["warnings"])
    code, out, _ = run(capsys, "import", str(path), "--stack", "a", "--store", str(tmp_path / "r"))
    assert code == 0 and "Devices:" in out and "header is used" in out
    # the steps' own batch is the process's 8 devices x 32; the record's rate is the log's total
    assert record.ranks[0].items_per_step == 2048
    assert metrics.throughput(record) == 2677.19


# 4. the program's own warm-up rule -----------------------------------------------------------------------

def test_the_keras_benchmarks_iter_0_is_warm_up_as_the_program_has_it():
    record = imported(REAL / "docs-nano5-horovod-keras-synthetic-2gpu-1host.log").records[0]
    (rank,) = record.ranks
    assert len(rank.warmup_times) == 1 and len(rank.step_times) == 9
    rates = [128 / t for t in rank.step_times]
    mean = sum(rates) / len(rates)
    assert mean == pytest.approx(1488.1, abs=0.1)  # the log's own 'Img/sec per GPU: 1488.1 +-2.2'
    assert max(rates) - min(rates) < 0.01 * mean


# 5. unknown hardware on one side is a difference ---------------------------------------------------------

def test_a_side_without_device_names_is_unknown_hardware_not_the_same():
    named = imported(REAL / LAMBDA_1GPU, "precision=fp16").records
    unnamed = imported(REAL / NO_HEADER, "workers=1,batch=32").records
    (change,) = hardware_changes(hardware(unnamed), hardware(named))
    assert change.path == "gpu" and "unknown" in str(change.old) and "RTX 3080" in str(change.new)


def test_both_sides_without_device_names_are_unknown_hardware_refused_unless_forced_and_noted():
    old = imported(REAL / NO_HEADER, "workers=1,batch=32").records  # no device line: the prose says '1 gpu'
    new = imported(REAL / "blog-naist-horovod-tf2-synthetic-p100-8gpu-4hosts.log").records  # P100 in prose only
    with pytest.raises(ResultsError) as refused:
        compare(old, new)
    assert "unknown" in str(refused.value) and "--allow-different-hardware" in refused.value.hint
    forced = compare(old, new, Options(allow_different_hardware=True))
    assert [c.path for c in forced.changes.hardware] == ["gpu"]
    assert any("unknown hardware" in n and "OLD and NEW" in n for n in forced.notes)


def test_one_side_without_device_names_is_named_in_the_notes_when_forced():
    named = imported(REAL / LAMBDA_1GPU, "precision=fp16").records
    unnamed = imported(REAL / NO_HEADER, "workers=1,batch=32").records
    forced = compare(unnamed, named, Options(allow_different_hardware=True))
    assert any("unknown hardware" in n and "OLD" in n and "NEW" not in n for n in forced.notes)


# 6. a crash is a failed run with its reason --------------------------------------------------------------

def test_a_glog_fatal_line_and_fatal_python_error_make_a_failed_run_not_a_cut_log(tmp_path):
    head = (REAL / LAMBDA_1GPU).read_text().split("Running warm up")[0]
    crash = ("Running warm up\n"
             "2019-06-03 16:28:14.911938: F tensorflow/compiler/xla/service/gpu/cudnn_conv_algorithm_picker.cc:284]"
             " Check failed: host_index <= host_buffer->size() (20138 vs. 10069)\n"
             "Fatal Python error: Aborted\n")
    result = imported(pasted(tmp_path, "crash.log", head, crash), "precision=fp16")
    (record,) = result.records
    assert record.status == "failed" and "Check failed: host_index" in record.failure


# 7. smaller ones -------------------------------------------------------------------------------------------

def test_an_aborted_mlperf_run_is_failed_and_bert_accuracy_is_not_top1():
    aborted = imported(REAL / "mlperf-v0.7-nvidia-dgx1-mxnet-resnet-result0-aborted.log").records[0]
    assert aborted.status == "failed" and "aborted" in aborted.failure
    bert = imported(REAL / "mlperf-v0.7-google-tpu-v3-8192-tf-bert-result0.log").records[0]
    assert bert.metrics.get("final_top1") is None and bert.metrics["accuracy_metric"] == "masked_lm_accuracy"
    assert bert.metrics.get("epochs") is None and bert.metrics["epoch_num"] == 496


def test_a_synthetic_run_cut_after_2_of_10_iterations_is_not_ok(tmp_path):
    lines = (REAL / "docs-cray-hpc-ai-horovod-pytorch-synthetic-2x4gpu.log").read_text().splitlines()
    cut = lines[: lines.index("Iter #1: 1787.9 img/sec per GPU") + 1]
    (record,) = imported(pasted(tmp_path, "cut.log", "\n".join(cut) + "\n")).records
    assert record.status == "failed" and "2 of 10 iterations" in record.failure


def test_reimporting_with_a_corrected_set_says_how(capsys, tmp_path):
    path, store = str(REAL / NO_HEADER), str(tmp_path / "r")
    assert run(capsys, "import", path, "--stack", "a", "--store", store, "--set", "workers=1,batch=32")[0] == 0
    code, out, _ = run(capsys, "import", path, "--stack", "a", "--store", store, "--set", "workers=2,batch=32")
    assert code == 0 and "skipped" in out and "repro results rm" in out


def test_scaling_rows_differing_only_in_data_format_show_it(tmp_path):
    records = [r for fmt in ("NCHW", "NHWC") for r in imported(
        pasted(tmp_path, f"{fmt}.log", (REAL / NO_HEADER).read_text().replace("197.98", "197.99" if fmt == "NHWC"
                                                                              else "197.98")),
        f"workers=1,batch=32,data_format={fmt}").records]
    table = scaling_document(metrics.scaling(metrics.points(records))).blocks[0]
    assert "data_format" in [c.header for c in table.columns]


# 8. PyTorch logs -----------------------------------------------------------------------------------------

def test_pytorch_ddp_benchmark_rows_are_pytorch_runs_with_backend_and_precision():
    records = imported(REAL / "github-pytorch-ddp-benchmark-readme-8x8gpu.log").records
    assert len(records) == 24
    last = records[5]
    assert (last.settings.workers, last.settings.hosts) == (16, 2) and last.settings.backend is None  # not Horovod's
    assert last.settings.comm.model_dump() == {"library": "torch.distributed", "backend": "nccl"}
    assert last.settings.extra["framework"] == "pytorch" and last.settings.precision == "fp32"
    assert last.reported_images_per_sec == 16 * 306


# every record of the collection is consistent --------------------------------------------------------------

def _every_record():
    for name, expected in sorted(EXPECTED.items()):
        if "runs" not in expected:
            continue
        given = expected.get("set") or {}
        if isinstance(given, list):  # one setting per run: '#N:NAME=VALUE' (--set FILE#N:NAME=VALUE)
            sets = [f"{name}{s}" for s in given]
        else:
            sets = [f"{name}:{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in given.items()]
        yield from ((name, r) for r in imported(REAL / name, *sets).records)


def test_no_imported_record_is_internally_inconsistent():
    checked = 0
    for name, record in _every_record():
        s = record.settings
        if s.batch_per_worker and s.global_batch and s.workers:
            assert s.global_batch == s.workers * s.batch_per_worker, f"{name} lines {record.metrics['source']}"
            checked += 1
        for rank in record.ranks:  # a rank's step carries its share of the job, never more than the job's
            assert not s.global_batch or rank.items_per_step <= s.global_batch, name
        if record.status == "failed":
            assert record.failure, name
        assert s.hosts is None or s.hosts <= s.workers, name
    assert checked >= 60


def test_a_synthetic_benchmarks_own_gpu_count_wins_over_its_command_line_and_the_difference_is_said(tmp_path):
    text = (REAL / "docs-cray-hpc-ai-horovod-pytorch-synthetic-2x4gpu.log").read_text()
    path = pasted(tmp_path, "np4.log", text.replace("srun --mpi=pmi2 -n 8 ", "srun --mpi=pmi2 -n 4 "))
    (record,) = imported(path).records
    assert (record.settings.workers, record.settings.global_batch) == (8, 768)
    assert any("starts 4 processes" in w and "the log is used" in w for w in record.metrics["warnings"])


def test_an_mlperf_log_stating_its_local_batch_gives_the_worker_count_where_the_platform_does_not(tmp_path):
    name = "mlperf-v0.7-alibaba-v100-1280-resnet-result1-aborted.log"  # platform 'PAI_EFLOPS': no count
    assert imported(REAL / name).status == "failed"  # workers unknown, and no --set
    local = (':::MLLOG {"namespace": "main", "time_s": 0.0, "key": "local_batch_size", "value": 45, '
             '"metadata": {"lineno": 1, "file": "/run/setup.py"}}\n')
    (record,) = imported(pasted(tmp_path, "local.log", local, (REAL / name).read_text())).records
    s = record.settings
    assert (s.workers, s.batch_per_worker, s.global_batch) == (1280, 45, 57600)
    assert record.metrics["workers_from"] == "global_batch_size / local_batch_size"
