"""`repro compare` says why: runs that differ only in the path NCCL took (real excerpts, tests/data/logs/nccl)."""

from __future__ import annotations

import json
from pathlib import Path

from repro.cli import main
from repro.compare import Options, compare
from repro.results.nccl import parse
from repro.results.record import RankResult, RunRecord, Settings, StackRef, new_id
from repro.results.store import Store

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs" / "nccl"


def fabric(name: str):
    return parse((LOGS / name).read_text())


def run(stack: str, log: str | None, *, step: float = 0.1, seed: int = 0, nccl: str | None = None) -> RunRecord:
    steps = [step * (1 + 0.001 * ((i * 7 + seed) % 5)) for i in range(20)]
    return RunRecord(id=new_id(), created="2026-01-01T00:00:00+00:00", status="ok",
                     stack=StackRef(name=stack, hash=stack.ljust(12, "0")[:12],
                                    manifest={"nccl": nccl} if nccl else {}),
                     settings=Settings(workload="cnn", model="resnet50", batch_per_worker=64, workers=2, hosts=2,
                                       global_batch=128),
                     ranks=[RankResult(rank=r, step_times=steps, items_per_step=64) for r in range(2)],
                     fabric=fabric(log) if log else None)


def test_fabric_differed_is_said_beside_the_verdict():
    # OLD: NVIDIA/nccl#707 (NET/IB/GDRDMA); NEW: find_string id 44646908813 (NET/Socket, NCCL 2.4.8)
    old = [run("ib", "nccl-707-ib-gdrdma-busid.log", seed=i) for i in range(3)]
    new = [run("sock", "socket-2.4.8-ring-warn.log", step=0.2, seed=i) for i in range(3)]
    c = compare(old, new, Options())
    assert c.throughput[0].ratio.verdict == "slower"
    (line,) = c.fabric
    assert line.endswith("): OLD NET/IB/GDRDMA on 12 of 12 inter-node connections; NEW NET/Socket on 2 of 2")
    assert line.startswith("fabric differed (") and "workers=2" in line


def test_same_path_or_no_fabric_says_nothing(tmp_path):
    same = compare([run("a", "nccl-707-ib-gdrdma-busid.log")] * 2, [run("b", "nccl-707-ib-gdrdma-busid.log")] * 2)
    assert same.fabric == ()
    none = compare([run("a", None)] * 2, [run("b", None)] * 2)
    assert none.fabric == ()


def test_loaded_nccl_other_than_the_stack_pins_is_said():
    # NVIDIA/nccl#1212's log loaded 2.14.3; the stack pins 2.19.3
    old = [run("a", "nccl-1212-ray-version.log", nccl="2.19.3")] * 2
    new = [run("b", "nccl-1212-ray-version.log", nccl="2.14.3")] * 2
    assert compare(old, new).fabric == ("OLD loaded NCCL 2.14.3+cuda11.8, the stack pins 2.19.3",)


def test_compare_command_prints_fabric_differed(tmp_path, capsys):
    store = Store(tmp_path / "results")
    for r in [run("ib", "nccl-707-ib-gdrdma-busid.log", seed=i) for i in range(2)] + \
             [run("sock", "socket-2.4.8-ring-warn.log", step=0.2, seed=i) for i in range(2)]:
        store.put(r)
    assert main(["compare", "ib", "sock", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert "fabric differed" in out and "NEW NET/Socket on 2 of 2" in out
    assert main(["compare", "ib", "sock", "--store", str(store.root), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fabric"][0].endswith("OLD NET/IB/GDRDMA on 12 of 12 inter-node connections; NEW NET/Socket on 2 of 2")
