"""Sweep points (pure): the grid of settings `repro bench` measures, weak or strong scaling.

Weak scaling keeps the per-worker batch fixed as workers grow; strong scaling keeps the global batch
fixed and divides it among the workers (seed 002: "BS (per processor) = [16, 8, 4] for [2, 4, 8]").

What a point holds comes from its workload's spec: a setting the workload does not take stays None
(never a default that did not reach the program), and a value the user asked for that the workload
does not take, or that its spec refuses, is an input error before anything starts.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from repro.errors import InputError
from repro.launch.workloads import WORKLOADS, Workload, program
from repro.manifest.frameworks import FRAMEWORKS
from repro.manifest.schema import Stack
from repro.results.record import Comm, Settings
from repro.workloads.spec import Option

BACKENDS = ("mpi", "gloo")  # Horovod's controllers
# what the user typed for each common setting, for messages
FLAGS = {"model": "--model", "batch_per_worker": "--batch-size", "precision": "--precision", "xla": "--xla",
         "data_format": "--data-format", "data": "--data", "warmup_steps": "--warmup-steps", "steps": "--steps",
         "threads": "--threads"}


def point_key(point: Settings) -> str:
    """Stable identity of a sweep point (for --resume): a digest of its settings, hosts left out
    (they follow from the placement)."""
    # in the words of schema 3 (Settings.shown): sweeps stored before schema 4 resume into the same points
    text = json.dumps({k: v for k, v in point.shown().items() if k != "hosts"}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SweepSpec:
    """What the user asked for; values left empty come from the stack's benchmark defaults (where they apply
    to the workload) or from the workload's own defaults."""

    workload: str | None = None
    workers: tuple[int, ...] = (1,)
    models: tuple[str, ...] = ()
    batch_sizes: tuple[int, ...] = ()
    precisions: tuple[str, ...] = ()
    xla: tuple[bool, ...] = ()
    data_format: str | None = None
    data: str | None = None
    scaling: Literal["weak", "strong"] = "weak"
    threads: tuple[int | None, ...] = (None,)
    warmup_steps: int | None = None
    steps: int | None = None
    backends: tuple[str, ...] = ("mpi",)
    backends_given: bool = False  # --backends was on the command line (a PyTorch workload refuses it)
    extra: dict[str, Any] = field(default_factory=dict)


def _given(spec: SweepSpec) -> dict[str, tuple[Any, ...]]:
    """The common settings the user set, each as the tuple of values to sweep."""
    one = {"data_format": spec.data_format, "data": spec.data, "warmup_steps": spec.warmup_steps,
           "steps": spec.steps}
    out: dict[str, tuple[Any, ...]] = {k: (v,) for k, v in one.items() if v is not None}
    many = {"model": spec.models, "batch_per_worker": spec.batch_sizes, "precision": spec.precisions,
            "xla": spec.xla, "threads": tuple(t for t in spec.threads if t is not None)}
    out.update({k: tuple(v) for k, v in many.items() if v})
    return out


def _checked(option: Option, values: tuple[Any, ...]) -> tuple[Any, ...]:
    try:
        return tuple(option.check(v) for v in values)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _stack_defaults(stack: Stack, workload: Workload) -> dict[str, Any]:
    """The stack's benchmark defaults: for the workload it names, and for every throughput workload (a CNN stack's
    resnet50 reaches torch_cnn, not lm; an lm stack's tiny reaches lm, and a CNN its field defaults)."""
    b = stack.benchmark
    if workload.spec.name != b.workload:
        if workload.spec.kind != "throughput":
            return {}
        if WORKLOADS.get(b.workload).spec.kind != "throughput":
            b = type(b)()  # the field defaults: another kind's model (lm's tiny) means nothing to a CNN
    precision = b.precision or ("fp16" if b.fp16 else "fp32")
    return {"model": b.model, "batch_per_worker": b.batch_size, "precision": precision,
            "xla": b.xla, "data_format": b.data_format, "warmup_steps": b.warmup_steps, "steps": b.steps}


def _program(name: str, stack: Stack) -> Workload:
    """Workload `name` as it runs on the stack: a family's program for the stack's framework; InputError (one line)
    when it has none for it."""
    frameworks = WORKLOADS.get(name).spec.frameworks
    if frameworks and stack.framework not in frameworks:
        fits = sorted(n for n in WORKLOADS.names() if not WORKLOADS.get(n).spec.frameworks
                      or stack.framework in WORKLOADS.get(n).spec.frameworks)
        raise InputError(f"workload {name} runs on {' or '.join(frameworks)}, but stack {stack.name} pins "
                         f"{stack.framework}", hint=f"with this stack use --workload {' or '.join(fits)}, or a stack "
                         f"that pins {' or '.join(frameworks)}")
    return program(name, stack.framework)


