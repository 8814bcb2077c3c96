"""The CLI's vocabulary: the names its arguments may take (registries, manifest fields, workload options), so that
`repro.cli` reads argument choices from one pipeline module instead of importing the stages' registries.

Each CLI module's choices live in a section of their own below (one engineer per section; add, do not reorder).
"""

from __future__ import annotations

# -- repro.cli.bench_cmds ------------------------------------------------------------------------------------------

def bench_axes() -> dict[str, tuple[tuple[str, ...], str]]:
    """{'runtime' | 'launcher' | 'scheduler' | 'workload': (its registered names, their one-line description)}."""
    from repro.launch.launchers import LAUNCHERS
    from repro.launch.runtimes import RUNTIMES
    from repro.launch.schedulers import SCHEDULERS
    from repro.launch.workloads import WORKLOADS

    axes = {"runtime": RUNTIMES, "launcher": LAUNCHERS, "scheduler": SCHEDULERS, "workload": WORKLOADS}
    return {axis: (registry.names(), registry.describe()) for axis, registry in axes.items()}


def shown(value: object) -> str:
    """A setting's value as a flag takes it: booleans are on and off."""
    return {True: "on", False: "off"}[value] if isinstance(value, bool) else str(value)


def setting_default(setting: str, field: str) -> str:
    """' (default: ...)' for a common setting: the stack's benchmark field for throughput workloads (the schema's
    default unless the stack sets one), each other workload's own default."""
    from repro.launch.workloads import WORKLOADS
    from repro.manifest.schema import Benchmark
    from repro.workloads.catalog import spec_of

    derived = {"fp16": "fp32", "data_format": "NCHW on GPU, NHWC on CPU"}  # what the field's default means
    base = derived.get(field, Benchmark.model_fields[field].default)
    others = []
    for name in WORKLOADS.names():
        spec = spec_of(name)  # the spec alone: not the launcher's module
        option = spec.by_setting(setting)
        if spec.kind != "throughput" and option is not None and option.bench:
            others.append(f"{name}: {shown(option.default) if option.default is not None else 'its own'}")
    return f" (default: the stack's benchmark.{field}, {shown(base)} unless it sets one" + (
        f"; {'; '.join(others)}" if others else "") + ")"


def workload_flags() -> dict[str, tuple]:
    """{workload: its own options (name, flag, help, default), each option under the first workload declaring it}."""
    from repro.launch.workloads import WORKLOADS
    from repro.workloads.catalog import spec_of

    seen: set[str] = set()
    out: dict[str, tuple] = {}
    for name in WORKLOADS.names():
        options = tuple(o for o in spec_of(name).extra_options if o.name not in seen)
        seen.update(o.name for o in options)
        if options:
            out[name] = options
    return out


def scheduler_flags() -> dict[str, tuple]:
    """{scheduler: its site options (variable, flag, help, metavar, choices, repeat)} for those that have any."""
    from repro.launch.schedulers import SCHEDULERS, options_of

    found = {name: options_of(name) for name in SCHEDULERS.names()}
    return {name: options for name, options in found.items() if options}

# -- repro.cli.hosts_cmds, image_cmds, manifest_cmds: prepare, up, render, archive, restore, validate, show, ... --

def prepare_runtimes() -> tuple[str, ...]:
    """The runtimes `repro prepare --runtime` checks readiness for: every registered runtime."""
    from repro.launch.runtimes import RUNTIMES

    return RUNTIMES.names()

# -- repro/cli/results_cmds.py, import_cmds.py, capture_cmds.py (results *, import, capture) ------------------

def result_kinds() -> list[str]:
    """The comparison kinds a stored run may be of (`repro results table --kind`)."""
    from repro.compare.kind import KINDS

    return list(KINDS.names())


def capture_frameworks() -> list[str]:
    """The frameworks `repro capture --framework` may name: those a stack manifest accepts."""
    from repro.manifest.frameworks import FRAMEWORKS

    return list(FRAMEWORKS.names())
