"""Pure helpers of repro.workloads: no TensorFlow, no MPI, no Horovod runtime."""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from repro.workloads import WorkloadError, allreduce, cnn, data, gloo, models, tta, tta_recipe
from repro.workloads import _common as common
from repro.workloads import _net as net
from tests.cluster.fixtures import skip_or_fail

WORKLOADS_DIR = pathlib.Path(common.__file__).parent

FIB_TRIE = """\
Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 10.123.0.0/24 2 0 2
        +-- 10.123.0.0/30 2 0 2
           |-- 10.123.0.0
              /24 link UNICAST
           |-- 10.123.0.2
              /32 host LOCAL
        |-- 10.123.0.255
           /32 link BROADCAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     |-- 172.17.0.1
        /32 host LOCAL
Local:
  +-- 0.0.0.0/0 3 0 5
     |-- 10.123.0.2
        /32 host LOCAL
     |-- 127.0.0.1
        /32 host LOCAL
     |-- 172.17.0.1
        /32 host LOCAL
"""


# --------------------------------------------------------------------------- addresses


def test_fib_trie_yields_each_local_address_once_without_loopback() -> None:
    assert net.parse_fib_trie(FIB_TRIE) == ["10.123.0.2", "172.17.0.1"]


def test_fib_trie_skips_network_and_broadcast_entries_and_keeps_loopback_on_request() -> None:
    found = net.parse_fib_trie(FIB_TRIE, include_loopback=True)
    assert found == ["10.123.0.2", "127.0.0.1", "172.17.0.1"]
    assert "127.0.0.0" not in found and "10.123.0.255" not in found and "10.123.0.0" not in found


def test_fib_trie_of_empty_namespace_has_no_addresses() -> None:
    assert net.parse_fib_trie("Main:\n  +-- 0.0.0.0/0 3 0 5\nLocal:\n") == []


def test_live_addresses_agree_with_the_interface_ioctl() -> None:
    from_fib = set(net.local_ipv4_addresses())
    from_ioctl = {ip for _, ip in net.interface_addresses() if not ip.startswith("127.")}
    assert from_fib == from_ioctl
    assert net.interface_of("127.0.0.1") == "lo"


# --------------------------------------------------------------------------- Gloo slots


@pytest.mark.parametrize(
    ("hosts", "size"),
    [("10.0.0.1:2,10.0.0.2:2", None), ("a:1,b:3,c:2", None), ("a:4,b:4", 6), ("h:1", None), ("a:2,b:1,c:2", 4)],
)
def test_slot_assignments_match_horovods_get_host_assignments(hosts: str, size: int | None) -> None:
    hvd_hosts = pytest.importorskip("horovod.runner.common.util.hosts")
    ours = net.slot_assignments(net.parse_host_slots(hosts), size)
    total = size or sum(int(h.split(":")[1]) for h in hosts.split(","))
    theirs = hvd_hosts.get_host_assignments(hvd_hosts.parse_hosts(hosts), total, total)
    assert ours == [
        {
            "hostname": s.hostname,
            "rank": s.rank,
            "size": s.size,
            "local_rank": s.local_rank,
            "local_size": s.local_size,
            "cross_rank": s.cross_rank,
            "cross_size": s.cross_size,
        }
        for s in theirs
    ]


def test_gloo_slot_env_of_last_rank_on_second_host() -> None:
    env = net.gloo_slot_env("10.0.0.1:2,10.0.0.2:2", 3, 4)
    assert env == {
        "HOROVOD_HOSTNAME": "10.0.0.2",
        "HOROVOD_RANK": "3",
        "HOROVOD_SIZE": "4",
        "HOROVOD_LOCAL_RANK": "1",
        "HOROVOD_LOCAL_SIZE": "2",
        "HOROVOD_CROSS_RANK": "1",
        "HOROVOD_CROSS_SIZE": "2",
    }


