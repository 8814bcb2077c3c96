"""What an all-reduce run states (repro.workloads.allreduce, torch_allreduce, imported nccl-tests logs), as a typed
model: per message size the latencies of Horovod's path (the row) and of the raw MPI_Allreduce (its `raw`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

from repro.compare.model import KindMetrics, Number, Text, dicts


def _numbers(value: Any) -> list[Any]:
    return [v for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)] \
        if isinstance(value, (list, tuple)) else []


class PathResult(KindMetrics):
    """One path at one message size of one run: its per-iteration latencies (seconds) or the figures it kept."""

    bytes: int | None = None
    dtype: Annotated[str, BeforeValidator(str)] = "?"
    elements: Annotated[int, BeforeValidator(lambda v: int(v or 0))] = 0
    latencies: Annotated[tuple[float, ...], BeforeValidator(_numbers)] = ()
    latency_mean: Number = None
    latency_median: Number = None


class SizeResult(PathResult):
    """One message size of one run: Horovod's path, the count of wrong elements, and the raw path."""

    bytes: int
    wrong: Number = None
    raw_wrong: Number = None
    raw: Annotated[PathResult | None, BeforeValidator(lambda v: v if isinstance(v, dict) else None)] = None


class AllreduceMetrics(KindMetrics):
    """An all-reduce run's figures."""

    backend: Text = None  # Horovod's controller, or the framework's backend (nccl, gloo)
    raw_backend: Text = None
    raw_missing: Text = None  # why the raw path was not measured
    bus_factor: Number = None  # 2(n-1)/n as the workload computed it
    path: Text = None  # a framework's own all-reduce (torch.distributed.all_reduce)
    results: Annotated[tuple[SizeResult, ...], BeforeValidator(lambda v: [r for r in dicts(v) if "bytes" in r])] = ()
