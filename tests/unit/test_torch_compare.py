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
