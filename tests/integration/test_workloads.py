"""The workloads run for real under mpirun on this machine (1 and 2 ranks; MPI and Gloo controllers).

Sizes are tiny (ResNet-20 at 32x32, batch 8; all-reduce up to 1e5 elements; the 8x8 digits) so the
whole file takes a few minutes on 2 cores. Speed is not asserted: bench/allreduce_paths.py prints
Horovod's all-reduce latency against plain MPI, bench/workload_overhead.py the cost of repro's timing.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import math
import pathlib
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from repro.workloads import _common as common
from repro.workloads import _net as net
from repro.workloads import framing
from tests.cluster.fixtures import skip_or_fail

REPO = pathlib.Path(__file__).resolve().parents[2]
MPIRUN = shutil.which("mpirun")
THREADS = ["--intra-threads", "1", "--inter-threads", "1"]


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


pytestmark = pytest.mark.tf


@pytest.fixture(autouse=True, scope="module")
def _prerequisites() -> None:
    # a skip without them, a failure under REPRO_TESTS_STRICT (scripts/test.sh)
    if not (MPIRUN and _installed("tensorflow") and _installed("horovod")):
        skip_or_fail("needs mpirun, TensorFlow and Horovod in this environment")


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    result: dict[str, Any] | None
    written: dict[str, Any] | None
    addresses: set[str]  # this namespace's addresses just before and just after the run


def run_workload(
    np_: int,
    module: str,
    args: list[str],
    out_dir: pathlib.Path,
    *,
    gloo_hosts: str | None = None,
    timeout: int = 600,
) -> Run:
    """`mpirun -np N python -m repro.workloads.MODULE ARGS --output FILE` (under the Gloo launcher if asked)."""
    output = out_dir / f"{module}-np{np_}-{'gloo' if gloo_hosts else 'mpi'}.json"
    cmd = [MPIRUN, "--allow-run-as-root", "-np", str(np_), sys.executable, "-m", f"repro.workloads.{module}"]
    cmd += [*args, "--output", str(output)]
    if gloo_hosts:
        cmd = [sys.executable, "-m", "repro.workloads.gloo", "--hosts", gloo_hosts, "--", *cmd]
    before = set(net.local_ipv4_addresses())
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False)
    seen = before | set(net.local_ipv4_addresses())
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    lines = [line for line in framing.joined(proc.stdout).splitlines() if line.strip()]
    result_lines = [line for line in lines if line.startswith(common.RESULT_PREFIX)]
    assert len(result_lines) == 1, f"expected one result line, stdout was:\n{proc.stdout[-2000:]}"
    assert lines == result_lines, f"stdout holds more than the result line:\n{proc.stdout[-2000:]}"
    result = json.loads(result_lines[0][len(common.RESULT_PREFIX) :])
    written = json.loads(output.read_text()) if output.exists() else None
    return Run(proc.returncode, proc.stdout, proc.stderr, result, written, seen)


def check_contract(run: Run, workload: str, size: int) -> None:
    """The fields docs/design.md's workload output contract promises, with this machine's values."""
    result = run.result
    assert result is not None
    assert result["format"] == "repro.workload/1"
    assert result["workload"] == workload
    assert isinstance(result["settings"], dict) and isinstance(result["metrics"], dict)
    assert result["world"]["size"] == size and result["world"]["gpu"] is False
    assert set(result["software"]) >= {"python", "tensorflow", "horovod"}
    assert result["software"]["horovod"] == "0.28.1"
    ranks = result["ranks"]
    assert [r["rank"] for r in ranks] == list(range(size))
    assert [r["local_rank"] for r in ranks] == list(range(size))  # one host: local rank = rank
    for r in ranks:
        assert r["hostname"] == socket.gethostname()
        # other test clusters may add and remove bridges on this machine meanwhile: compare with what
        # the test saw around the run rather than demanding equality
        assert r["addresses"] and set(r["addresses"]) & run.addresses
        assert all(not ipaddress.IPv4Address(a).is_loopback for a in r["addresses"])
        assert r["device"] == "CPU"
        assert set(r) >= {"warmup_times", "step_times", "items_per_step"}


# --------------------------------------------------------------------------- cnn

CNN_ARGS = ["--model", "resnet20", "--batch-size", "8", "--warmup-steps", "2", "--steps", "5", *THREADS]


@pytest.fixture(scope="module", params=[1, 2], ids=["np1", "np2"])
def cnn_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_workload(request.param, "cnn", CNN_ARGS, tmp_path_factory.mktemp("cnn"))


def test_cnn_result_follows_the_output_contract_and_is_written_to_output(cnn_run: Run) -> None:
    result = cnn_run.result
    assert result is not None
    size = len(result["ranks"])
    check_contract(cnn_run, "cnn", size)
    assert cnn_run.written == result
    settings = result["settings"]
    assert settings["model"] == "resnet20" and settings["data"] == "synthetic"
    assert settings["batch_per_worker"] == 8 and settings["global_batch"] == 8 * size
    assert settings["image_size"] == 32 and settings["num_classes"] == 10
    assert (settings["precision"], settings["xla"], settings["data_format"]) == ("fp32", False, "NHWC")
    assert (settings["intra_threads"], settings["inter_threads"]) == (1, 1)
    assert 250_000 < settings["params"] < 300_000  # ResNet-20 has 0.27M parameters
    assert result["world"]["controller"] == "mpi"


def test_cnn_times_every_measured_step_on_every_rank_and_keeps_warmup_apart(cnn_run: Run) -> None:
    assert cnn_run.result is not None
    for rank in cnn_run.result["ranks"]:
        assert len(rank["warmup_times"]) == 2 and len(rank["step_times"]) == 5
        assert rank["items_per_step"] == 8
        assert all(t > 0 for t in rank["step_times"]) and all(t > 0 for t in rank["warmup_times"])


def test_cnn_throughput_is_the_global_batch_times_steps_over_the_slowest_ranks_total(cnn_run: Run) -> None:
    """images/sec as docs/statistics.md defines it, once: every view of the run shows this figure."""
    assert cnn_run.result is not None
    metrics = cnn_run.result["metrics"]
    ranks = cnn_run.result["ranks"]
    steps = min(len(r["step_times"]) for r in ranks)
    expected = sum(r["items_per_step"] for r in ranks) * steps / max(sum(r["step_times"][:steps]) for r in ranks)
    assert metrics["unit"] == "images/sec"
    assert metrics["images_per_sec"] == pytest.approx(expected)
    assert metrics["images_per_sec_per_worker"] == pytest.approx(
        [r["items_per_step"] / common.mean(r["step_times"]) for r in ranks])
    assert math.isfinite(metrics["loss_first"]) and math.isfinite(metrics["loss_last"])


def _write_tfrecords(directory: pathlib.Path, files: int, per_file: int) -> None:
    import numpy as np
    import tensorflow as tf

    rng = np.random.RandomState(0)
    for index in range(files):
        with tf.io.TFRecordWriter(str(directory / f"train-{index:05d}-of-{files:05d}")) as writer:
            for _ in range(per_file):
                image = tf.constant(rng.randint(0, 256, (40, 48, 3), dtype=np.uint8))
                feature = {
                    "image/encoded": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[tf.io.encode_jpeg(image).numpy()])
                    ),
                    "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[rng.randint(0, 10)])),
                }
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def test_cnn_trains_from_a_tfrecord_directory_of_jpegs(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "records"
    data.mkdir()
    _write_tfrecords(data, files=2, per_file=6)
    args = ["--model", "resnet20", "--batch-size", "4", "--warmup-steps", "1", "--steps", "4", "--data", str(data)]
    run = run_workload(2, "cnn", [*args, *THREADS], tmp_path)
    assert run.result is not None
    check_contract(run, "cnn", 2)
    settings = run.result["settings"]
    assert settings["data"] == str(data) and settings["data_files"] == 2
    assert all(len(r["step_times"]) == 4 for r in run.result["ranks"])
    assert math.isfinite(run.result["metrics"]["loss_last"])


def test_cnn_refuses_nchw_on_cpu_with_one_error_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "repro.workloads.cnn", "--model", "resnet20", "--data-format", "NCHW", *THREADS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert common.RESULT_PREFIX not in proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith(common.ERROR_PREFIX)]
    assert errors == ["repro-workload error: NCHW needs a GPU; use NHWC on CPU"]


# --------------------------------------------------------------------------- all-reduce

SWEEP = ["--max-exp", "5", "--num", "10", "--iterations", "10", "--warmup-iterations", "3", "--dtypes", "fp32,fp16",
         *THREADS]
SWEEP_SIZES = [1, 4, 13, 46, 167, 599, 2154, 7743, 27826, 100000]


@pytest.fixture(scope="module")
def allreduce_mpi(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_workload(2, "allreduce", SWEEP, tmp_path_factory.mktemp("ar"))


@pytest.fixture(scope="module")
def allreduce_gloo(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_workload(2, "allreduce", SWEEP, tmp_path_factory.mktemp("ar"), gloo_hosts="127.0.0.1:2")


def test_allreduce_under_plain_mpirun_uses_mpi(allreduce_mpi: Run) -> None:
    result = allreduce_mpi.result
    assert result is not None
    check_contract(allreduce_mpi, "allreduce", 2)
    assert result["world"]["controller"] == "mpi" and result["world"]["cpu_operations"] == "mpi"
    assert result["metrics"]["backend"] == "mpi"


def test_allreduce_under_the_gloo_launcher_has_two_ranks_and_gloo_controller(allreduce_gloo: Run) -> None:
    result = allreduce_gloo.result
    assert result is not None
    check_contract(allreduce_gloo, "allreduce", 2)
    assert result["world"]["controller"] == "gloo" and result["world"]["cpu_operations"] == "gloo"
    assert result["metrics"]["backend"] == "gloo"
    assert result["settings"]["env"]["REPRO_GLOO_HOSTS"] == "127.0.0.1:2"
    assert "HOROVOD_GLOO_RENDEZVOUS_PORT" not in result["settings"]["env"]


@pytest.mark.parametrize("fixture", ["allreduce_mpi", "allreduce_gloo"])
def test_allreduce_rows_follow_nccl_tests_bandwidth_definitions(fixture: str, request: pytest.FixtureRequest) -> None:
    result = request.getfixturevalue(fixture).result
    rows = result["metrics"]["results"]
    assert [(r["dtype"], r["elements"]) for r in rows] == [(d, e) for d in ("fp32", "fp16") for e in SWEEP_SIZES]
    for row in rows:
        assert row["bytes"] == row["elements"] * (4 if row["dtype"] == "fp32" else 2)
        assert len(row["latencies"]) == 10 and all(t > 0 for t in row["latencies"])
        assert row["latency_median"] == pytest.approx(common.median(row["latencies"]))
        assert row["algbw_median"] == pytest.approx(row["bytes"] / row["latency_median"])
        assert row["busbw_median"] == pytest.approx(row["algbw_median"] * 2 * (2 - 1) / 2)


@pytest.mark.parametrize("fixture", ["allreduce_mpi", "allreduce_gloo"])
def test_allreduce_bandwidth_at_largest_size_exceeds_smallest(fixture: str, request: pytest.FixtureRequest) -> None:
    rows = request.getfixturevalue(fixture).result["metrics"]["results"]
    for dtype in ("fp32", "fp16"):
        mine = [r for r in rows if r["dtype"] == dtype]
        assert mine[-1]["busbw_median"] > mine[0]["busbw_median"]


def test_single_worker_allreduce_reports_zero_bus_bandwidth(tmp_path: pathlib.Path) -> None:
    args = ["--sizes", "1,1000,100000", "--iterations", "5", "--warmup-iterations", "1", "--dtypes", "fp32", *THREADS]
    run = run_workload(1, "allreduce", args, tmp_path)
    assert run.result is not None
    check_contract(run, "allreduce", 1)
    rows = run.result["metrics"]["results"]
    assert [r["busbw_median"] for r in rows] == [0.0, 0.0, 0.0]
    assert all(r["algbw_median"] > 0 for r in rows)


# --------------------------------------------------------------------------- time to accuracy


@pytest.fixture(scope="module", params=[1, 2], ids=["np1", "np2"])
def tta_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    args = ["--dataset", "digits", "--max-seconds", "240", *THREADS]
    return run_workload(request.param, "tta", args, tmp_path_factory.mktemp("tta"))


def test_tta_reaches_target_accuracy_on_digits(tta_run: Run) -> None:
    result = tta_run.result
    assert result is not None
    size = result["world"]["size"]
    check_contract(tta_run, "tta", size)
    metrics = result["metrics"]
    assert metrics["target"] == 0.95
    assert metrics["reached"] is True
    assert metrics["time_to_accuracy_s"] > 0
    assert metrics["final_top1"] >= 0.95 and metrics["final_top5"] >= metrics["final_top1"]
    curve = metrics["curve"]
    assert metrics["epochs"] == len(curve) == curve[-1]["epoch"]
    assert metrics["time_to_accuracy_s"] == pytest.approx(curve[-1]["elapsed_s"])
    assert all(e["val_top1"] < 0.95 for e in curve[:-1])  # stopped at the first epoch on target
    assert [e["elapsed_s"] for e in curve] == sorted(e["elapsed_s"] for e in curve)
    assert metrics["compute_s"] == pytest.approx(sum(e["compute_s"] for e in curve))
    assert metrics["communication_s"] == pytest.approx(sum(e["communication_s"] for e in curve))
    assert metrics["compute_s"] > 0 and metrics["communication_s"] > 0
    steps = result["settings"]["steps_per_epoch"]
    assert all(len(r["step_times"]) == steps * len(curve) for r in result["ranks"])


def test_tta_scales_learning_rate_linearly_with_warmup(tta_run: Run) -> None:
    result = tta_run.result
    assert result is not None
    settings, curve = result["settings"], result["metrics"]["curve"]
    size = result["world"]["size"]
    assert settings["peak_learning_rate"] == pytest.approx(settings["base_learning_rate"] * size)
    assert settings["warmup_epochs"] == pytest.approx(math.log2(size))
    if size == 1:
        assert curve[0]["lr"] == pytest.approx(settings["base_learning_rate"])
    else:  # the last step of epoch 1 is just short of the end of a one-epoch warm-up
        assert settings["base_learning_rate"] < curve[0]["lr"] < settings["peak_learning_rate"]


def test_tta_validation_set_is_held_out_and_evaluated_whole(tta_run: Run) -> None:
    result = tta_run.result
    assert result is not None
    metrics = result["metrics"]
    split = metrics["split"]
    train, validation = set(split["train_indices"]), set(split["validation_indices"])
    assert not train & validation
    assert train | validation == set(range(1797)) == set(range(split["dataset_size"]))
    assert metrics["train_size"] == len(train) and metrics["validation_size"] == len(validation)
    assert len(validation) == pytest.approx(0.2 * 1797, abs=10)
    for entry in metrics["curve"]:
        assert entry["validation_examples"] == len(validation)
        assert entry["train_examples"] <= len(train)
    shards = metrics["shards"]
    positions = [set(p) for p in shards["positions"]]
    assert len(positions) == result["world"]["size"]
    assert shards["disjoint"] and sum(len(p) for p in positions) == len(set().union(*positions))
    assert set().union(*positions) <= set(range(len(train)))
