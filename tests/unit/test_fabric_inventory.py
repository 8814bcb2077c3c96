"""The path NCCL must take, declared by an inventory (repro_expect_inter_node / repro_expect_intra_node) or a stack:
an unmet one fails the run naming the path it took, through bench's own planning and collecting; on a CPU stack the
inventory's is refused at plan time (issue 37 items 5 and 7). Real NCCL logs: tests/data/logs/nccl/SOURCES.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.cli import main
from repro.hosts.inventory import load_inventory
from repro.launch import collect
from repro.launch.points import SweepSpec, point_key
from repro.launch.runtimes import Outcome, RuntimeReport
from repro.manifest import load_stack
from repro.pipeline.sweep_plan import BenchOptions, plan_sweep
from repro.results.record import StackRef, SweepRef
from repro.results.store import Store
from tests.unit.test_launch_plan import _result

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "data" / "logs" / "nccl"
GPU_STACK = ROOT / "stacks" / "tf114-cuda10.yaml"
INVENTORY = """all:
  vars:
{vars}
  hosts:
    h1: {{ansible_host: 10.9.0.1, repro_gpus: 1}}
    h2: {{ansible_host: 10.9.0.2, repro_gpus: 1}}
"""


def inventory(tmp_path: Path, **expect: str) -> Path:
    path = tmp_path / "hosts.yml"
    lines = [f"    repro_expect_{k}: {v}" for k, v in expect.items()] or ["    repro_slots: 1"]
    path.write_text(INVENTORY.format(vars="\n".join(lines)))
    return path


def bench_record(tmp_path: Path, stack: Path, inv: Path, log: str, *, name: str | None = None):
    """A 2-worker run as `repro bench` plans and collects it: the sweep's expectation (stack and inventory), the
    runtime's Outcome carrying the ranks' NCCL files (here a real log), collect.record."""
    loaded = load_stack(stack)
    store = Store(tmp_path / "results")
    sweep = plan_sweep(loaded, load_inventory(inv), SweepSpec(workload="cnn", workers=(2,), steps=10, warmup_steps=2),
                       BenchOptions(runtime="host", dry_run=True), store)
    point = sweep.points[0]
    ctx = collect.Context(StackRef(name=name or loaded.stack.name, hash=(name or "s").ljust(12, "0")[:12],
                                   manifest=loaded.stack.model_dump(mode="json")),
                          RuntimeReport(), SweepRef(id=sweep.id, point=point_key(point)), "host",
                          expect=sweep.expect)
    plan = sweep.plan(point, sweep.context(loaded, BenchOptions(runtime="host"), point, "r1"))
    result = _result([["10.9.0.1"], ["10.9.0.2"]])
    result["workload"] = point.workload
    out = "REPRO_RESULT " + json.dumps(result) + "\n"
    outcome = Outcome(out, "", 0, 3.0, nccl_log=(LOGS / log).read_text())
    return sweep, collect.record(point, plan, ctx, outcome, nccl_log=outcome.nccl_log)


def test_an_inventory_expecting_rdma_gdr_fails_a_run_that_took_sockets_naming_the_path(tmp_path):
    # find_string id 24563078160: aws-ofi-nccl failed and NCCL fell back to NET/Socket
    sweep, rec = bench_record(tmp_path, GPU_STACK, inventory(tmp_path, inter_node="rdma-gdr"),
                              "k8s-deepspeed-ofi-fallback-socket.log")
    assert sweep.expect == {"inter_node": "rdma-gdr"}
    assert rec.status == "failed"
    assert rec.failure == ("NCCL took another path than the sweep expects (stack and inventory): inter-node path "
                           "socket (NET/Socket on 4 of 4), expected rdma-gdr")
    assert rec.fabric is not None and rec.fabric.path("inter") == "socket"


def test_a_run_on_the_inventorys_path_is_ok_and_keeps_its_fabric(tmp_path):
    # NVIDIA/nccl#1189: NET/IB/GDRDMA between nodes, P2P/CUMEM inside them
    _, rec = bench_record(tmp_path, GPU_STACK, inventory(tmp_path, inter_node="rdma-gdr", intra_node="p2p"),
                          "nccl-1189-mpirun-h20-ib-cumem.log")
    assert rec.status == "ok", rec.failure
    assert rec.fabric.path("inter") == "rdma-gdr" and rec.fabric.path("intra") == "p2p"


def test_a_gpu_run_without_expectation_keeps_its_fabric_and_is_ok(tmp_path):
    _, rec = bench_record(tmp_path, GPU_STACK, inventory(tmp_path), "k8s-deepspeed-ofi-fallback-socket.log")
    assert rec.status == "ok" and rec.fabric.path("inter") == "socket"


def test_an_inventory_expectation_on_a_cpu_stack_is_refused_from_the_cli_with_one_line(tmp_path, capsys):
    inv = inventory(tmp_path, inter_node="rdma-gdr")
    assert main(["bench", "--stack", "stacks/cpu-tf215.yaml", "--hosts", str(inv), "--dry-run"]) == 2
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first == (f"error: {inv}:3:30: repro_expect_inter_node: the path NCCL must take, but stack cpu-tf215 is "
                     "a CPU stack (no NCCL runs there)")
    assert "Traceback" not in err


def test_an_unknown_path_in_the_inventory_is_refused_at_its_line(tmp_path, capsys):
    inv = inventory(tmp_path, intra_node="nvlink")
    assert main(["bench", "--stack", str(GPU_STACK), "--hosts", str(inv), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"{inv}:3" in err and "repro_expect_intra_node" in err and "p2p, shm, p2p-indirect, nvls" in err


@pytest.mark.parametrize("key", ["inter_node"])
def test_a_stack_and_an_inventory_expecting_different_paths_are_refused(tmp_path, capsys, key):
    stack = tmp_path / "gpu-expect.yaml"
    text = GPU_STACK.read_text().replace("extends: tf110-cuda91.yaml", f"extends: {GPU_STACK.parent}/tf110-cuda91.yaml")
    stack.write_text(text + "expect: {inter_node: rdma-gdr}\n")
    inv = inventory(tmp_path, **{key: "socket"})
    assert main(["bench", "--stack", str(stack), "--hosts", str(inv), "--dry-run"]) == 2
    assert "socket, but stack" in capsys.readouterr().err


def test_compare_says_fabric_differed_for_bench_records_that_differ_only_in_the_path(tmp_path, capsys):
    # the same workload output on both sides; OLD: NVIDIA/nccl#1189 (NET/IB/GDRDMA), NEW: the OFI fallback to sockets
    inv = inventory(tmp_path)
    store = Store(tmp_path / "results")
    for name, log in (("ib", "nccl-1189-mpirun-h20-ib-cumem.log"), ("sock", "k8s-deepspeed-ofi-fallback-socket.log")):
        for _ in range(2):
            _, rec = bench_record(tmp_path, GPU_STACK, inv, log, name=name)
            assert rec.status == "ok"
            store.put(rec)
    assert main(["compare", "ib", "sock", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "fabric differed" in x)
    assert "OLD NET/IB/GDRDMA on" in line and "NEW NET/Socket on 4 of 4" in line
