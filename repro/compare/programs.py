"""Which implementation of a workload each side ran (pure): a TensorFlow stack and its PyTorch counterpart run the
same workload family (cnn: ResNet-20, batch 32, ...) through two programs, one per framework, so what such a
comparison measures is each stack together with its framework's implementation, not the framework alone."""

from __future__ import annotations

from collections.abc import Sequence

from repro.compare.align import Pair
from repro.manifest.frameworks import FRAMEWORKS
from repro.results.record import RunRecord
from repro.workloads.catalog import family_of, spec_of


def framework_of(record: RunRecord) -> str | None:
    """The framework the record's program ran on: the one its stack pins, else the only one its workload has."""
    pinned = [name for name in FRAMEWORKS.names() if record.stack.manifest.get(name) is not None]
    if len(pinned) == 1:
        return pinned[0]
    try:
        frameworks = spec_of(record.settings.workload).frameworks
    except KeyError:
        return None
    return frameworks[0] if len(frameworks) == 1 else None


def program_of(record: RunRecord) -> str | None:
    """The module that ran the record's workload (repro.workloads.torch_cnn), None when not known."""
    framework = framework_of(record)
    try:
        return spec_of(record.settings.workload).program(framework).module
    except KeyError:  # no spec, or none for that framework: an imported log's program
        return None


def implementation_notes(pairs: Sequence[Pair]) -> tuple[str, ...]:
    """One note per workload family whose two sides ran different frameworks' programs."""
    notes: dict[str, str] = {}
    for pair in pairs:
        old, new = pair.old.records[0], pair.new.records[0]
        family = family_of(old.settings.workload)
        frameworks = framework_of(old), framework_of(new)
        if family != family_of(new.settings.workload) or None in frameworks or frameworks[0] == frameworks[1]:
            continue
        modules = program_of(old), program_of(new)
        notes.setdefault(family, (
            f"the two implementations differ: OLD ran {family} as {_title(frameworks[0])}'s program "
            f"({modules[0] or 'not known'}), NEW as {_title(frameworks[1])}'s ({modules[1] or 'not known'}); each "
            "figure measures the stack together with its framework's implementation of the workload (the same "
            "model, batch and workers), not the framework alone"))
    return tuple(notes.values())


def _title(framework: str | None) -> str:
    return FRAMEWORKS.get(framework).title if framework in FRAMEWORKS else str(framework)
