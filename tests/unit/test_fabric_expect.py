"""A stack's `expect`: the path NCCL must take. Unmet: a failed run naming the path taken; on a CPU stack: refused."""

from __future__ import annotations

import json
from pathlib import Path

from repro.cli import main
from repro.launch import collect
from repro.launch.plan import nccl_debug_env
from repro.launch.points import SweepSpec, expand, point_key
from repro.launch.runtimes import Outcome, RuntimeReport
from repro.results.record import StackRef, SweepRef
from tests.unit.test_launch_plan import CPU, _result, cluster, plan_of

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs" / "nccl"
CPU_STACK = """description: CPU stack that expects a path
os: {distro: debian, version: "12"}
mpi: {implementation: openmpi, version: "4.1.4"}
python: "3.11"
tensorflow: {version: "2.15.1", package: tensorflow-cpu}
horovod: {version: "0.28.1", with_mpi: true, with_gloo: true}
expect: {inter_node: rdma-gdr, intra_node: p2p}
"""


def _record(expect: dict, log: str):
    (p,) = expand(SweepSpec(workers=(2,)), CPU.stack)
    plan = plan_of(p, cluster(), "docker", stack_env={}, gpu=False, run_id="r", image="img")
    ctx = collect.Context(StackRef(name="gpu", hash="abc", manifest={"expect": expect}), RuntimeReport(),
                          SweepRef(id="sw", point=point_key(p)), "docker")
    out = "REPRO_RESULT " + json.dumps(_result([["10.9.0.1"], ["10.9.0.2"]])) + "\n"
    return collect.record(p, plan, ctx, Outcome(out, "", 0, 3.2), nccl_log=(LOGS / log).read_text())


def test_a_run_that_took_sockets_where_rdma_gdr_was_expected_fails_naming_the_path():
    # find_string id 24563078160: aws-ofi-nccl failed and NCCL fell back to NET/Socket
    rec = _record({"inter_node": "rdma-gdr"}, "k8s-deepspeed-ofi-fallback-socket.log")
    assert rec.status == "failed"
    assert rec.failure == ("NCCL took another path than the stack expects: inter-node path socket "
                           "(NET/Socket on 4 of 4), expected rdma-gdr")
    assert rec.fabric is not None and rec.fabric.version == "2.27.3+cuda12.9"


def test_a_run_on_the_expected_path_is_ok_and_keeps_its_fabric():
    # NVIDIA/nccl#1189: NET/IB/GDRDMA between nodes, P2P/CUMEM inside them
    rec = _record({"inter_node": "rdma-gdr", "intra_node": "p2p"}, "nccl-1189-mpirun-h20-ib-cumem.log")
    assert rec.status == "ok" and rec.fabric.path("inter") == "rdma-gdr"


def test_nccl_debug_env_writes_one_file_per_host_and_process():
    env = nccl_debug_env("/tmp/repro-nccl/run1/")
    assert env == {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,GRAPH,ENV",
                   "NCCL_DEBUG_FILE": "/tmp/repro-nccl/run1/nccl.%h.%p.log"}


def test_an_expectation_on_a_cpu_stack_is_refused_from_the_cli(tmp_path, capsys):
    stack = tmp_path / "cpu-expect.yaml"
    stack.write_text(CPU_STACK)
    assert main(["bench", "--stack", str(stack), "--hosts", "localhost", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"{stack}:7:1: error: expect: GPU-only field on a CPU stack" in err
    assert "Traceback" not in err


def test_fabric_command_exits_2_on_a_directory_and_renders_json(tmp_path, capsys):
    assert main(["fabric", str(tmp_path)]) == 2
    assert "a directory, not a regular file" in capsys.readouterr().err
    assert main(["fabric", str(LOGS / "pxn-ib-gdrdma.log"), "--format", "json"]) == 0
    (f,) = json.loads(capsys.readouterr().out)["files"]
    assert (f["inter_node"], f["intra_node"], f["facts"]["communicators"][0]["links"][0]["pxn"]) == \
        ("rdma-gdr", "p2p", True)
