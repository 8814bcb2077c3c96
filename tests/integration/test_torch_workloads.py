"""The torch_* workloads run for real on this machine, 2 ranks, started with the argv repro's launchers make
(torchrun: --standalone c10d; mpirun: OMPI_COMM_WORLD_* mapped to torch's variables, MASTER_ADDR passed with -x).

Tiny sizes (ResNet-20 at 32x32, batch 8, 2+4 steps; all-reduce up to 1e5 elements; the 8x8 digits), so the file
takes about two minutes on 2 cores. Speed is not asserted: bench/torch_peer.py prints the ratio to a plain loop.
"""

from __future__ import annotations

import importlib.util
import json
import math
import pathlib
import shutil
import subprocess
import sys
from typing import Any

import pytest

from repro.hosts.inventory import Host, Inventory
from repro.launch.launchers import LAUNCHERS
from repro.launch.placement import place
from repro.workloads import _common as common
from repro.workloads import framing

REPO = pathlib.Path(__file__).resolve().parents[2]
MPIRUN = shutil.which("mpirun")
THREADS = ["--intra-threads", "1", "--inter-threads", "1"]

pytestmark = [pytest.mark.torch, pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                                     reason="needs PyTorch in this environment")]


def launch(launcher: str, module: str, args: list[str], timeout: int = 300) -> tuple[dict[str, Any], str]:
    """Run `python -m repro.workloads.MODULE ARGS` on 2 local ranks with the launcher's own argv; the result."""
    if launcher == "mpirun" and MPIRUN is None:
        pytest.skip("needs mpirun")
    inventory = Inventory("local", (Host(name="localhost", address="127.0.0.1", slots=2, local=True),))
    command = [sys.executable, "-m", f"repro.workloads.{module}", *args, *THREADS]
    argv = LAUNCHERS.get(launcher).argv(place(inventory, 2), command, ["PYTHONPATH"], interface="lo", ssh=None,
                                        forwarded=("PATH",))
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    lines = [line for line in framing.joined(proc.stdout).splitlines() if line.startswith(common.RESULT_PREFIX)]
    assert len(lines) == 1, f"expected one result line from rank 0, stdout was:\n{proc.stdout[-2000:]}"
    return json.loads(lines[0][len(common.RESULT_PREFIX):]), proc.stderr


