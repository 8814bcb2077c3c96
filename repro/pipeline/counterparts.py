"""Interleaved stacks of different frameworks (a TensorFlow stack against its PyTorch counterpart): what each stack
runs of the one sweep asked for (pure).

A workload family declares one program per framework in its spec (repro.workloads.catalog.counterpart: cnn is
TensorFlow's program and PyTorch's, torch_cnn is its PyTorch program's older name), so each stack runs its own
framework's program of the chosen workload (or of its own benchmark.workload, where none is chosen), with the
same model, batch and workers. A setting only one framework's program takes goes to the stacks whose program
takes it: Horovod's controller (--backends) to the TensorFlow stacks, --dist-backend to the PyTorch ones.
Same-framework interleaves are left exactly as asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from repro.errors import InputError
from repro.launch.points import SweepSpec
from repro.launch.workloads import Workload, program
from repro.manifest import LoadedStack
from repro.manifest.frameworks import FRAMEWORKS
from repro.results.record import Settings
from repro.workloads.catalog import counterpart, family_of, spec_of

# what two counterpart points must share beyond their family (workers are compared for every interleave)
SAME = ("model", "batch_per_worker", "global_batch")


def mixed(stacks: Sequence[LoadedStack]) -> bool:
    """Whether the stacks pin different frameworks."""
    return len({one.stack.framework for one in stacks}) > 1


def per_stack(spec: SweepSpec, stacks: Sequence[LoadedStack]) -> list[SweepSpec]:
    """The sweep each stack runs: `spec` itself for stacks of one framework; across frameworks, each stack's
    counterpart of the chosen workload, given the settings its program takes."""
    if not mixed(stacks):
        return [spec] * len(stacks)
    names = [counterpart(spec.workload or one.stack.benchmark.workload, one.stack.framework) or
             (spec.workload or one.stack.benchmark.workload) for one in stacks]  # none: expand() says why
    programs = [_program(name, one) for name, one in zip(names, stacks, strict=True)]
    horovod = [p is not None and _uses_horovod(p) for p in programs]
    taken = [{o.name for o in p.spec.extra_options} if p is not None else set() for p in programs]
    anyone = set().union(*taken)
    out = []
    for name, uses, takes in zip(names, horovod, taken, strict=True):
        # a flag of another framework's program only (--dist-backend on a TensorFlow stack) is not this stack's
        extra = {k: v for k, v in spec.extra.items() if k in takes or k not in anyone}
        given = spec.backends_given and (uses or not any(horovod))
        out.append(replace(spec, workload=name, extra=extra, backends_given=given,
                           backends=spec.backends if uses or given else ("mpi",)))
    return out


def check_same(stacks: Sequence[LoadedStack], points: Sequence[Sequence[Settings]]) -> None:
    """InputError unless every stack sweeps the same points: the same workload family and worker counts, in
    order, and across frameworks the same model and batch (counterparts measure the same training job)."""
    fields = ("workers", *SAME) if mixed(stacks) else ("workers",)
    shapes = [tuple((family_of(p.workload), *(getattr(p, f) for f in fields)) for p in one) for one in points]
    if len(set(shapes)) <= 1:
        return
    if mixed(stacks):
        said = "; ".join(f"{one.stack.name} ({one.stack.framework}): " + ", ".join(
            f"{p.workload} " + " ".join(f"{f}={getattr(p, f)}" for f in fields) for p in ps)
            for one, ps in zip(stacks, points, strict=True))
        raise InputError("interleaved stacks of different frameworks must run counterpart points: the same workload "
                         f"family, model, batch and workers ({said})",
                         hint="give the workload and its settings explicitly, e.g. --workload cnn --model resnet20 "
                         "--batch-size 32")
    raise InputError("interleaved stacks must sweep the same points (workload and worker counts, in order)",
                     hint="give every stack the same --workload/--model/--batch-size/... flags explicitly")


def _program(name: str, loaded: LoadedStack) -> Workload | None:
    try:
        spec = spec_of(name)
    except KeyError:  # a workload no spec describes: expand() names it
        return None
    if (spec.frameworks and loaded.stack.framework not in spec.frameworks):
        return None
    return program(name, loaded.stack.framework)


def _uses_horovod(workload: Workload) -> bool:
    """Whether the program's collectives go through Horovod (its controllers are what --backends chooses)."""
    framework = workload.spec.framework
    return framework is not None and FRAMEWORKS.get(framework).comm_library == "horovod"
