"""The workloads repro knows, by name: the one list of built-in workloads, and their specs (standard library
only, like every module here).

`BUILTIN` is plain data (name -> the module whose SPEC declares it), so that importing this module imports
no program: the manifest schema takes its workload names from it, the launcher registers each of them, and
a spec is imported only when it is asked for. repro.launch.workloads registers each workload it can launch
here too, so that code which only reads results (compare, reports) knows a workload's kind without
importing the launcher.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: importing the list imports nothing else
    from .spec import WorkloadSpec

# Built-in workloads in the order they are offered (the editor schema's enum, `repro bench --workload`).
BUILTIN: dict[str, str] = {
    "cnn": "repro.workloads.cnn",
    "tf_cnn_benchmarks": "repro.workloads.tf_cnn_benchmarks",
    "allreduce": "repro.workloads.allreduce",
    "tta": "repro.workloads.tta",
    "torch_cnn": "repro.workloads.torch_cnn",
    "torch_allreduce": "repro.workloads.torch_allreduce",
    "torch_tta": "repro.workloads.torch_tta",
    "lm": "repro.workloads.lm",
    "probe": "repro.workloads.probe",
}

# Workloads of imported logs that no spec describes, and how their records compare: the transformer-training
# readers of repro.results.importers (megatron, torchtitan, hf_trainer, deepspeed) give tokens/sec or samples/sec
# with TFLOP/s and MFU as stated, the lm kind's figures. Plain data here, as BUILTIN is, so that compare and the
# listings know the kind without importing the importers (tests/unit/test_import_lm_compare.py checks the list
# against the readers).
IMPORTED_KINDS: dict[str, str] = {"megatron": "lm", "torchtitan": "lm", "hf_trainer": "lm", "deepspeed": "lm",
                                 "dllogger_lm": "lm"}

SPECS: dict[str, WorkloadSpec] = {}


def register(spec: WorkloadSpec) -> WorkloadSpec:
    """Make `spec` known by its name (the same spec may be registered again)."""
    SPECS[spec.name] = spec
    return spec


def kind_of(workload: str) -> str:
    """How results of `workload` compare: its spec's kind; an imported log's (IMPORTED_KINDS); throughput for
    other workloads no spec describes (imported logs of other programs measure items per second)."""
    spec = _find(workload)
    return spec.kind if spec else IMPORTED_KINDS.get(workload, "throughput")


def spec_of(workload: str) -> WorkloadSpec:
    """The spec of a known workload (KeyError otherwise)."""
    spec = _find(workload)
    if spec is None:
        raise KeyError(workload)
    return spec


def family_of(workload: str) -> str:
    """The family a workload belongs to (its spec's `family`: torch_cnn is cnn's PyTorch program); its own name
    for a workload that is no other's alias, or that no spec describes."""
    spec = _find(workload)
    return (spec.family or spec.name) if spec else workload


def counterpart(workload: str, framework: str | None) -> str | None:
    """The workload of `workload`'s family that runs on `framework`: itself where it does (or needs no framework),
    else the family's own program for it (cnn for torch_cnn on TensorFlow), else another member's; None when
    the family has none for that framework (tf_cnn_benchmarks on PyTorch)."""
    spec = _find(workload)
    if spec is None or not spec.frameworks or framework in spec.frameworks:
        return workload
    family = family_of(workload)
    for name in (family, *BUILTIN, *SPECS):
        other = _find(name)
        if other is not None and family_of(name) == family and framework in other.frameworks:
            return name
    return None


def builtin_specs() -> tuple[WorkloadSpec, ...]:
    """The specs of every built-in workload, in BUILTIN's order (imports each program's module)."""
    return tuple(spec_of(name) for name in BUILTIN)


def all_models() -> tuple[str, ...]:
    """Every model a built-in workload knows, sorted."""
    return tuple(sorted({m for spec in builtin_specs() for m in spec.models}))


def _find(workload: str) -> WorkloadSpec | None:
    # a built-in spec is imported on first use; a registered one (a plug-in workload) is already here
    if workload not in SPECS and workload in BUILTIN:
        SPECS[workload] = import_module(BUILTIN[workload]).SPEC
    return SPECS.get(workload)