@pytest.mark.parametrize("launcher", ["torchrun", "mpirun"])
def test_torch_cnn_trains_with_ddp_on_two_ranks_and_reports_images_per_sec_as_cnn_does(launcher: str) -> None:
    result, _ = launch(launcher, "torch_cnn", ["--model", "resnet20", "--batch-size", "8", "--warmup-steps", "2",
                                               "--steps", "4", "--data-format", "NHWC"])
    assert (result["format"], result["workload"]) == ("repro.workload/1", "torch_cnn")
    assert result["world"]["size"] == 2 and result["world"]["controller"] == "gloo"
    assert result["software"]["torch"].startswith("2.")
    ranks = result["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1]
    assert all(len(r["step_times"]) == 4 and len(r["warmup_times"]) == 2 for r in ranks)
    settings = result["settings"]
    assert (settings["channels_last"], settings["global_batch"], settings["params"]) == (True, 16, 269722)
    slowest_total = max(sum(r["step_times"]) for r in ranks)
    assert math.isclose(result["metrics"]["images_per_sec"], 16 * 4 / slowest_total, rel_tol=1e-9)
    assert result["metrics"]["loss_first"] > 0


def test_torch_allreduce_over_gloo_under_mpirun_sums_correctly_and_reports_nccl_tests_bandwidths() -> None:
    result, stderr = launch("mpirun", "torch_allreduce", ["--dist-backend", "gloo", "--sizes", "1,1000,100000",
                                                          "--iterations", "5", "--warmup-iterations", "1"])
    metrics = result["metrics"]
    assert metrics["backend"] == "gloo" and metrics["bus_factor"] == 1.0
    assert [row["elements"] for row in metrics["results"]] == [1, 1000, 100000]
    for row in metrics["results"]:
        assert row["wrong"] == 0 and len(row["latencies"]) == 5
        assert math.isclose(row["busbw_median"], row["bytes"] / row["latency_median"] * 1.0)
    assert "REPRO_PROGRESS [3/3]" in stderr


def test_torch_tta_reaches_the_target_on_digits_under_torchrun() -> None:
    result, _ = launch("torchrun", "torch_tta", ["--max-epochs", "8", "--target-accuracy", "0.9"])
    metrics = result["metrics"]
    assert metrics["reached"] and metrics["final_top1"] >= 0.9
    assert metrics["time_to_accuracy_s"] == metrics["curve"][-1]["elapsed_s"]
    assert metrics["shards"]["disjoint"] and metrics["shards"]["left_out"] <= 1
    assert metrics["curve"][-1]["validation_examples"] == metrics["validation_size"] > 300  # the whole held-out set
    assert result["settings"]["peak_learning_rate"] == 2 * result["settings"]["base_learning_rate"]


def test_the_mpi_backend_is_refused_clearly_when_torch_has_no_mpi() -> None:
    import torch.distributed as dist

    if dist.is_mpi_available():
        pytest.skip("this PyTorch was built with MPI")
    proc = subprocess.run([sys.executable, "-m", "repro.workloads.torch_allreduce", "--dist-backend", "mpi",
                           "--sizes", "1"], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("repro-workload error: this PyTorch")
    assert "built without MPI" in proc.stderr and "Traceback" not in proc.stderr


def test_models_have_torchvisions_parameter_counts() -> None:
    from repro.workloads import torch_models

    def params(name: str) -> int:
        return sum(p.numel() for p in torch_models.build(name, torch_models.default_num_classes(name)).parameters())

    counts = {name: params(name) for name in ("resnet20", "resnet56", "resnet50", "inception3")}
    # He et al.'s CIFAR ResNets (0.27M, 0.85M); torchvision's resnet50 and inception_v3 (aux_logits=False)
    assert counts == {"resnet20": 269722, "resnet56": 853018, "resnet50": 25557032, "inception3": 23834568}


def test_device_check_dry_run_prints_the_whole_check_without_running_it(tmp_path: pathlib.Path) -> None:
    proc = subprocess.run(["bash", str(REPO / "scripts" / "device-check.sh"), "--dry-run", "--work", str(tmp_path),
                           "--python", sys.executable], cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    commands = [line[2:] for line in proc.stderr.splitlines() if line.startswith("+ ")]
    assert any("pip install" in c and "--no-index" in c and "--target" in c for c in commands)
    assert any(" capture " in c and "--framework pytorch" in c for c in commands)
    benches = [c for c in commands if " -m repro bench " in c]
    assert len(benches) == 4 and all("--runtime host" in c and "--launcher torchrun" in c for c in benches)
    (lm,) = [c for c in benches if "--workload lm" in c]
    assert "--model llama3-1b" in lm and "--precision bf16" in lm and "--seq-len 2048" in lm
    assert sum("lm_peer.py --side plain" in c and "--model llama3-1b" in c for c in commands) == 1
    (cnn,) = [c for c in benches if "torch_cnn" in c]
    assert "--precision fp32,bf16" in cnn and "--model resnet50" in cnn and "--repeats 3" in cnn
    assert any("--dist-backend nccl" in c and "--workers 1" in c for c in benches)
    assert any("--dist-backend gloo" in c and "--workers 2" in c for c in benches)
    assert sum("torch_peer.py --side plain" in c for c in commands) == 2
    assert not (tmp_path / "store").exists()  # nothing ran
    if shutil.which("shellcheck"):
        check = subprocess.run(["shellcheck", str(REPO / "scripts" / "device-check.sh")], capture_output=True,
                               text=True, check=False)
        assert check.returncode == 0, check.stdout


@pytest.mark.parametrize(("launcher", "parallelism"), [("torchrun", "ddp"), ("torchrun", "fsdp"), ("mpirun", "fsdp")])
def test_lm_trains_a_tiny_transformer_on_two_ranks_and_reports_tokens_per_sec(launcher: str, parallelism: str) -> None:
    result, _ = launch(launcher, "lm", ["--model", "tiny", "--batch-size", "2", "--seq-len", "32",
                                             "--parallelism", parallelism, "--activation-checkpointing",
                                             "--warmup-steps", "1", "--steps", "4"])
    assert result["workload"] == "lm" and result["world"]["size"] == 2
    settings, metrics, ranks = result["settings"], result["metrics"], result["ranks"]
    assert (settings["parallelism"], settings["precision"], settings["seq_len"]) == (parallelism, "fp32", 32)
    assert all(r["items_per_step"] == 2 * 32 and len(r["step_times"]) == 4 for r in ranks)
    slowest_total = max(sum(r["step_times"]) for r in ranks)
    assert math.isclose(metrics["tokens_per_sec"], 2 * 2 * 32 * 4 / slowest_total, rel_tol=1e-9)
    assert metrics["flops_per_token"] == settings["flops_per_token"] > 6 * settings["params"] * 0.5
    assert metrics["mfu"] is None and metrics["peak_flops"] is None  # no sourced peak for a CPU
    assert all(m > 100 * 2**20 for m in metrics["peak_memory_bytes_per_rank"])  # a python with torch loaded
    assert metrics["loss_first"] > metrics["loss_last"] > 0  # the one reused batch is being learnt


def test_lm_in_bf16_under_fsdp_keeps_float32_gradient_reduction_and_learns() -> None:
    result, _ = launch("torchrun", "lm", ["--batch-size", "2", "--seq-len", "32", "--parallelism", "fsdp",
                                          "--precision", "bf16", "--warmup-steps", "1", "--steps", "4"])
    assert result["settings"]["precision"] == "bf16"
    assert result["metrics"]["loss_first"] > result["metrics"]["loss_last"]


def test_a_non_finite_loss_fails_the_lm_run_naming_the_step_and_rank() -> None:
    inventory = Inventory("local", (Host(name="localhost", address="127.0.0.1", slots=2, local=True),))
    command = [sys.executable, "-m", "repro.workloads.lm", "--batch-size", "2", "--seq-len", "16", "--steps", "3",
               "--warmup-steps", "0", "--nan-at-step", "1", *THREADS]
    argv = LAUNCHERS.get("torchrun").argv(place(inventory, 2), command, ["PYTHONPATH"], interface="lo", ssh=None,
                                          forwarded=("PATH",))
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0 and common.RESULT_PREFIX not in proc.stdout
    assert "repro-workload error: the loss is nan at step 2 of 3 on rank 1" in proc.stderr