def resolve(spec: SweepSpec, stack: Stack) -> tuple[Workload, dict[str, tuple[Any, ...]], dict[str, Any]]:
    """The workload, the values of each common setting it takes, and its extra options; InputError for any
    value it does not take or refuses."""
    name = spec.workload or stack.benchmark.workload
    workload = _program(name, stack)
    given = _given(spec)
    takes = {o.setting: o for o in workload.spec.options if o.setting and o.bench}
    refused = [FLAGS[k] for k in given if k not in takes]
    if refused:
        raise InputError(f"workload {name} takes no {', '.join(refused)}",
                         hint=f"{name} takes: {', '.join(FLAGS[k] for k in takes) or 'no common settings'}"
                         + (f"; and {', '.join(o.flag for o in workload.spec.extra_options)}"
                            if workload.spec.extra_options else ""))
    extra_options = {o.name: o for o in workload.spec.extra_options}
    unknown = [k for k in spec.extra if k not in extra_options]
    if unknown:
        flags = ", ".join("--" + k.replace("_", "-") for k in unknown)
        raise InputError(f"workload {name} takes no {flags}",
                         hint=f"{name} takes: {', '.join(o.flag for o in extra_options.values()) or 'none'}")
    extra = {k: _checked(extra_options[k], (v,))[0] for k, v in spec.extra.items()}
    defaults = _stack_defaults(stack, workload)
    values: dict[str, tuple[Any, ...]] = {}
    for setting, option in takes.items():
        if setting in given:
            values[setting] = _checked(option, given[setting])
        elif defaults.get(setting) is not None:
            values[setting] = (defaults[setting],)
        else:
            values[setting] = (None,)  # the program's own default (recorded from its report)
    if "data" in takes and values["data"] == (None,):
        values["data"] = ("synthetic",)
    return workload, values, extra


def expand(spec: SweepSpec, stack: Stack) -> list[Settings]:
    """Every point of the sweep, in the order they run (smallest worker count first).

    A point is the Settings its records will carry; `hosts` is filled in when it is placed."""
    if any(w < 1 for w in spec.workers):
        raise InputError("--workers takes whole numbers >= 1")
    bad = [b for b in spec.backends if b not in BACKENDS]
    if bad or not spec.backends:
        raise InputError(f"--backends: expected {' or '.join(BACKENDS)}, found {', '.join(bad) or 'nothing'}")
    workload, values, extra = resolve(spec, stack)
    per_worker = workload.spec.batch == "per_worker"
    one = {k: v[0] for k, v in values.items() if k not in ("model", "batch_per_worker", "precision", "xla",
                                                           "threads")}
    out: list[Settings] = []
    # Horovod's controllers; a workload of a framework with its own library has none (its backend is its option)
    framework = FRAMEWORKS.get(workload.spec.framework) if workload.spec.framework else None
    own_comm = framework is not None and framework.comm_library != "horovod"
    if own_comm and spec.backends_given:
        raise InputError(f"--backends {','.join(spec.backends)}: chooses Horovod's controller, which the "
                         f"{framework.title} workload {workload.spec.name} does not use",
                         hint=f"choose its {framework.comm_library} backend with --dist-backend "
                         f"{', '.join(framework.backends[:-1])} or {framework.backends[-1]}")
    controllers: tuple[str | None, ...] = spec.backends if not own_comm else (None,)
    # the framework's own library: the backend the point's option asks for, `auto` by the framework's rule
    comm = None
    if own_comm:
        asked = str(extra.get("dist_backend") or "auto")
        comm = Comm(library=framework.comm_library,
                    backend=framework.auto_backend(stack.gpu) if asked == "auto" else asked)
    grid = itertools.product(values.get("model", (None,)), values.get("batch_per_worker", (None,)),
                             values.get("precision", (None,)), values.get("xla", (None,)),
                             values.get("threads", (None,)), controllers, sorted(set(spec.workers)))
    for model, batch, precision, xla, threads, backend, workers in grid:
        per, total = batch, (batch * workers if batch is not None and per_worker else None)
        if per_worker and batch is not None and spec.scaling == "strong":
            if batch % workers:
                raise InputError(f"strong scaling divides the global batch {batch} among {workers} workers: "
                                 "it must divide evenly", hint="choose a global batch that every worker count divides")
            per, total = batch // workers, batch
        out.append(Settings(
            workload=workload.spec.name, workers=workers, model=model, batch_per_worker=per, global_batch=total,
            precision=precision, xla=xla, data_format=one.get("data_format"), data=one.get("data"),
            scaling=spec.scaling if per_worker else None, threads=threads, warmup_steps=one.get("warmup_steps"),
            steps=one.get("steps"), backend=backend, comm=comm, extra=dict(extra),
        ))
    return sorted(out, key=lambda p: (p.workers, p.backend or "", str(p.model), p.batch_per_worker or 0))


def sweep_id(stack_hash: str, inventory_key: str, points: list[Settings], repeats: int) -> str:
    """Deterministic id of a sweep: the same request on the same hosts resumes into the same id."""
    text = json.dumps([stack_hash, inventory_key, sorted(point_key(p) for p in points), repeats])
    return "sw-" + hashlib.sha256(text.encode()).hexdigest()[:12]