def test_gloo_slot_env_rejects_rank_beyond_slots_and_bad_hosts() -> None:
    with pytest.raises(common.WorkloadError, match="outside"):
        net.gloo_slot_env("a:1,b:1", 2, None)
    with pytest.raises(common.WorkloadError, match="only 2 slots"):
        net.gloo_slot_env("a:1,b:1", 0, 3)
    with pytest.raises(common.WorkloadError, match="twice"):
        net.parse_host_slots("a:1,a:2")
    with pytest.raises(common.WorkloadError, match="ADDR:SLOTS"):
        net.parse_host_slots("a")


def test_prepare_gloo_environment_sets_slot_variables_from_mpi_rank() -> None:
    env = {
        "HOROVOD_CONTROLLER": "gloo",
        "REPRO_GLOO_HOSTS": "127.0.0.1:2",
        "REPRO_GLOO_NP": "2",
        "OMPI_COMM_WORLD_RANK": "1",
        "OMPI_COMM_WORLD_SIZE": "2",
    }
    assert net.prepare_gloo_environment(env) is True
    assert env["HOROVOD_RANK"] == "1" and env["HOROVOD_LOCAL_RANK"] == "1" and env["HOROVOD_SIZE"] == "2"
    assert env["HOROVOD_HOSTNAME"] == "127.0.0.1"


def test_prepare_gloo_environment_leaves_mpi_runs_and_horovodrun_runs_alone() -> None:
    mpi = {"OMPI_COMM_WORLD_RANK": "0"}
    assert net.prepare_gloo_environment(mpi) is False and "HOROVOD_RANK" not in mpi
    horovodrun = {"HOROVOD_CONTROLLER": "gloo", "HOROVOD_RANK": "5"}
    assert net.prepare_gloo_environment(horovodrun) is False and horovodrun["HOROVOD_RANK"] == "5"


def test_prepare_gloo_environment_refuses_plain_mpirun_and_size_mismatch() -> None:
    with pytest.raises(common.WorkloadError, match=r"repro\.workloads\.gloo"):
        net.prepare_gloo_environment({"HOROVOD_CONTROLLER": "gloo", "OMPI_COMM_WORLD_RANK": "0"})
    with pytest.raises(common.WorkloadError, match="expects 4"):
        net.prepare_gloo_environment(
            {
                "HOROVOD_CONTROLLER": "gloo",
                "REPRO_GLOO_HOSTS": "127.0.0.1:4",
                "REPRO_GLOO_NP": "4",
                "OMPI_COMM_WORLD_RANK": "0",
                "OMPI_COMM_WORLD_SIZE": "2",
            }
        )


def test_prepare_gloo_environment_refuses_a_rank_placed_on_another_hosts_address() -> None:
    env = {
        "HOROVOD_CONTROLLER": "gloo",
        "REPRO_GLOO_HOSTS": "192.0.2.250:1,198.51.100.77:1",
        "OMPI_COMM_WORLD_RANK": "1",
        "OMPI_COMM_WORLD_SIZE": "2",
    }
    if not net.local_ipv4_addresses():
        skip_or_fail("this namespace has no non-loopback address to compare with")
    with pytest.raises(common.WorkloadError, match="map-by slot"):
        net.prepare_gloo_environment(env)


def test_gloo_argv_exports_rendezvous_right_after_the_mpirun_word() -> None:
    argv = ["ip", "netns", "exec", "h1", "/usr/bin/mpirun", "-np", "2", "python", "-m", "x"]
    out = gloo.gloo_argv(argv, "10.0.0.1:1,10.0.0.2:1", "10.0.0.1", 4242, "eth0", 2)
    assert out[:5] == argv[:5] and out[-5:] == argv[-5:]
    exports = out[5:-5]
    assert exports[0::2] == ["-x"] * 7
    assert dict(e.split("=", 1) for e in exports[1::2]) == {
        "HOROVOD_GLOO_RENDEZVOUS_ADDR": "10.0.0.1",
        "HOROVOD_GLOO_RENDEZVOUS_PORT": "4242",
        "HOROVOD_CONTROLLER": "gloo",
        "HOROVOD_CPU_OPERATIONS": "gloo",
        "HOROVOD_GLOO_IFACE": "eth0",
        "REPRO_GLOO_HOSTS": "10.0.0.1:1,10.0.0.2:1",
        "REPRO_GLOO_NP": "2",
    }


