"""Workloads as the launcher sees them: a spec (declared next to the program, in repro.workloads), the
command one worker runs for a point, and the parser of what the workload printed.

    @WORKLOADS.register("cnn")          # built in: the names in repro.workloads.catalog.BUILTIN
    class Cnn(ReproWorkload): spec = cnn.SPEC

Adding a built-in workload is a program with its SPEC in repro/workloads and one line in
repro.workloads.catalog.BUILTIN (the manifest schema and this registry read that list); a program repro
does not ship is a class with `spec`, `command` and `parse`, registered here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from repro.registry import Registry
from repro.workloads import catalog, framing
from repro.workloads.spec import WorkloadSpec

if TYPE_CHECKING:
    from repro.results.record import Settings

RESULT_MARKER = "REPRO_RESULT "
RESULT_FORMAT = "repro.workload/1"


class Workload(Protocol):
    """What runs in every worker process of a point, and how to read what it printed."""

    spec: WorkloadSpec

    def command(self, point: Settings, python: str, *, data: str | None = None) -> list[str]:
        """The argv one worker runs."""
        ...

    def parse(self, stdout: str) -> dict[str, Any] | None:
        """The result document (repro.workload/1: settings, world, software, ranks, metrics) or None."""
        ...


WORKLOADS: Registry[Workload] = Registry("workload", on_add=lambda workload: catalog.register(workload.spec))


def program(name: str, framework: str | None) -> Workload:
    """Workload `name` as it runs on a stack of `framework`: a family's program for that framework, else the
    workload itself (InputError-free: the sweep refused a framework the workload lacks when it was planned)."""
    workload = WORKLOADS.get(name)
    if workload.spec.programs and isinstance(workload, ReproWorkload):
        return replace(workload, spec=workload.spec.program(framework))
    return workload


def find_result(stdout: str) -> dict[str, Any] | None:
    """The `REPRO_RESULT <json>` document a repro workload's rank 0 printed (whole or in parts), or None."""
    for line in reversed(framing.joined(stdout).splitlines()):
        line = line.strip()
        if line.startswith(RESULT_MARKER):
            try:
                data = json.loads(line[len(RESULT_MARKER):])
            except ValueError:
                return None
            if isinstance(data, dict) and data.get("format") == RESULT_FORMAT:
                return data
    return None


def option_values(spec: WorkloadSpec, point: Settings, *, data: str | None = None) -> list[tuple[str, Any]]:
    """(option, value) pairs the point gives the workload: its common settings and its extra options."""
    values: list[tuple[str, Any]] = []
    for o in spec.options:
        if not o.bench:
            continue
        if o.setting is not None:
            value = data if (o.setting == "data" and data is not None) else getattr(point, o.setting)
        else:
            value = point.extra.get(o.name)
        if value is not None:
            values.append((o.name, value))
    return values


@dataclass(frozen=True)
class ReproWorkload:
    """A workload repro ships: `python -m <spec.module>` with flags from the spec; one REPRO_RESULT line."""

    spec: WorkloadSpec

    def command(self, point: Settings, python: str, *, data: str | None = None) -> list[str]:
        return [python, "-m", str(self.spec.module), *self.spec.argv(option_values(self.spec, point, data=data))]

    def parse(self, stdout: str) -> dict[str, Any] | None:
        return find_result(stdout)


@dataclass(frozen=True)
class ProbeWorkload(ReproWorkload):
    """The plumbing probe: rank 0's REPRO_RESULT line completed with the other ranks' REPRO_RANK lines."""

    def parse(self, stdout: str) -> dict[str, Any] | None:
        from repro.workloads import probe

        whole = framing.joined(stdout)
        return probe.merge(find_result(whole), whole)


# Built-in workloads (repro.workloads.catalog.BUILTIN) whose launch needs more than ReproWorkload: the probe's
# ranks print their own lines; tf_cnn_benchmarks is not repro's program (launched from its own module).
_ADAPTERS = {"probe": ProbeWorkload}
_OWN_MODULE = {"tf_cnn_benchmarks": "repro.launch.tf_cnn_benchmarks:WORKLOAD"}


def _register_builtin() -> None:
    for name in catalog.BUILTIN:
        spec = catalog.spec_of(name)
        if name in _OWN_MODULE:
            WORKLOADS.lazy(name, _OWN_MODULE[name], help=spec.summary)
        else:
            WORKLOADS.add(name, _ADAPTERS.get(name, ReproWorkload)(spec), help=spec.summary)


_register_builtin()
