"""Log readers: tf_cnn_benchmarks, Horovod's synthetic benchmarks, MLPerf; splitting, settings, figures.

Fixtures: the format fixtures in tests/data/logs (self-consistent figures, see the README there) and the
real logs in tests/data/logs/real (SOURCES.md). Multi-run files are built the way a looping script
writes them: real logs one after another.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from repro.errors import InputError
from repro.results import metrics
from repro.results.importers import (
    HOROVOD,
    MLLOG,
    TF_CNN,
    import_file,
    import_stack,
    parse_overrides,
    parse_tf_cnn_output,
    read_log,
    to_record,
)
from repro.results.importers.command import find_commands
from repro.results.importers.lines import split_lines
from repro.results.importers.seen import seen_in
from repro.results.importers.tf_cnn import SCRIPTS
from repro.results.importers.tf_cnn_samples import interval_times

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "data" / "logs"
REAL = LOGS / "real"
STACK = import_stack("imported")
RTX3080 = "lambda-3960X-GeForce-RTX-3080-XLA-syn-replicated-"


def log(name: str) -> str:
    return (LOGS / name).read_text()


def real(name: str) -> str:
    return (REAL / name).read_text()


def one(text: str, file: str = "x.log", **given):
    overrides = parse_overrides([f"{k}={v}" for k, v in given.items()])
    (run,) = read_log(text, file, given={o.name: o.value for o in overrides})
    return run


def record(text: str, file: str = "x.log", **given):
    """A record as `repro import FILE --set k=v,...` makes it."""
    overrides = parse_overrides([f"{k}={v}" for k, v in given.items()])
    (run,) = read_log(text, file, given={o.name: o.value for o in overrides})
    return to_record(run, STACK, {o.name: o for o in overrides})


# -- tf_cnn_benchmarks ---------------------------------------------------------------------------------

def test_single_gpu_log_settings_figure_and_samples():
    r = record(log("tf_cnn_benchmarks_1gpu.log"))
    s = r.settings
    assert (s.workload, s.model, s.batch_per_worker, s.global_batch, s.workers) == (TF_CNN, "resnet50", 64, 64, 1)
    assert (s.data, s.data_format, s.steps, s.warmup_steps, s.precision, s.xla) == \
        ("synthetic", "NCHW", 100, 10, "fp32", False)  # the command line is shown: its defaults are known
    assert s.extra == {"variable_update": "replicated", "data_name": "imagenet", "mode": "training",
                       "parameter_device": "gpu"}
    assert r.software["tensorflow"] == "1.14" and r.software["cuda_runtime"] == "10.0"
    (rank,) = r.ranks
    assert rank.device == "GPU:0 Tesla V100-SXM2-16GB" and rank.items_per_step == 64 and len(rank.step_times) == 10
    # the figure is the log's own total, not the reconstruction from the running means
    assert r.reported_images_per_sec == 363.51 == metrics.throughput(r)
    assert r.command[:2] == ["python", "tf_cnn_benchmarks.py"]


def test_interval_step_times_are_differences_of_the_running_mean():
    points = [(1, 100.0, 1), (10, 100.0, 2), (20, 80.0, 3)]  # 10 steps in 10 s, then 20 steps in 25 s
    assert interval_times(points, 100) == (pytest.approx([1.0, 1.5]), 0)
    # rounded figures that would make an interval non-positive are left out and counted, not fatal
    assert interval_times([(10, 100.0, 1), (20, 400.0, 2)], 10) == ([0.1], 1)


def test_step_lines_during_the_warm_up_are_never_samples():
    text = log("tf_cnn_benchmarks_1gpu.log").replace(
        "Running warm up\n", "Running warm up\n1\timages/sec: 12.0 +/- 0.0 (jitter = 0.0)\t9.9\n")
    run = one(text)
    assert run.metrics["warmup_lines_excluded"] == 1 and len(run.ranks[0].step_times) == 10


def test_horovod_ranks_interleaved_untagged_are_one_run_of_two_ranks():
    r = record(log("tf_cnn_benchmarks_horovod_2gpu.log"))
    s = r.settings
    assert (s.model, s.batch_per_worker, s.global_batch, s.workers, s.precision, s.hosts) == \
        ("resnet50", 64, 128, 2, "fp16", 1)
    assert s.extra["variable_update"] == "horovod" and s.extra["horovod_device"] == "gpu"
    assert [x.rank for x in r.ranks] == [0, 1] and all(x.items_per_step == 64 for x in r.ranks)
    assert r.metrics["total_images_per_sec_ranks"] == [701.28, 700.54]
    assert r.reported_images_per_sec == 701.28  # the first printed total


def test_tagged_ranks_on_two_hosts_take_rank_zeros_total():
    r = record(log("tf_cnn_benchmarks_horovod_tagged_2x2gpu.log"))
    s = r.settings
    assert (s.workers, s.hosts, s.batch_per_worker, s.global_batch, s.steps, s.warmup_steps, s.xla) == \
        (4, 2, 128, 512, 50, 10, False)
    assert [x.rank for x in r.ranks] == [0, 1, 2, 3]
    text = log("tf_cnn_benchmarks_horovod_tagged_2x2gpu.log")
    rank0 = re.search(r"\[1,0\]<stdout>:total images/sec: ([0-9.]+)", text)
    assert r.reported_images_per_sec == float(rank0.group(1))


def test_replicated_multi_gpu_in_one_process_carries_the_global_batch():
    r = record(log("tf_cnn_benchmarks_replicated_4gpu.log"))
    assert (r.settings.workers, r.settings.batch_per_worker, r.settings.precision, r.settings.xla) == \
        (4, 256, "fp16", True)
    assert r.settings.extra["all_reduce"] == "nccl"
    (rank,) = r.ranks
    assert rank.items_per_step == 1024 and r.reported_images_per_sec == 4590.59


def test_per_device_line_need_not_be_indented_and_settings_not_shown_stay_unknown():
    r = record(real(f"{RTX3080}fp16-2gpus-resnet50-48.log"))
    assert "\n48 per device\n" in real(f"{RTX3080}fp16-2gpus-resnet50-48.log")
    s = r.settings
    assert (s.batch_per_worker, s.global_batch, s.workers) == (48, 96, 2)
    assert (s.precision, s.xla, s.hosts) == (None, None, None)  # no command line: unknown, not fp32/off/1
    assert r.hardware.gpu == "GeForce RTX 3080" and not r.facts and r.ranks[0].device == "GPU:0 GeForce RTX 3080"


def test_forward_only_real_data_and_parameter_server_are_read():
    inference = record(real(f"{RTX3080}fp16-2gpus-inference-resnet50-48.log"))
    assert inference.settings.extra["mode"] == "inference"
    real_data = record(real("lambda-7742-8xA100-SXM4-40GB-TF2-3-real-replicated-fp16-8gpus-resnet50-448.log"))
    assert (real_data.settings.data, real_data.settings.extra["data_name"]) == ("imagenet", "imagenet")
    assert real_data.hardware.gpu == "A100-SXM4-40GB"  # TF 2.x 'name: ... computeCapability' lines
    ps = record(real("lambda-Gold-6230-Quadro-RTX-8000-NVLink-XLA-trt2-TF2-2-syn-parameter-server-fp16-2gpus-"
                     "resnet50-512.log"))
    assert ps.settings.extra["variable_update"] == "parameter_server" and "all_reduce" not in ps.settings.extra


def test_a_distributed_worker_does_not_show_the_jobs_worker_count():
    # a Kubeflow TFJob worker (launcher prefixes as Kubeflow's docs show them): its Devices and its 'global'
    # batch are its own; the job's total counts every worker
    text = "\n".join(f"INFO|2017-12-19T01:12:17|/opt/launcher.py|27| {line}" for line in (
        "TensorFlow:  1.5", "Model:       resnet50", "Batch size:  32 global", "32 per device",
        "Devices:     ['/job:worker/task:0/cpu:0']", "Variables:   parameter_server",
        "100\timages/sec: 83.3 +/- 0.8 (jitter = 4.7)\t7.886", "total images/sec: 167.40"))
    run = one(text)
    assert "workers" not in run.settings and run.figure == 167.40
    assert record(text, workers=2).settings.workers == 2


def test_a_run_that_failed_is_a_failed_record_with_its_error():
    r = record(real("lambda-i7-9750H-GeForce-RTX-2080-with-Max-Q-Design-TF1-15-syn-replicated-fp32-1gpus-vgg16-48.log"))
    assert r.status == "failed" and "ResourceExhaustedError" in r.failure and "OOM when allocating" in r.failure
    assert r.reported_images_per_sec is None and metrics.throughput(r) is None


def test_headerless_paste_takes_its_settings_from_the_command_line():
    r = record(real("github-horovod-issue288-8gpu-2hosts-summary.log"))
    s = r.settings
    assert (s.model, s.workers, s.hosts, s.batch_per_worker, s.data) == ("resnet50", 8, 2, 128, "imagenet")
    assert r.ranks == [] and r.reported_images_per_sec == 2047.95 == metrics.throughput(r)
    assert "no step figures" in " ".join(r.metrics["warnings"])


def test_headerless_paste_without_a_command_needs_the_worker_count(tmp_path):
    text = real("github-tensorflow-issue23032-1gpu.log")
    with pytest.raises(InputError) as info:
        record(text, "p.log")
    assert "p.log:1: error: workers: the log does not show how many workers" in info.value.render()
    r = record(text, "p.log", workers=1, batch=32)
    assert r.settings.model is None and len(r.ranks[0].step_times) == 10  # --set batch gives the samples


def test_elided_tagged_log_imports_with_a_warning():
    r = record(real("blog-y-rok-horovod-tf-cnn-2gpu-tagged-elided.log"))
    assert r.reported_images_per_sec == 300.87 and r.settings.workers == 2
    assert any("leaves lines out" in w for w in r.metrics["warnings"])


# -- splitting a file into runs ------------------------------------------------------------------------

def test_a_file_of_runs_one_after_another_is_one_record_per_run():
    names = [f"{RTX3080}fp16-1gpus-resnet50-48.log", f"{RTX3080}fp16-2gpus-resnet50-48.log",
             f"{RTX3080}fp16-2gpus-inference-resnet50-48.log", f"{RTX3080}fp16-1gpus-inception3-24.log"]
    runs = read_log("".join(real(n) for n in names), "loop.log")
    assert [r.figure for r in runs] == [875.20, 1464.72, 6621.59, 412.09]
    assert [(r.settings["workers"], r.settings["extra.mode"]) for r in runs] == \
        [(1, "training"), (2, "training"), (2, "inference"), (1, "training")]
    assert runs[1].first_line == runs[0].last_line + 1


def test_headerless_runs_one_after_another_are_split_at_the_next_step_table():
    text = real("github-tensorflow-issue23032-1gpu.log")
    runs = read_log(text + text.replace("197.98", "375.12"), "two.log")
    assert [r.figure for r in runs] == [197.98, 375.12]


def test_tagged_runs_one_after_another_split_per_rank():
    text = log("tf_cnn_benchmarks_horovod_tagged_2x2gpu.log")
    runs = read_log(text + text, "x.log")
    assert len(runs) == 2 and all(len(r.ranks) == 4 for r in runs)


def test_horovod_synthetic_file_with_two_runs_tagged_and_untagged():
    runs = read_log(real("docs-oci-horovod-tf2-synthetic-8gpu-and-16gpu.log"), "oci.log")
    assert [(r.format, r.settings["workers"], r.settings["hosts"], r.figure) for r in runs] == \
        [(HOROVOD, 8, 1, 4800.1), (HOROVOD, 16, 2, 9170.8)]


# -- Horovod synthetic benchmarks and MLPerf -------------------------------------------------------------

def test_horovod_tf2_synthetic_benchmark_rank_zero_stands_for_the_job():
    r = record(log("horovod_tf2_synthetic_4gpu.log"))
    s = r.settings
    assert (s.workload, s.model, s.batch_per_worker, s.workers, s.global_batch) == (HOROVOD, "resnet50", 64, 4, 256)
    assert s.extra["framework"] == "tensorflow"
    (rank,) = r.ranks
    assert rank.device == "GPU:0 NVIDIA A100-SXM4-80GB" and rank.items_per_step == 256
    iters = [float(x) for x in re.findall(r"Iter #\d+: ([0-9.]+) img/sec", log("horovod_tf2_synthetic_4gpu.log"))]
    assert rank.step_times == pytest.approx([64 / x for x in iters])
    assert r.reported_images_per_sec == 744.1 == metrics.throughput(r)


def test_iterations_before_running_benchmark_are_warm_up():
    text = log("horovod_tf1_synthetic_1gpu.log").replace(
        "Running benchmark...", "Iter #0: 40.0 img/sec per GPU\nIter #1: 90.0 img/sec per GPU\nRunning benchmark...")
    (rank,) = one(text).ranks
    assert rank.warmup_times == pytest.approx([32 / 40.0, 32 / 90.0]) and len(rank.step_times) == 10


def test_horovod_summary_must_match_the_header():
    text = log("horovod_tf2_synthetic_4gpu.log").replace("on 4 GPU(s)", "on 8 GPU(s)")
    with pytest.raises(InputError) as info:
        read_log(text, "h.log")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "Total img/sec" in t)
    assert f"h.log:{line}:" in info.value.render()


def test_mlperf_result_is_time_to_accuracy():
    text = real("mlperf-v0.7-google-gpu-v100-8-tf2-resnet-result0.log")
    r = record(text, workers=8)
    assert (r.settings.workload, r.settings.model, r.settings.global_batch) == ("tta", "resnet50_v1.5", 2496)
    assert r.metrics["reached"] is True and r.metrics["time_to_accuracy_s"] == pytest.approx(5293.9)
    aborted = record(real("mlperf-v0.7-nvidia-dgx1-mxnet-resnet-result0-aborted.log"), workers=8)
    assert aborted.metrics["reached"] is False and "time_to_accuracy_s" not in aborted.metrics
    assert [x.format for x in read_log(text + text, "two.log")] == [MLLOG, MLLOG]


# -- what logs show besides the figures -----------------------------------------------------------------

@pytest.mark.parametrize(("lines", "name"), [
    (["2018-06-26 12:00:00.000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1344] Found device 0 with "
      "properties:", "name: Tesla M60", "major: 5 minor: 2 memoryClockRate(GHz): 1.1775"], "Tesla M60"),
    (["I... Found device 0 with properties:", "pciBusID: 0000:03:00.0 name: Vega 20     ROCm AMD GPU ISA: gfx906"],
     "Vega 20"),
    (["Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 14874 MB memory) -> physical GPU "
      "(device: 0, name: Tesla V100-SXM2-16GB, pci bus id: 0000:00:0d.0, compute capability: 7.0)"],
     "Tesla V100-SXM2-16GB"),
])
def test_gpu_names_of_tf1_tf2_and_rocm(lines, name):
    assert seen_in(split_lines("\n".join(lines))).names == (name,)


def test_a_shell_assignment_is_not_the_command_and_env_prefixes_are_not_argv():
    text = ('RUN="srun --mpi=pmix $SINGULARITY python tf_cnn_benchmarks.py --model=resnet50"\n'
            "echo $RUN; $RUN\n"
            "$ NCCL_DEBUG=INFO mpirun -np 4 -H a:2,b:2 python tf_cnn_benchmarks.py \\\n    --model resnet50 \\\n"
            "    --batch_size=32\n")
    (cmd,) = find_commands(split_lines(text), SCRIPTS)
    assert cmd.argv[0] == "mpirun" and cmd.env == {"NCCL_DEBUG": "INFO"} and cmd.line == 3
    assert (cmd.processes, cmd.hosts, cmd.flags["model"], cmd.flags["batch_size"]) == (4, 2, "resnet50", "32")


def test_launcher_prefixes_and_indentation_are_taken_off():
    text = real("docs-ray-sgd-benchmark-16gpu.log")  # indented four spaces (an rst code block)
    assert one(text).figure == 5640.2
    prefixed = "\n".join(f"INFO|2017-12-19T01:12:17|/opt/launcher.py|27| {line}"
                         for line in log("tf_cnn_benchmarks_1gpu.log").splitlines())
    assert one(prefixed).figure == 363.51


# -- parse_tf_cnn_output, for repro bench ----------------------------------------------------------------

def test_parse_tf_cnn_output_reads_one_run_of_several_ranks():
    run = parse_tf_cnn_output(log("tf_cnn_benchmarks_horovod_tagged_2x2gpu.log"), source="rank-output")
    assert run.figure == run.metrics["total_images_per_sec"] and len(run.ranks) == 4
    assert all(len(r.step_times) == 5 and r.items_per_step == 128 for r in run.ranks)
    assert run.settings["model"] == "resnet50" and run.settings["workers"] == 4
    lambda_run = parse_tf_cnn_output(real(f"{RTX3080}fp16-1gpus-resnet50-48.log"))
    assert lambda_run.figure == 875.20 and lambda_run.settings["batch_per_worker"] == 48


def test_parse_tf_cnn_output_refuses_no_run_and_several():
    with pytest.raises(InputError) as info:
        parse_tf_cnn_output("Generating model\n", source="out")
    assert "out:1: error: no tf_cnn_benchmarks runs in this output" in info.value.render()
    text = log("tf_cnn_benchmarks_1gpu.log")
    with pytest.raises(InputError) as info:
        parse_tf_cnn_output(text + text, source="out")
    assert "2 tf_cnn_benchmarks runs" in info.value.render()


# -- bad input ------------------------------------------------------------------------------------------

def test_truncated_log_names_file_and_line(tmp_path):
    text = log("tf_cnn_benchmarks_1gpu.log").split("Running warm up")[0]
    with pytest.raises(InputError) as info:
        read_log(text, "cut.log")
    assert f"cut.log:{len(text.splitlines())}: error: the run has no step figures" in info.value.render()


def test_unknown_binary_and_empty_files_are_refused_without_echoing_them(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("\npassword: hunter2\n")
    binary = tmp_path / "x.bin"
    binary.write_bytes(b"\x7fELF\x00\x01" * 100)
    empty = tmp_path / "empty.log"
    empty.write_text("")
    results = [import_file(str(p), STACK, (), {}) for p in (notes, binary, empty)]
    texts = [r.error.render() for r in results]
    assert all(r.status == "failed" for r in results)
    assert f"{notes}:2: error: not a log repro can import" in texts[0] and "hunter2" not in texts[0]
    assert f"{binary}:1: error: a binary file" in texts[1]
    assert "an empty file" in texts[2]


def test_import_stack_from_a_manifest_uses_its_hash():
    from repro.manifest import load_stack

    ref = import_stack(str(ROOT / "stacks" / "cpu-tf215.yaml"))
    assert ref.hash == load_stack(ROOT / "stacks" / "cpu-tf215.yaml").hash
    assert import_stack("tf110").hash == import_stack("tf110").hash != import_stack("tf114").hash
    with pytest.raises(InputError):
        import_stack("no spaces please")


# -- output of the real program, made for these tests (tests/data/logs/generated) -----------------------

GENERATED = LOGS / "generated"


def test_real_tagged_horovod_output_is_one_run_of_two_ranks_with_rank_zeros_total():
    text = (GENERATED / "tf_cnn_benchmarks_tf2.15_horovod_2ranks_tagged_cpu.log").read_text()
    run = parse_tf_cnn_output(text, source="hvd.log")
    assert run.figure == 33.11 and run.metrics["total_images_per_sec_ranks"] == [33.11, 33.07]
    assert [(r.rank, r.device, len(r.step_times), r.items_per_step) for r in run.ranks] == \
        [(0, "CPU", 3, 16), (1, "CPU", 3, 16)]
    assert (run.settings["workers"], run.settings["global_batch"], run.settings["extra.horovod_device"]) == \
        (2, 32, "cpu")
    assert run.software["tensorflow"] == "2.15"


def test_real_loop_output_is_three_runs_with_their_own_commands():
    runs = read_log((GENERATED / "tf_cnn_benchmarks_tf2.15_loop_3runs_cpu.log").read_text(), "loop.log")
    assert [r.figure for r in runs] == [170.62, 277.09, 443.54]
    assert [(r.settings["batch_per_worker"], r.settings["extra.mode"]) for r in runs] == \
        [(16, "training"), (32, "training"), (32, "inference")]
    assert all(r.command[:2] == ("python", "tf_cnn_benchmarks.py") for r in runs)
    assert runs[2].command[-1] == "--forward_only=True"
