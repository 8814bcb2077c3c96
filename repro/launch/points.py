"""Sweep points (pure): the grid of settings `repro bench` measures, weak or strong scaling.

Weak scaling keeps the per-worker batch fixed as workers grow; strong scaling keeps the global batch
fixed and divides it among the workers (seed 002: "BS (per processor) = [16, 8, 4] for [2, 4, 8]").
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from repro.errors import InputError
from repro.manifest.schema import Stack
from repro.results.record import Settings

WORKLOADS = ("cnn", "tf_cnn_benchmarks", "allreduce", "tta")


def point_key(point: Settings) -> str:
    """Stable identity of a sweep point (for --resume): a digest of its settings, hosts left out
    (they follow from the placement)."""
    text = json.dumps(point.model_dump(mode="json", exclude={"hosts"}), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SweepSpec:
    """What the user asked for; values left None come from the stack's benchmark defaults."""

    workload: str | None = None
    workers: tuple[int, ...] = (1,)
    models: tuple[str, ...] = ()
    batch_sizes: tuple[int, ...] = ()
    precisions: tuple[str, ...] = ()
    xla: tuple[bool, ...] = ()
    data_format: str | None = None
    data: str = "synthetic"
    scaling: Literal["weak", "strong"] = "weak"
    threads: tuple[int | None, ...] = (None,)
    warmup_steps: int | None = None
    steps: int | None = None
    backends: tuple[str, ...] = ("mpi",)
    extra: dict[str, Any] = field(default_factory=dict)


def expand(spec: SweepSpec, stack: Stack) -> list[Settings]:
    """Every point of the sweep, in the order they run (smallest worker count first).

    A point is the Settings its records will carry; `hosts` is filled in when it is placed."""
    bench = stack.benchmark
    workload = spec.workload or bench.workload
    if workload not in WORKLOADS:
        raise InputError(f"unknown workload '{workload}': expected one of {', '.join(WORKLOADS)}")
    if any(w < 1 for w in spec.workers):
        raise InputError("--workers takes whole numbers >= 1")
    models = spec.models or ((bench.model,) if workload in ("cnn", "tf_cnn_benchmarks") else (None,))
    batches = spec.batch_sizes or (bench.batch_size,)
    precisions = spec.precisions or (("fp16" if bench.fp16 else "fp32"),)
    xlas = spec.xla or (bench.xla,)
    data_format = spec.data_format or bench.data_format
    warmup = spec.warmup_steps if spec.warmup_steps is not None else bench.warmup_steps
    steps = spec.steps if spec.steps is not None else bench.steps
    out: list[Settings] = []
    grid = itertools.product(models, batches, precisions, xlas, spec.threads, spec.backends, sorted(set(spec.workers)))
    for model, batch, precision, xla, threads, backend, workers in grid:
        if workload in ("allreduce", "tta"):
            per, total = (batch, batch * workers) if workload == "tta" else (None, None)
        elif spec.scaling == "strong":
            if batch % workers:
                raise InputError(f"strong scaling divides the global batch {batch} among {workers} workers: "
                                 "it must divide evenly", hint="choose a global batch that every worker count divides")
            per, total = batch // workers, batch
        else:
            per, total = batch, batch * workers
        out.append(Settings(
            workload=workload, workers=workers, model=model, batch_per_worker=per, global_batch=total,
            precision=precision, xla=xla, data_format=data_format if workload in ("cnn", "tf_cnn_benchmarks") else None,
            data=spec.data, scaling=spec.scaling, threads=threads, warmup_steps=warmup, steps=steps,
            backend=backend, extra=dict(spec.extra),
        ))
    return sorted(out, key=lambda p: (p.workers, p.backend, str(p.model), p.batch_per_worker or 0))


def sweep_id(stack_hash: str, inventory_key: str, points: list[Settings], repeats: int) -> str:
    """Deterministic id of a sweep: the same request on the same hosts resumes into the same id."""
    text = json.dumps([stack_hash, inventory_key, sorted(point_key(p) for p in points), repeats])
    return "sw-" + hashlib.sha256(text.encode()).hexdigest()[:12]