def test_gloo_finds_process_count_and_refuses_commands_without_mpirun() -> None:
    assert gloo.process_count(["mpirun", "-np", "4", "python"]) == 4
    assert gloo.process_count(["mpirun", "--np=3", "python"]) == 3
    assert gloo.process_count(["mpirun", "python"]) is None
    with pytest.raises(common.WorkloadError, match="no mpirun"):
        gloo.launcher_index(["python", "-m", "x"])


def test_gloo_launcher_without_separator_fails_with_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert gloo.main(["--hosts", "127.0.0.1:1", "mpirun"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(common.ERROR_PREFIX)


# --------------------------------------------------------------------------- all-reduce


@pytest.mark.parametrize(("n", "factor"), [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75)])
def test_bus_factor_is_two_n_minus_one_over_n(n: int, factor: float) -> None:
    assert allreduce.bus_factor(n) == pytest.approx(factor)


def test_summarize_computes_bandwidths_from_median_latency() -> None:
    row = allreduce.summarize("fp16", 1000, [0.001, 0.003, 0.002], 4)
    assert row["bytes"] == 2000
    assert row["latency_median"] == pytest.approx(0.002)
    assert row["latency_mean"] == pytest.approx(0.002)
    assert row["algbw_median"] == pytest.approx(2000 / 0.002)
    assert row["busbw_median"] == pytest.approx(row["algbw_median"] * 2 * 3 / 4)
    assert row["latencies"] == [0.001, 0.003, 0.002]


def test_single_worker_busbw_is_zero() -> None:
    assert allreduce.summarize("fp32", 10, [0.5], 1)["busbw_median"] == 0.0


def test_default_sizes_match_rounded_unique_logspace() -> None:
    expected = np.unique(np.round(np.logspace(0, 7.5, num=26)).astype(np.int64)).tolist()
    assert allreduce.default_sizes() == expected and expected[-1] == 31_622_777  # nccl-tests-like: up to 126 MB
    assert allreduce.default_sizes(0, 5, 10) == [1, 4, 13, 46, 167, 599, 2154, 7743, 27826, 100000]


def test_sizes_and_dtypes_parse_and_reject_nonsense() -> None:
    assert allreduce.parse_sizes("1024,1,1e3,1024") == [1, 1000, 1024]
    assert allreduce.parse_dtypes("fp32, fp16") == ["fp32", "fp16"]
    for bad in ("0", "1.5", "x"):
        with pytest.raises(common.WorkloadError):
            allreduce.parse_sizes(bad)
    with pytest.raises(common.WorkloadError, match="unknown dtype"):
        allreduce.parse_dtypes("fp8")
    with pytest.raises(common.WorkloadError):
        allreduce.default_sizes(3, 2, 5)


def test_fewer_iterations_from_large_bytes_on_with_warmup_capped() -> None:
    assert allreduce.iteration_counts(4 * 262143) == (allreduce.ITERATIONS, allreduce.WARMUP)
    assert allreduce.iteration_counts(1 << 20) == (allreduce.LARGE_ITERATIONS, min(allreduce.WARMUP,
                                                                                   allreduce.LARGE_WARMUP))
    assert allreduce.iteration_counts(100, 30, 7, 12, 100) == (12, allreduce.LARGE_WARMUP)
    assert allreduce.iteration_counts(99, 30, 7, 12, 100) == (30, 7)
    assert allreduce.iteration_counts(1 << 30, 30, 0, 12) == (12, 0)


def test_latency_of_an_iteration_is_the_mean_over_ranks() -> None:
    assert allreduce.mean_over_ranks([[1.0, 2.0], [3.0, 6.0]]) == [2.0, 4.0]
    with pytest.raises(common.WorkloadError):
        allreduce.mean_over_ranks([[1.0], [1.0, 2.0]])


# --------------------------------------------------------------------------- time to accuracy


def test_warmup_defaults_to_log2_workers() -> None:
    assert tta_recipe.default_warmup_epochs(1) == 0
    assert tta_recipe.default_warmup_epochs(2) == 1
    assert tta_recipe.default_warmup_epochs(8) == 3


def test_learning_rate_warms_up_linearly_to_base_times_workers() -> None:
    lr = tta_recipe.learning_rate
    assert lr(0.0, 0.1, 4, 2.0) == pytest.approx(0.1)
    assert lr(1.0, 0.1, 4, 2.0) == pytest.approx(0.25)
    assert lr(2.0, 0.1, 4, 2.0) == pytest.approx(0.4)
    assert lr(7.0, 0.1, 4, 2.0) == pytest.approx(0.4)
    assert lr(7.0, 0.1, 4, 2.0, multiplier=0.1) == pytest.approx(0.04)
    assert lr(0.0, 0.1, 1, 0.0) == pytest.approx(0.1)


def test_plateau_reduces_after_patience_epochs_without_improvement() -> None:
    plateau = tta_recipe.Plateau(factor=0.1, patience=2)
    assert [plateau.update(v) for v in (1.0, 0.8, 0.9, 0.85)] == [False, False, False, True]
    assert plateau.multiplier == pytest.approx(0.1)
    assert plateau.update(0.5) is False and plateau.bad_epochs == 0
    assert [plateau.update(v) for v in (0.6, 0.7)] == [False, True]
    assert plateau.multiplier == pytest.approx(0.01)


def test_stratified_split_is_disjoint_complete_stratified_and_seeded() -> None:
    labels = [c for c in range(10) for _ in range(30 + c)]
    train, val = data.stratified_split(labels, 0.2, seed=0)
    assert not set(train) & set(val)
    assert sorted(train + val) == list(range(len(labels)))
    for c in range(10):
        held = sum(1 for i in val if labels[i] == c)
        assert held == round(0.2 * (30 + c))
    assert data.stratified_split(labels, 0.2, seed=0) == (train, val)
    assert data.stratified_split(labels, 0.2, seed=1)[1] != val


@pytest.mark.parametrize(("count", "size"), [(1438, 1), (1438, 2), (1001, 3), (50, 8)])
def test_epoch_shards_are_disjoint_equal_and_reshuffled_each_epoch(count: int, size: int) -> None:
    shards = [data.epoch_shard(count, 0, 7, r, size) for r in range(size)]
    flat = np.concatenate(shards)
    assert len(flat) == len(set(flat.tolist())) == count - count % size
    assert {len(s) for s in shards} == {count // size}
    assert flat.min() >= 0 and flat.max() < count
    again = data.epoch_shard(count, 1, 7, 0, size)
    assert not np.array_equal(again, shards[0])
    assert np.array_equal(data.epoch_shard(count, 0, 7, 0, size), shards[0])
    check = tta_recipe.check_shards([s.tolist() for s in shards], count)
    assert check["disjoint"] and check["within_train_set"] and check["left_out"] == count % size


def test_every_rank_takes_the_same_number_of_steps() -> None:
    assert data.steps_per_epoch(1438, 1, 32) == 45
    assert data.steps_per_epoch(1438, 2, 32) == 23
    assert data.steps_per_epoch(1001, 3, 32) == 11


def test_check_shards_detects_overlap() -> None:
    assert tta_recipe.check_shards([[0, 1], [1, 2]], 3)["disjoint"] is False


def test_curve_entry_divides_global_sums_and_averages_times_over_workers() -> None:
    sums = [36.0, 340.0, 359.0, 359.0, 288.0, 1438.0, 4.0, 2.0, 0.2, 0.4]
    entry = tta_recipe.curve_entry(3, 12.5, 0.1, sums, 2)
    assert entry["val_loss"] == pytest.approx(36 / 359) and entry["val_top1"] == pytest.approx(340 / 359)
    assert entry["val_top5"] == pytest.approx(1.0) and entry["train_loss"] == pytest.approx(288 / 1438)
    assert (entry["validation_examples"], entry["train_examples"]) == (359, 1438)
    assert (entry["compute_s"], entry["communication_s"]) == (2.0, 1.0)
    assert (entry["data_s"], entry["validation_s"]) == pytest.approx((0.1, 0.2))
    assert (entry["epoch"], entry["elapsed_s"], entry["lr"]) == (3, 12.5, 0.1)


def test_dataset_argument_parsing() -> None:
    assert tta.parse_dataset("digits") == ("digits", None)
    assert tta.parse_dataset("cifar10:/d/c") == ("cifar10", "/d/c")
    for bad in ("mnist", "cifar10", "digits:/x"):
        with pytest.raises(common.WorkloadError):
            tta.parse_dataset(bad)


def test_tta_settings_fill_dataset_defaults_and_reject_mismatched_model() -> None:
    settings = tta.resolve_settings(tta.build_parser().parse_args(["--dataset", "digits"]))
    assert settings["model"] == "digits_cnn" and settings["target_accuracy"] == 0.95
    with pytest.raises(common.WorkloadError, match="does not fit"):
        tta.resolve_settings(tta.build_parser().parse_args(["--dataset", "digits", "--model", "resnet20"]))
    with pytest.raises(common.WorkloadError, match="fraction"):
        tta.resolve_settings(tta.build_parser().parse_args(["--target-accuracy", "95"]))


# --------------------------------------------------------------------------- cnn and models


def test_model_defaults() -> None:
    assert models.default_image_size("resnet50") == 224
    assert models.default_image_size("inception3") == 299
    assert models.default_image_size("resnet56") == 32
    assert models.default_num_classes("resnet20") == 10
    assert models.default_num_classes("vgg19") == 1000


def test_cnn_settings_resolve_defaults_and_reject_bad_data(tmp_path: pathlib.Path) -> None:
    parse = cnn.build_parser().parse_args
    settings = cnn.resolve_settings(parse(["--model", "inception3"]))
    assert settings["image_size"] == 299 and settings["num_classes"] == 1000 and settings["xla"] is False
    assert cnn.resolve_settings(parse(["--model", "resnet20", "--xla"]))["xla"] is True
    with pytest.raises(common.WorkloadError, match="image-size >= 75"):
        cnn.resolve_settings(parse(["--model", "inception3", "--image-size", "64"]))
    with pytest.raises(common.WorkloadError, match="not a directory"):
        cnn.resolve_settings(parse(["--data", str(tmp_path / "missing")]))
    with pytest.raises(common.WorkloadError, match="no train-"):
        cnn.resolve_settings(parse(["--data", str(tmp_path)]))
    (tmp_path / "a.tfrecord").write_bytes(b"")
    (tmp_path / "b.tfrecord-00001").write_bytes(b"")
    assert [pathlib.Path(f).name for f in data.tfrecord_files(str(tmp_path))] == ["a.tfrecord", "b.tfrecord-00001"]
    (tmp_path / "train-00000-of-00001").write_bytes(b"")
    assert [pathlib.Path(f).name for f in data.tfrecord_files(str(tmp_path))] == ["train-00000-of-00001"]


def test_throughput_is_the_global_batch_over_the_slowest_ranks_total_time() -> None:
    ranks = [
        {"items_per_step": 8, "step_times": [0.1, 0.2, 0.1], "warmup_times": [3.0]},
        {"items_per_step": 8, "step_times": [0.2, 0.2, 0.4], "warmup_times": [2.0]},
    ]
    m = cnn.throughput_metrics(ranks, 100, [2.0, 1.0])
    # repro's one definition (docs/statistics.md): 16 images x 3 steps in the slower rank's 0.8 s
    assert m["images_per_sec"] == pytest.approx(16 * 3 / 0.8)
    assert m["images_per_sec_per_worker"] == pytest.approx([8 / (0.4 / 3), 8 / (0.8 / 3)])
    assert m["step_time_median"] == pytest.approx(0.2)
    assert m["warmup_time_total"] == pytest.approx(3.0)
    assert (m["loss_first"], m["loss_last"]) == (2.0, 1.0)


# --------------------------------------------------------------------------- common


def test_thread_defaults_share_cores_among_local_workers() -> None:
    assert common.resolve_threads(0, 0, 1, 8) == (8, 2)
    assert common.resolve_threads(0, 0, 2, 2) == (1, 1)
    assert common.resolve_threads(0, 0, 4, 2) == (1, 1)
    assert common.resolve_threads(3, 5, 4, 2) == (3, 5)


def test_median_and_mean() -> None:
    assert common.median([3.0, 1.0, 2.0]) == 2.0
    assert common.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert common.median([]) is None and common.mean([]) is None
    assert common.mean([1.0, 2.0]) == 1.5


def test_result_line_is_prefixed_strict_json_without_nan() -> None:
    line = common.result_line({"a": float("nan"), "b": [np.float32(1.5), float("inf")], "c": np.int64(3)})
    assert line.startswith("REPRO_RESULT ") and "\n" not in line
    assert json.loads(line[len("REPRO_RESULT ") :]) == {"a": None, "b": [1.5, None], "c": 3}


def test_recorded_env_keeps_launch_settings_and_drops_per_rank_values() -> None:
    env = {
        "HOROVOD_CYCLE_TIME": "0.5",
        "HOROVOD_RANK": "1",
        "HOROVOD_GLOO_RENDEZVOUS_PORT": "1234",
        "NCCL_SOCKET_IFNAME": "ib0",
        "OMP_NUM_THREADS": "4",
        "PATH": "/bin",
    }
    assert common.recorded_env(env) == {
        "HOROVOD_CYCLE_TIME": "0.5",
        "NCCL_SOCKET_IFNAME": "ib0",
        "OMP_NUM_THREADS": "4",
    }


def test_bad_flag_is_one_error_line_and_exit_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert cnn.main(["--batch-size", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("repro-workload error: ") and "--batch-size" in lines[0]


# --------------------------------------------------------------------------- packaging rules


def test_workload_modules_import_without_tensorflow() -> None:
    code = (
        "import sys; import repro.workloads.cnn, repro.workloads.tta, repro.workloads.allreduce, "
        "repro.workloads.gloo, repro.workloads.models; "
        "sys.exit(1 if 'tensorflow' in sys.modules or 'horovod' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.parametrize("path", sorted(WORKLOADS_DIR.glob("*.py")), ids=lambda p: p.name)
def test_workloads_import_nothing_from_repro_outside_the_package(path: pathlib.Path) -> None:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level <= 1, f"{path.name}:{node.lineno} reaches outside repro.workloads"
            if node.level == 0 and node.module:
                assert not node.module.startswith("repro"), f"{path.name}:{node.lineno} imports {node.module}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                assert not alias.name.startswith("repro"), f"{path.name}:{node.lineno} imports {alias.name}"


@pytest.mark.parametrize("path", sorted(WORKLOADS_DIR.glob("*.py")), ids=lambda p: p.name)
def test_workloads_parse_as_python_38(path: pathlib.Path) -> None:
    ast.parse(path.read_text(), feature_version=(3, 8))


def test_gloo_across_hosts_refuses_a_hostname_that_resolves_to_loopback(monkeypatch):
    monkeypatch.setattr(net.socket, "gethostbyname", lambda name: "127.0.1.1")
    with pytest.raises(WorkloadError, match=r"resolves to 127\.0\.1\.1"):
        net.check_hostname_resolves("node1")
    monkeypatch.setattr(net.socket, "gethostbyname", lambda name: "10.0.0.5")
    net.check_hostname_resolves("node1")  # routable: fine
