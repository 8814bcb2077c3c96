"""`repro compare` sets a PyTorch stack's all-reduce (torch_allreduce) against a Horovod stack's (allreduce): both
produce the same result shape, so they meet in the same comparison kind, per backend, dtype and size."""

from __future__ import annotations

import numpy as np
import pytest

from repro.compare import compare
from repro.results import stats
from repro.results.record import RunRecord, Settings, StackRef, new_id
from repro.workloads import allreduce


def _record(workload: str, stack: str, latency: float, seed: int, *, backend: str | None,
            extra: dict) -> RunRecord:
    rng = np.random.default_rng(seed)
    rows = []
    for elements in (1000, 1000000):
        lats = [latency * elements / 1000 * (1 + 0.01 * float(x)) for x in rng.standard_normal(20)]
        row = allreduce.summarize("fp32", elements, lats, 2)  # the function both workloads build their rows with
        row.update(wrong=0, raw=None, raw_wrong=None)
        rows.append(row)
    return RunRecord(id=new_id(), created="2026-11-27T00:00:00+00:00", status="ok",
                     stack=StackRef(name=stack, hash=stack * 3),
                     settings=Settings(workload=workload, workers=2, hosts=1, backend=backend, extra=extra),
                     metrics={"backend": "gloo", "results": rows})


def test_a_pytorch_all_reduce_is_compared_with_a_horovod_one_per_size():
    horovod = [_record("allreduce", "hvd", 1e-4, i, backend="gloo", extra={"iterations": 50}) for i in range(3)]
    torch = [_record("torch_allreduce", "torch", 0.5e-4, 10 + i, backend=None,
                     extra={"dist_backend": "gloo", "iterations": 100}) for i in range(3)]
    result = compare(horovod, torch)
    assert [(r.dtype, r.elements) for r in result.allreduce] == [("fp32", 1000), ("fp32", 1000000)]
    for row in result.allreduce:
        assert (row.old.backend, row.new.backend) == ("gloo", "gloo")
        assert row.bandwidth.verdict == stats.FASTER
        assert row.bandwidth.ratio == pytest.approx(2.0, rel=0.03)
    assert not result.throughput


def test_the_bench_summary_tables_torch_runs_by_their_kind_not_their_name():
    from repro.compare.kinds.allreduce.sweep import allreduce_sweeps
    from repro.compare.kinds.tta.sweep import tta_document

    torch = [_record("torch_allreduce", "torch", 0.5e-4, i, backend=None, extra={"dist_backend": "gloo"})
             for i in range(2)]
    (sweep,) = allreduce_sweeps(torch)
    assert sweep.runs == 2 and [s.elements for s in sweep.sizes] == [1000, 1000000]
    tta = RunRecord(id=new_id(), created="2026-11-27T00:00:00+00:00", status="ok",
                    stack=StackRef(name="t", hash="t" * 3),
                    settings=Settings(workload="torch_tta", model="resnet20", batch_per_worker=32, workers=2),
                    metrics={"target": 0.95, "reached": True, "time_to_accuracy_s": 10.0, "epochs": 4,
                             "final_top1": 0.96, "final_top5": 1.0, "compute_s": 7.0, "communication_s": 2.5})
    (table,) = tta_document([tta]).tables
    assert len(table.cells) == 1 and "10" in " ".join(table.cells[0])


def test_the_all_reduce_table_says_which_all_reduce_a_torch_run_timed():
    from repro.compare.kinds.allreduce.sweep import allreduce_document

    torch = _record("torch_allreduce", "torch", 0.5e-4, 1, backend=None, extra={"dist_backend": "gloo"})
    torch = torch.model_copy(update={"metrics": {**torch.metrics, "path": "torch.distributed.all_reduce (gloo, cpu "
                                                 "tensors)"}})
    horovod = _record("allreduce", "hvd", 1e-4, 2, backend="gloo", extra={})
    text = " ".join(" ".join(t.caption) for t in allreduce_document([torch]).tables)
    assert "torch.distributed.all_reduce (gloo, cpu tensors)" in text and "Horovod's allreduce" not in text
    text = " ".join(" ".join(t.caption) for t in allreduce_document([horovod]).tables)
    assert "hvd: Horovod's allreduce, gloo controller" in text
