"""The specs of the workloads repro knows, by name (standard library only, like every module here).

repro.launch.workloads registers each workload it can launch here too, so that code which only reads
results (compare, reports) knows a workload's kind without importing the launcher.
"""

from __future__ import annotations

import functools

from .spec import WorkloadSpec

SPECS: dict[str, WorkloadSpec] = {}


def register(spec: WorkloadSpec) -> WorkloadSpec:
    """Make `spec` known by its name (the same spec may be registered again)."""
    SPECS[spec.name] = spec
    return spec


def kind_of(workload: str) -> str:
    """How results of `workload` compare: its spec's kind; throughput for workloads no spec describes
    (imported logs of other programs measure items per second)."""
    _builtin()
    spec = SPECS.get(workload)
    return spec.kind if spec else "throughput"


@functools.cache  # once per process: kind_of runs once per record a store command reads
def _builtin() -> None:
    from . import allreduce, cnn, probe, tf_cnn_benchmarks, torch_allreduce, torch_cnn, torch_tta, tta

    for module in (cnn, allreduce, tta, tf_cnn_benchmarks, torch_cnn, torch_allreduce, torch_tta, probe):
        SPECS.setdefault(module.SPEC.name, module.SPEC)


def spec_of(workload: str) -> WorkloadSpec:
    """The spec of a known workload (KeyError otherwise)."""
    _builtin()
    return SPECS[workload]
