"""Importers: tf_cnn_benchmarks and Horovod benchmark logs, published baseline tables, seed figures.

The logs under tests/data/logs follow the programs' real output formats (see the README there).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from repro.errors import InputError
from repro.results import metrics
from repro.results.importers import (
    HOROVOD,
    TF_CNN,
    detect,
    import_log,
    import_stack,
    parse_log,
    parse_tf_cnn_benchmarks,
)
from repro.results.published import import_table, parse_table

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "data" / "logs"
BASELINES = ROOT / "docs" / "baselines"
STACK = import_stack("imported")


def log(name: str) -> str:
    return (LOGS / name).read_text()


def step_figures(text: str) -> list[tuple[int, float]]:
    return [(int(m.group(1)), float(m.group(2)))
            for m in re.finditer(r"^(?:\[1,\d+\]<stdout>:)?(\d+)\timages/sec: ([0-9.]+)", text, re.M)]


# -- tf_cnn_benchmarks -------------------------------------------------------------------------------

def test_single_gpu_log_header_steps_and_total():
    record = import_log(LOGS / "tf_cnn_benchmarks_1gpu.log", STACK)
    s = record.settings
    assert (s.workload, s.model, s.batch_per_worker, s.global_batch, s.workers) == (TF_CNN, "resnet50", 64, 64, 1)
    assert (s.data, s.data_format, s.steps, s.warmup_steps, s.precision, s.xla) == \
        ("synthetic", "NCHW", 100, 10, "fp32", False)
    assert record.origin == "import" and record.status == "ok" and record.runtime == "imported"
    assert record.software == {"tensorflow": "1.14"}
    (rank,) = record.ranks
    assert rank.device == "GPU:0 Tesla V100-SXM2-16GB"
    assert rank.items_per_step == 64
    # 100 steps shown every 10: ten display intervals, each a mean step time; nothing from the warm-up
    assert len(rank.step_times) == 10 and rank.warmup_times == []
    assert record.metrics["total_images_per_sec"] == 363.51
    assert record.metrics["display_every"] == 10
    assert s.extra == {"variable_update": "replicated"}
    # the reconstruction reproduces tf_cnn_benchmarks' own running mean at the last step
    last_step, last_ips = step_figures(log("tf_cnn_benchmarks_1gpu.log"))[-1]
    assert last_step == 100
    assert 64 * len(rank.step_times) / sum(rank.step_times) == pytest.approx(last_ips, abs=0.06)
    assert metrics.throughput(record) == 363.51  # an imported run's figure is the one its log reported


def test_interval_step_times_are_differences_of_the_running_mean():
    text = "\n".join([
        "Model:       resnet50", "Batch size:  100 global", "             100 per device",
        "Devices:     ['/gpu:0']", "Running warm up", "Done warm up", "Step\tImg/sec\ttotal_loss",
        "1\timages/sec: 100.0 +/- 0.0 (jitter = 0.0)\t8.0",
        "10\timages/sec: 100.0 +/- 0.0 (jitter = 0.0)\t8.0",  # steps 1-10: 1 s each
        "20\timages/sec: 80.0 +/- 5.0 (jitter = 9.0)\t8.0",  # 20 steps in 25 s: steps 11-20 took 1.5 s each
        "-" * 64, "total images/sec: 79.90", "-" * 64])
    (rank,) = parse_tf_cnn_benchmarks(text, "x.log").ranks
    assert rank.step_times == pytest.approx([1.0, 1.5])


def test_step_lines_before_the_step_header_are_warm_up_and_excluded():
    text = log("tf_cnn_benchmarks_1gpu.log").replace(
        "Running warm up\n", "Running warm up\n1\timages/sec: 12.0 +/- 0.0 (jitter = 0.0)\t9.9\n"
                             "10\timages/sec: 50.0 +/- 3.0 (jitter = 9.0)\t9.8\n")
    parsed = parse_log(text, "warm.log")
    assert len(parsed.ranks[0].step_times) == 10
    assert parsed.metrics["warmup_lines_excluded"] == 2
    assert min(parsed.ranks[0].step_times) > 64 / 400  # nothing near 12 or 50 images/sec


def test_horovod_ranks_interleaved_untagged():
    record = import_log(LOGS / "tf_cnn_benchmarks_horovod_2gpu.log", STACK)
    s = record.settings
    assert (s.model, s.batch_per_worker, s.global_batch, s.workers, s.precision) == ("resnet50", 64, 128, 2, "fp16")
    assert s.extra == {"variable_update": "horovod"}
    assert [r.rank for r in record.ranks] == [0, 1]
    assert all(len(r.step_times) == 10 and r.items_per_step == 64 for r in record.ranks)
    assert record.metrics["total_images_per_sec_ranks"] == [701.28, 700.54]
    assert record.metrics["horovod_device"] == "gpu"
    # the two interleaved series are told apart: rank 1's first figure is its own
    figures = step_figures(log("tf_cnn_benchmarks_horovod_2gpu.log"))
    first0, first1 = figures[0][1], figures[1][1]
    assert first0 != first1
    assert metrics.throughput(record) == pytest.approx(701, rel=0.01)


def test_horovod_tagged_ranks_on_two_hosts():
    record = import_log(LOGS / "tf_cnn_benchmarks_horovod_tagged_2x2gpu.log", STACK, hosts=2)
    s = record.settings
    assert (s.workers, s.hosts, s.batch_per_worker, s.global_batch, s.steps, s.warmup_steps) == (4, 2, 128, 512, 50, 10)
    assert s.xla is False and record.software == {"tensorflow": "1.10"}
    assert [r.rank for r in record.ranks] == [0, 1, 2, 3]
    assert all(len(r.step_times) == 5 for r in record.ranks)
    assert record.metrics["total_images_per_sec_ranks"][0] == record.metrics["total_images_per_sec"]
    assert record.command[:3] == ["mpirun", "-np", "4"] and "tf_cnn_benchmarks.py" in record.command


def test_replicated_multi_gpu_in_one_process_carries_the_global_batch():
    record = import_log(LOGS / "tf_cnn_benchmarks_replicated_4gpu.log", STACK)
    s = record.settings
    assert (s.workers, s.batch_per_worker, s.global_batch, s.precision, s.xla) == (4, 256, 1024, "fp16", True)
    (rank,) = record.ranks
    assert rank.items_per_step == 1024
    assert s.extra == {"variable_update": "replicated"}
    last = step_figures(log("tf_cnn_benchmarks_replicated_4gpu.log"))[-1][1]
    assert 1024 * len(rank.step_times) / sum(rank.step_times) == pytest.approx(last, abs=0.1)
    assert metrics.throughput(record) == 4590.59
    assert record.metrics["total_images_per_sec"] == 4590.59


# -- Horovod synthetic benchmark ---------------------------------------------------------------------

def test_horovod_tf2_synthetic_benchmark_rank_zero_stands_for_the_job():
    record = import_log(LOGS / "horovod_tf2_synthetic_4gpu.log", STACK)
    s = record.settings
    assert (s.workload, s.model, s.batch_per_worker, s.workers, s.global_batch) == (HOROVOD, "resnet50", 64, 4, 256)
    (rank,) = record.ranks
    assert rank.device == "GPU:0 NVIDIA A100-SXM4-80GB"
    assert rank.items_per_step == 256
    iters = [float(x) for x in re.findall(r"Iter #\d+: ([0-9.]+) img/sec", log("horovod_tf2_synthetic_4gpu.log"))]
    assert rank.step_times == pytest.approx([64 / x for x in iters])
    assert rank.warmup_times == []
    assert record.metrics["total_images_per_sec"] == 744.1
    assert record.metrics["img_sec_per_device"] == 186.0
    # the reconstruction (harmonic mean) agrees with the program's arithmetic mean to well within its noise
    assert metrics.throughput(record) == pytest.approx(744.1, rel=0.002)


def test_horovod_tf1_synthetic_benchmark_untagged_with_tensorflow_noise():
    record = import_log(LOGS / "horovod_tf1_synthetic_1gpu.log", STACK)
    assert (record.settings.workers, record.settings.batch_per_worker) == (1, 32)
    assert record.ranks[0].device == "GPU:0 Tesla P100-PCIE-16GB"
    assert record.metrics["total_images_per_sec"] == pytest.approx(108.4)


def test_iterations_before_running_benchmark_are_warm_up():
    text = log("horovod_tf1_synthetic_1gpu.log").replace(
        "Running benchmark...", "Iter #0: 40.0 img/sec per GPU\nIter #1: 90.0 img/sec per GPU\nRunning benchmark...")
    (rank,) = parse_log(text, "w.log").ranks
    assert rank.warmup_times == pytest.approx([32 / 40.0, 32 / 90.0])
    assert len(rank.step_times) == 10


def test_format_detection():
    assert detect(log("tf_cnn_benchmarks_1gpu.log")) == TF_CNN
    assert detect(log("horovod_tf2_synthetic_4gpu.log")) == HOROVOD
    assert detect("hello\nworld\n") is None


# -- bad input ---------------------------------------------------------------------------------------

def _diag(exc: pytest.ExceptionInfo) -> str:
    return exc.value.render()


def test_truncated_tf_cnn_log_names_file_line_and_what_was_expected(tmp_path):
    text = log("tf_cnn_benchmarks_1gpu.log").split("----")[0]
    path = tmp_path / "cut.log"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        import_log(path, STACK)
    out = _diag(info)
    n = len(text.splitlines())
    assert f"{path}:{n}: error:" in out
    assert "expected: 'total images/sec: 1751.23'" in out


def test_unknown_text_is_refused_at_line_one(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("\nsome notes about a run\n")
    with pytest.raises(InputError) as info:
        import_log(path, STACK)
    out = _diag(info)
    assert f"{path}:1:" in out and "tf_cnn_benchmarks output" in out and "some notes" in out


def test_missing_header_and_inconsistent_figures_are_located():
    with pytest.raises(InputError, match="cannot import") as info:
        parse_log("10\timages/sec: 200.0 +/- 0.1 (jitter = 0.2)\t8.1\ntotal images/sec: 200.0\n", "h.log")
    assert "h.log:1: error: the tf_cnn_benchmarks header is incomplete" in _diag(info)
    assert "Model:       resnet50" in _diag(info)
    text = ("Model:       resnet50\nBatch size:  10 global\n             10 per device\nStep\tImg/sec\tloss\n"
            "10\timages/sec: 100.0\t1\n20\timages/sec: 40.0\t1\ntotal images/sec: 40\n")
    parse_log(text, "ok.log")  # 20 steps in 5 s after 10 in 1 s: fine
    bad = text.replace("40.0", "400.0")  # 20 steps in 0.5 s after 10 steps in 1 s: impossible
    with pytest.raises(InputError) as info:
        parse_log(bad, "bad.log")
    assert "bad.log:6:" in _diag(info) and "cumulative" in _diag(info)


def test_horovod_summary_must_match_the_header(tmp_path):
    text = log("horovod_tf2_synthetic_4gpu.log").replace("on 4 GPU(s)", "on 8 GPU(s)")
    with pytest.raises(InputError) as info:
        parse_log(text, "h.log")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "Total img/sec" in t)
    assert f"h.log:{line}:" in _diag(info)


def test_import_stack_from_a_manifest_uses_its_hash():
    from repro.manifest import load_stack

    ref = import_stack(str(ROOT / "stacks" / "cpu-tf215.yaml"))
    assert ref.hash == load_stack(ROOT / "stacks" / "cpu-tf215.yaml").hash
    assert ref.manifest["tensorflow"]["version"] == "2.15.1"
    assert import_stack("tf110").hash == import_stack("tf110").hash != import_stack("tf114").hash
    with pytest.raises(InputError):
        import_stack("no spaces please")


# -- published tables --------------------------------------------------------------------------------

def test_baseline_table_rows_become_published_records():
    records = import_table(BASELINES / "seed000-final-accuracy.csv", import_stack("seed000-final-accuracy"))
    assert [r.origin for r in records] == ["published"] * 4
    first = records[0]
    assert first.published.images_per_sec == 329 and first.published.top1 == 0.7318
    assert first.published.top5 == 0.9107 and first.published.system == "Cruiser5"
    assert first.settings.workers == 2 and first.settings.hosts == 2 and first.settings.scaling == "strong"
    assert first.settings.extra == {"system": "Cruiser5"} and first.facts == {"gpu": "P100"}
    assert records[3].settings.model == "vgg16"


def test_rows_without_a_figure_are_failed_records():
    records = import_table(BASELINES / "seed001-kuza55.csv", import_stack("k"))
    failed = [r for r in records if r.status == "failed"]
    assert len(failed) == 4 and all(r.published is None and "'error'" in r.failure for r in failed)
    points = metrics.points(records)
    six = [p for p in points if p.workers == 6]
    assert all(p.images_per_sec is None and p.failed == 1 for p in six)


def test_bad_table_reports_every_problem_with_its_line():
    text = ("# a comment\nsystem,gpus,images_per_sec,top1,precision\n"
            "a,2,100,0.7,fp32\n"
            "b,two,100,,fp32\n"
            "c,4,fast,1.7,fp64\n")
    with pytest.raises(InputError) as info:
        parse_table(text, "t.csv", STACK)
    out = info.value.render()
    assert "t.csv:4: error: gpus: not a positive whole number" in out
    assert "t.csv:5: error: images_per_sec: not a throughput" in out
    assert "t.csv:5: error: top1: not an accuracy" in out
    assert "t.csv:5: error: precision: unknown precision" in out
    with pytest.raises(InputError) as info:
        parse_table("system,images\nx,1\n", "h.csv", STACK)
    assert "h.csv:1: error: missing columns gpus, images_per_sec" in info.value.render()


def test_accuracy_as_percent_and_extra_columns_become_settings():
    (r,) = parse_table("system,gpus,images_per_sec,top1,ps,printed_speedup\nm,2,10,73.5%,CPU,1.9x\n", "p.csv", STACK)
    assert r.published.top1 == pytest.approx(0.735)
    assert r.settings.extra == {"system": "m", "ps": "CPU"}
    assert r.metrics["printed"] == {"speedup": "1.9x"}


# -- seed figures ------------------------------------------------------------------------------------

def _unit(printed: str) -> tuple[float, float]:
    """A printed figure as a fraction and half its last digit (its rounding): '84.12%' -> (0.8412, 0.00005)."""
    text = printed.strip()
    decimals = len(text.rstrip("%x").partition(".")[2])
    scale = 100 if text.endswith("%") else 1
    return float(text.rstrip("%x")) / scale, 0.5 * 10 ** -decimals / scale


def _scaling_checks(name: str) -> tuple[list[str], list[str]]:
    """(figures that match, figures flagged inconsistent that indeed do not) of one baseline table."""
    records = import_table(BASELINES / name, import_stack(Path(name).stem))
    rows = metrics.scaling(metrics.points(records))
    matched, inconsistent = [], []
    for row in rows:
        for rec in row.point.records:
            printed = rec.metrics.get("printed", {})
            check = printed.get("check", "")
            for figure, computed in (("speedup", row.speedup), ("efficiency", row.efficiency)):
                if figure not in printed:
                    continue
                value, tolerance = _unit(printed[figure])
                ok = abs(computed - value) <= tolerance + 1e-12
                where = f"{name}: {row.point.settings.extra} {row.point.workers} GPUs {figure}"
                if check.startswith("inconsistent"):
                    assert not ok, f"{where} is flagged inconsistent but matches ({computed} vs {printed[figure]})"
                    inconsistent.append(where)
                else:
                    assert ok, f"{where}: computed {computed:.5f}, printed {printed[figure]}"
                    matched.append(where)
    return matched, inconsistent


@pytest.mark.parametrize(("name", "matches", "inconsistent"), [
    ("seed000-real-data.csv", 3, 2),
    ("seed000-synthetic-calico.csv", 3, 1),
    ("seed000-synthetic-host.csv", 4, 0),
    ("seed001-kuza55.csv", 2 * 20, 0),  # 20 rows with a figure, speedup and efficiency each
    ("seed001-avolkov1.csv", 2 * 24, 0),
    ("seed001-tf_cnn_benchmarks.csv", 2 * 11, 0),
])
def test_speedup_and_efficiency_reproduce_the_seed_tables(name, matches, inconsistent):
    matched, flagged = _scaling_checks(name)
    assert len(matched) == matches
    assert len(flagged) == inconsistent
